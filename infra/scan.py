"""The template scanner (checkov) over the deployments a team can get, and every check it skips, each with its reason.

    python -m infra.scan FILE…    (the templates as JSON, rendered for given parameters; tests/test_infra_scan.py
                                   renders both stacks with each paid option off and on)

checkov runs from its own venv (`.venv-scan`, `make scan-env`, requirements-scan.txt):
it pins boto3, botocore, networkx and packaging to versions older than the ones
moto, chalice and cfn-lint need here, so it cannot share the test venv. It runs
offline (`--skip-download`). A check is skipped only here, by id, with the reason
it does not apply to this design; `make test` fails on any other finding, and on a
skip that no longer matches a finding.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKOV = ROOT / ".venv-scan" / "bin" / "checkov"

SKIPPED: dict[str, str] = {
    "CKV_AWS_116": "no dead-letter queue: a failed asynchronous invocation's record goes to a topic (EventInvokeConfig "
                   "OnFailure, which also carries the error: the tick's to its own, a chat press's to the alarm topic), "
                   "CloudFormation's invocation of migrate is never retried and answers CloudFormation itself, and the "
                   "API is invoked synchronously, where a DLQ never receives anything",
    "CKV_AWS_118": "no RDS enhanced monitoring: its agent keeps Aurora Serverless v2 from pausing at 0 ACU and bills "
                   "log ingestion every minute of the month; the alarms read the engine's own metrics",
    "CKV_AWS_120": "no API Gateway cache: a cache cluster bills by the hour (at least $14.60 a month) and the console "
                   "must see a control's effect at once",
    "CKV_AWS_149": "secrets under the AWS-managed key (aws/secretsmanager), not a customer key: a key is $1 a month "
                   "each, and anyone who may read these secrets may use either key",
    "CKV_AWS_158": "log groups encrypted by CloudWatch Logs' own keys, not a customer key ($1 a month and a key "
                   "policy for the logs service); the logs carry no secret",
    "CKV_AWS_162": "no IAM database authentication: the app signs in with a Secrets Manager password (make rotate "
                   "changes it), and IAM auth caps new connections per second and adds a token call to each connect",
    "CKV_AWS_173": "environment variables under Lambda's AWS-managed key: they hold ARNs, URLs and names, never a "
                   "secret (secrets are read from Secrets Manager at run time)",
    "CKV_AWS_26": "topics without server-side encryption: CloudWatch alarms cannot publish to a topic under the "
                  "AWS-managed SNS key, a customer key is $1 a month, and the topics carry cue texts, no secret",
    "CKV_AWS_68": "no WAF on the key set's front (JwksFront): a web ACL bills $5 a month and $1 a rule whether or not "
                  "anything runs, and the front passes only GET and HEAD of the identity provider's public documents, "
                  "forwarding nothing of the caller's",
    "CKV_AWS_86": "no access log on the key set's front (JwksFront): CloudFront's standard log needs an S3 bucket with "
                  "ACLs enabled, and its one caller is the API, whose own log says when a key fetch failed",
    "CKV_AWS_174": "the key set's front (JwksFront) serves on CloudFront's own certificate (*.cloudfront.net, no "
                   "domain to buy), whose viewer TLS policy cannot be set; its one caller, the API's outbound HTTP "
                   "(Python's default context), refuses anything below TLS 1.2 itself",
    "CKV_AWS_73": "no X-Ray on the API: traces bill beyond 100,000 a month; the access log, the EMF metrics and the "
                  "alarms say what an operator needs",
}


@dataclass(frozen=True)
class Finding:
    check: str
    name: str
    file: str
    resource: str

    def __str__(self) -> str:
        return f"{self.check} {self.name}: {self.resource} in {self.file}"


def scan(files: list[Path], skipped: dict[str, str] = SKIPPED) -> list[Finding]:
    """checkov's failed checks over `files` (CloudFormation as JSON), the skipped ones left out."""
    if not CHECKOV.exists():
        raise RuntimeError(f"{CHECKOV} is missing: run `make scan-env` (make test does it)")
    command = [str(CHECKOV), "--framework", "cloudformation", "--output", "json", "--compact", "--quiet",
               "--skip-download", *(arg for f in files for arg in ("--file", str(f)))]
    if skipped:
        command += ["--skip-check", ",".join(sorted(skipped))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)  # noqa: S603 — checkov, fixed arguments
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"checkov failed ({done.returncode}):\n{done.stderr[-3000:]}")
    reports = json.loads(done.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    return [Finding(f["check_id"], f["check_name"], Path(f["file_path"]).name, f["resource"])
            for report in reports if isinstance(report, dict) and "results" in report
            for f in report["results"]["failed_checks"]]


def main(argv: list[str] | None = None) -> int:
    files = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    findings = scan(files)
    for finding in findings:
        print(finding)
    print(f"{len(findings)} finding(s); skipped: {', '.join(sorted(SKIPPED))}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
