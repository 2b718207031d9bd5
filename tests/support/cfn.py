"""CloudFormation offline: load a template, package the app, lint, and render a template for given parameters.

Rendering evaluates the conditions for a set of parameter values, drops what they
switch off and resolves `Fn::If`, so a test can look at the deployment a team
would get (and lint exactly that) without an AWS account.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint as cfn_lint
from cfnlint.decode import decode

from infra import package

ROOT = Path(__file__).resolve().parents[2]
DATA_TEMPLATE = ROOT / "infra" / "data.yaml"
APP_TEMPLATE = ROOT / "infra" / "app.yaml"
REGION = "eu-west-1"


def load(path: Path) -> dict:
    template, matches = decode(str(path))
    if matches:
        raise ValueError(f"{path} does not parse: {matches}")
    return template


@functools.cache
def package_dir() -> Path:
    """Where the prod package (sam.yaml, deployment.zip) is built, once per test process (it takes seconds)."""
    outdir = Path(tempfile.mkdtemp(prefix="events-package-"))
    package_app(outdir)
    return outdir


@functools.cache
def packaged_app() -> dict:
    """The prod package's template, loaded once; callers must not change it."""
    return load(package_dir() / "sam.yaml")


# Set by tests/conftest.py for each test: whether it is marked packaging (the tier that may package).
PACKAGING_MARKED = True


def package_app(outdir: Path, stage: str = "prod") -> dict:
    """What `make package` builds (infra/package.py: chalice package, bytecode, the schema stamp), loaded.

    It needs the functions' runtime (package.RUNTIME): where this machine has none, the test is skipped, its
    reason saying so in the run's summary, rather than packaging for another Python than the functions run."""
    assert PACKAGING_MARKED, "a test that runs `chalice package` is marked packaging (pytest.ini), so make check skips it"
    try:
        return load(package.package(outdir, stage=stage, region=REGION))
    except package.RuntimeMissing as missing:
        pytest.skip(f"NOT PACKAGED, NOT TESTED: {missing}")


def lint(template: dict) -> list[str]:
    """cfn-lint's errors and warnings, as readable lines (informational notes are not counted)."""
    matches = cfn_lint(json.dumps(template), regions=[REGION])
    return [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches if m.rule.id[0] in "EW"]


def _condition(template: dict, value: Any, params: dict) -> bool:
    if isinstance(value, dict) and len(value) == 1:
        (fn, args), = value.items()
        if fn == "Condition":
            return _condition(template, template["Conditions"][args], params)
        if fn == "Fn::Equals":
            a, b = (_value(x, params) for x in args)
            return str(a) == str(b)
        if fn == "Fn::Not":
            return not _condition(template, args[0], params)
        if fn == "Fn::And":
            return all(_condition(template, x, params) for x in args)
        if fn == "Fn::Or":
            return any(_condition(template, x, params) for x in args)
    raise ValueError(f"cannot evaluate condition {value!r}")


def _value(value: Any, params: dict) -> Any:
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in params:
        return params[value["Ref"]]
    return value


def _resolve_ifs(node: Any, truth: dict[str, bool]) -> Any:
    if isinstance(node, dict):
        if set(node) == {"Fn::If"}:
            name, yes, no = node["Fn::If"]
            return _resolve_ifs(yes if truth[name] else no, truth)
        resolved = {k: _resolve_ifs(v, truth) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if not _is_no_value(v)}
    if isinstance(node, list):
        return [v for v in (_resolve_ifs(v, truth) for v in node) if not _is_no_value(v)]
    return node


def _is_no_value(node: Any) -> bool:
    return node == {"Ref": "AWS::NoValue"}


def _mentions(node: Any, name: str) -> bool:
    if isinstance(node, dict):
        if node.get("Ref") == name:
            return True
        sub = node.get("Fn::Sub")
        text = sub if isinstance(sub, str) else (sub[0] if isinstance(sub, list) else "")
        if re.search(r"\$\{" + re.escape(name) + r"\}", text or ""):
            return True
        return any(_mentions(v, name) for v in node.values())
    if isinstance(node, list):
        return any(_mentions(v, name) for v in node)
    return False


def parameter_values(template: dict, overrides: dict | None = None) -> dict:
    values = {name: spec.get("Default") for name, spec in template.get("Parameters", {}).items()}
    values.update(overrides or {})
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise ValueError(f"no value for parameters {missing}")
    return values


def render(template: dict, overrides: dict | None = None) -> dict:
    """The template a deployment with these parameter values gets: its rules held (ValueError naming a rule
    CloudFormation would refuse the values with), conditions applied and removed."""
    params = parameter_values(template, overrides)
    for name, rule in template.get("Rules", {}).items():
        if _condition(template, rule.get("RuleCondition", {"Fn::Equals": [1, 1]}), params):
            for assertion in rule["Assertions"]:
                if not _condition(template, assertion["Assert"], params):
                    raise ValueError(f"rule {name}: {assertion.get('AssertDescription', 'refused')}")
    truth = {name: _condition(template, spec, params) for name, spec in template.get("Conditions", {}).items()}
    out = copy.deepcopy(template)
    out.pop("Conditions", None)
    out.pop("Rules", None)
    for section in ("Resources", "Outputs"):
        kept = {}
        for name, body in out.get(section, {}).items():
            condition = body.pop("Condition", None) if isinstance(body, dict) else None
            if condition is None or truth[condition]:
                kept[name] = body
        out[section] = _resolve_ifs(kept, truth)
    used = {name: spec for name, spec in out.get("Parameters", {}).items() if _mentions([out["Resources"], out["Outputs"]], name)}
    for name, spec in used.items():
        spec["Default"] = params[name]
    out["Parameters"] = used
    return out


def of_type(template: dict, resource_type: str) -> dict[str, dict]:
    return {name: body for name, body in template["Resources"].items() if body["Type"] == resource_type}
