"""`make package`: the prod package — `chalice package --merge-template infra/app.yaml`, its bytecode, its schema stamp —
built by the functions' own Python (RUNTIME), so the template's runtime, the wheels and the bytecode are one version.

    python -m infra.package [--stage prod] [--cors-origin ORIGIN] [--python PATH] OUT

Chalice names each function's runtime after the interpreter it runs under, and builds the
compiled wheels (cryptography, cffi) for it; the bytecode step compiles with that same
interpreter. So both run in `.venv-package`, a venv of RUNTIME's Python holding exactly
requirements.lock (hash-checked, as the zip) and chalice, made on first use (from PyPI:
the one time this needs the network). The Python comes from `--python` (or RUNTIME_PYTHON),
else `python3.13` on PATH, else pyenv's; without one, packaging stops saying how to get it.

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
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable
from email.parser import HeaderParser
from pathlib import Path

from infra import bytecode, schema_stamp

ROOT = Path(__file__).resolve().parents[1]
APP_TEMPLATE = ROOT / "infra" / "app.yaml"
LOCK = ROOT / "requirements.lock"
DEPLOYMENTS = ROOT / ".chalice" / "deployments"
# The functions' Lambda runtime: AWS supports it to 2029-06-30 (python3.11 takes no new function from 2027-07-31).
RUNTIME = "python3.13"
RUNTIME_VENV = ROOT / ".venv-package"
CHALICE = "".join(re.findall(r"^chalice==\S+", (ROOT / "requirements-dev-loop.txt").read_text(), re.MULTILINE))  # the dev loop's
PIP = "pip<26.3"  # chalice 1.34's own bound; older pips turn the lock's hashes, as constraints, into --require-hashes
HOW_TO_GET_IT = (
    f"make package needs {RUNTIME} (the functions' runtime: chalice builds the wheels and the bytecode for the Python "
    f"it runs under). Debian 13: apt-get install python3.13 python3.13-venv; Debian 12 has no package of it: "
    f"`pyenv install 3.13` (https://github.com/pyenv/pyenv), then make package RUNTIME_PYTHON=<that python3.13>"
)


class RuntimeMissing(RuntimeError):
    """No interpreter of the functions' runtime on this machine: the message says how to get one."""


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


def _version_of(interpreter: str) -> str | None:
    """`3.13` for an interpreter that runs and can make a venv (Debian splits venv out), else None."""
    try:
        done = subprocess.run(  # noqa: S603 — a candidate interpreter, fixed arguments
            [interpreter, "-c", "import ensurepip, sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _candidates() -> list[str]:
    """Where a python3.13 may be: the one asked for, PATH (pyenv's shim answers only when 3.13 is its global), pyenv's own."""
    asked = os.environ.get("RUNTIME_PYTHON")
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    return [*([asked] if asked else []), *filter(None, [shutil.which(RUNTIME)]),
            *map(str, sorted(pyenv.glob(f"{RUNTIME.removeprefix('python')}*/bin/{RUNTIME}"), reverse=True)),
            f"/usr/bin/{RUNTIME}", f"/usr/local/bin/{RUNTIME}"]


def runtime_interpreter(candidates: Iterable[str] | None = None,
                        version_of: Callable[[str], str | None] = _version_of) -> str:
    """The first candidate that is the functions' runtime (RUNTIME) and can make a venv."""
    wanted = RUNTIME.removeprefix("python")
    for candidate in _candidates() if candidates is None else candidates:
        if version_of(candidate) == wanted:
            return candidate
    raise RuntimeMissing(HOW_TO_GET_IT)


def _run(step: list[str]) -> None:
    done = subprocess.run(step, capture_output=True, text=True, timeout=900)  # noqa: S603 — fixed arguments, no shell
    if done.returncode:
        raise RuntimeError(f"{' '.join(step)} failed:\n{done.stderr[-3000:]}")


def runtime_python(interpreter: str | None = None) -> Path:
    """`.venv-package`'s python (RUNTIME, requirements.lock and chalice), made first if missing or stale."""
    python = RUNTIME_VENV / "bin" / "python"
    stamp = RUNTIME_VENV / f".installed-{hashlib.sha256(LOCK.read_bytes() + CHALICE.encode()).hexdigest()[:16]}"
    if stamp.exists():
        return python
    with open(ROOT / ".venv-package.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # two packages started at once: one makes the venv, the other waits for it
        if stamp.exists():
            return python
        interpreter = interpreter or runtime_interpreter()
        print(f"making {RUNTIME_VENV.name} ({RUNTIME}, requirements.lock and {CHALICE}) with {interpreter}: once",
              file=sys.stderr, flush=True)
        _run([interpreter, "-m", "venv", "--clear", str(RUNTIME_VENV)])
        pins = RUNTIME_VENV / "lock-pins.txt"  # the lock's versions without its hashes: pins for what the zip leaves out
        pins.write_text("".join(f"{name}=={version}\n" for name, version in locked().items()))
        _run([str(python), "-m", "pip", "install", "-q", "--upgrade", PIP])
        _run([str(python), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(LOCK)])
        _run([str(python), "-m", "pip", "install", "-q", CHALICE, "-c", str(pins)])  # chalice, moving no locked version
        stamp.touch()
    return python


def package(out: Path, *, stage: str = "prod", cors_origin: str = "*", region: str | None = None,
            interpreter: str | None = None) -> Path:
    """Build the package into `out` (emptied first) with the functions' runtime; return its template (sam.yaml)."""
    python = runtime_python(interpreter)
    shutil.rmtree(out, ignore_errors=True)
    # chalice looks for .chalice/deployments and then makes it: two packages started at once from one tree race there
    _dependencies_built_from_this_lock()
    chalice = python.with_name("chalice")
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
    runtimes = bytecode.runtimes(out / "sam.yaml")
    if runtimes != {RUNTIME}:
        raise RuntimeError(f"the functions run {sorted(runtimes)}, not {RUNTIME}: chalice ran under another Python")
    compiled = subprocess.run(  # noqa: S603 — the runtime's python, fixed arguments
        [str(python), "-m", "infra.bytecode", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if compiled.returncode:
        raise RuntimeError(f"the bytecode step refused the package:\n{compiled.stdout}{compiled.stderr}")
    template = out / "sam.yaml"
    schema_stamp.stamp(template)
    return template


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--cors-origin", default="*")
    parser.add_argument("--python", help=f"the {RUNTIME} to make .venv-package with (default: found, RUNTIME_PYTHON)")
    args = parser.parse_args(argv)
    try:
        template = package(args.out, stage=args.stage, cors_origin=args.cors_origin, interpreter=args.python)
    except RuntimeMissing as missing:
        print(missing, file=sys.stderr)
        return 2
    print(f"packaged: {template} and {args.out / 'deployment.zip'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
