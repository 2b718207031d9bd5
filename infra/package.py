"""`make package`: the prod package, offline — `chalice package --merge-template infra/app.yaml`, its bytecode, its schema stamp.

    python -m infra.package [--stage prod] [--cors-origin ORIGIN] OUT

The API's preflight answers are baked in at package time from EVENTS_CORS_ORIGIN,
so the origin given here must be the app stack's CorsOrigin parameter (`make
deploy` passes the one from its parameters file). The template names no region
(it uses AWS::Region); Chalice only insists on one being set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from infra import bytecode, schema_stamp

ROOT = Path(__file__).resolve().parents[1]
APP_TEMPLATE = ROOT / "infra" / "app.yaml"


def package(out: Path, *, stage: str = "prod", cors_origin: str = "*", region: str | None = None) -> Path:
    """Build the package into `out` (emptied first); return its template (sam.yaml)."""
    shutil.rmtree(out, ignore_errors=True)
    # chalice looks for .chalice/deployments and then makes it: two packages started at once from one tree race there
    (ROOT / ".chalice" / "deployments").mkdir(exist_ok=True)
    chalice = Path(sys.executable).with_name("chalice")
    region = region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    env = dict(os.environ, AWS_DEFAULT_REGION=region, EVENTS_CORS_ORIGIN=cors_origin)
    done = subprocess.run(  # noqa: S603 — this venv's chalice, fixed arguments, no shell
        [str(chalice), "package", "--stage", stage, "--merge-template", str(APP_TEMPLATE), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode:
        raise RuntimeError(f"chalice package failed:\n{done.stdout}{done.stderr}")
    if bytecode.main([str(out)]):
        raise RuntimeError("the bytecode step refused the package")
    template = out / "sam.yaml"
    schema_stamp.stamp(template)
    return template


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--cors-origin", default="*")
    args = parser.parse_args(argv)
    template = package(args.out, stage=args.stage, cors_origin=args.cors_origin)
    print(f"packaged: {template} and {args.out / 'deployment.zip'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
