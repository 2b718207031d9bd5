"""checkov finds nothing in either stack, with each paid option off and on; every check skipped is named in
infra/scan.py with its reason, and each skip still matches a finding (so none outlives its cause)."""

import json

import pytest

from infra import scan
from tests.support import cfn
from tests.test_infra_templates import APP_PARAMETERS, CHAT_OPTIONS, COSTLY_DATA_OPTIONS

pytestmark = pytest.mark.packaging

EVERY_APP_OPTION = dict(APP_PARAMETERS, CueChannel="webhook:https://discord.com/api/webhooks/1/x",
                        AnnounceChannel="webhook:https://hooks.slack.com/services/x", AlarmEmail="ops@example.org",
                        CueEmail="gm@example.org", ConsoleUrl="https://console.example.org", JwksFront="on",
                        JwksPath="/.well-known/jwks.json", **{k: v for k, v in CHAT_OPTIONS.items() if k != "CueChannel"})


@pytest.fixture(scope="module")
def deployments(tmp_path_factory):
    """The four templates a team can get: each stack with its options off and on, as JSON files."""
    out = tmp_path_factory.mktemp("scan")
    data, app = cfn.load(cfn.DATA_TEMPLATE), cfn.packaged_app()
    rendered = {
        "data-defaults": cfn.render(data),
        "data-paid-options-on": cfn.render(data, COSTLY_DATA_OPTIONS),
        "app-defaults": cfn.render(app, APP_PARAMETERS),
        "app-every-option-on": cfn.render(app, EVERY_APP_OPTION),
    }
    files = []
    for name, template in rendered.items():
        path = out / f"{name}.json"
        path.write_text(json.dumps(template))
        files.append(path)
    return files


def test_the_scanner_finds_nothing_in_either_stack_with_the_paid_options_off_or_on(deployments):
    findings = scan.scan(deployments)
    assert findings == [], "\n".join(map(str, findings))


def test_every_skipped_check_has_its_reason_and_still_matches_a_finding(deployments):
    for check, reason in scan.SKIPPED.items():
        assert check.startswith("CKV") and len(reason) > 40, check
    unskipped = scan.scan(deployments, skipped={})  # one checkov run (about 20 s): both questions are asked of it
    checks = {finding.check for finding in unskipped}
    assert set(scan.SKIPPED) <= checks, f"skips that no longer match a finding: {set(scan.SKIPPED) - checks}"
    files = {finding.file for finding in unskipped}
    assert {"data-defaults.json", "app-defaults.json"} <= files  # both stacks were scanned
