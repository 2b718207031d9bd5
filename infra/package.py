"""`make package`: the prod package, offline — `chalice package --merge-template infra/app.yaml`, its bytecode, its schema stamp.

    python -m infra.package [--stage prod] [--cors-origin ORIGIN] OUT

The zip ships exactly requirements.lock: chalice's pip runs under it as a constraints file, so each
package comes at its locked version and only from a file with a locked hash, and a zip that carries any
other distribution or version is refused (`make lock` refreshes the lock, docs/deploy.md).

The API's preflight answers are baked in at package time from EVENTS_CORS_ORIGIN,
so the origin given here must be the app stack's CorsOrigin parameter (`make
deploy` passes the one from its parameters file). The template names no region
(it uses AWS::Region); Chalice only insists on one being set.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from infra import bytecode, schema_stamp

ROOT = Path(__file__).resolve().parents[1]
APP_TEMPLATE = ROOT / "infra" / "app.yaml"
LOCK = ROOT / "requirements.lock"
DEPLOYMENTS = ROOT / ".chalice" / "deployments"


def canonical_name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def locked(lock: Path = LOCK) -> dict[str, str]:
    """The lock's pins: {normalised name: version}."""
    pins = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", lock.read_text(), re.MULTILINE)
    return {canonical_name(name): version for name, version in pins}


def shipped(deployment_zip: Path) -> dict[str, str]:
    """The distributions a deployment zip carries, from their *.dist-info/METADATA: {normalised name: version}."""
    found = {}
    with zipfile.ZipFile(deployment_zip) as archive:
        for entry in archive.namelist():
            if re.fullmatch(r"[^/]+\.dist-info/METADATA", entry):
                metadata = HeaderParser().parsestr(archive.read(entry).decode("utf-8", "replace"))
                found[canonical_name(metadata["Name"])] = metadata["Version"]
    return found


def _dependencies_built_from_this_lock() -> None:
    """chalice keeps the dependencies it built under a hash of requirements.txt alone: a new lock builds them anew."""
    DEPLOYMENTS.mkdir(parents=True, exist_ok=True)
    stamp = DEPLOYMENTS / f"lock-{hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]}"
    if not stamp.exists():
        for built in [*DEPLOYMENTS.glob("*.zip"), *DEPLOYMENTS.glob("lock-*")]:
            built.unlink()
        stamp.touch()


def package(out: Path, *, stage: str = "prod", cors_origin: str = "*", region: str | None = None) -> Path:
    """Build the package into `out` (emptied first); return its template (sam.yaml)."""
    shutil.rmtree(out, ignore_errors=True)
    # chalice looks for .chalice/deployments and then makes it: two packages started at once from one tree race there
    _dependencies_built_from_this_lock()
    chalice = Path(sys.executable).with_name("chalice")
    region = region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    env = dict(os.environ, AWS_DEFAULT_REGION=region, EVENTS_CORS_ORIGIN=cors_origin, PIP_CONSTRAINT=str(LOCK))
    done = subprocess.run(  # noqa: S603 — this venv's chalice, fixed arguments, no shell
        [str(chalice), "package", "--stage", stage, "--merge-template", str(APP_TEMPLATE), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode:
        raise RuntimeError(f"chalice package failed:\n{done.stdout}{done.stderr}")
    carried, pinned = shipped(out / "deployment.zip"), locked()
    if carried != pinned:
        differ = sorted(f"{name}: zip {carried.get(name)}, lock {pinned.get(name)}"
                        for name in carried.keys() | pinned.keys() if carried.get(name) != pinned.get(name))
        raise RuntimeError(f"the package does not ship requirements.lock ({'; '.join(differ)}): make lock, docs/deploy.md")
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
