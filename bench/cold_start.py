"""Cold start: what importing the engine costs a new Lambda container, and the size of what it unpacks.

`python -X importtime` in a fresh interpreter, for the app (what every function
imports) and for the tick's path (the app plus the modules its first tick pulls
in), against chalice, PyMySQL and Powertools imported alone in the same run: the
engine's own cost is the difference. Each figure is the median of `repeats`
fresh interpreters, interleaved so a busy moment hits both sides alike.

Those run from the working tree, whose modules Python has long since compiled.
A Lambda container imports from the unpacked deployment.zip, read-only, so the
last figures import the app from the prod package unpacked as Lambda unpacks it:
as Chalice builds it (no bytecode, so every module compiles on every cold start)
against the same package after `make package`'s bytecode step.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from infra.bytecode import add_bytecode

from .harness import Figure, at_most, table

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = "import chalice, pymysql; from aws_lambda_powertools import Logger, Metrics"
APP = "import app"
# The modules the tick function's first invocation imports beyond the app.
TICK_PATH = "import app; from chalicelib.events.runner import lambda_handler; lambda_handler.scheduled_tick"
TARGET_MS = 50.0


def import_ms(statement: str, unpacked: Path | None = None) -> float:
    """Total self time of every module imported by `statement`, in ms, in a new interpreter
    (from the working tree, or isolated, without writing bytecode, from an `unpacked` package)."""
    if unpacked is None:
        command = [sys.executable, "-X", "importtime", "-c", statement]
    else:
        command = [sys.executable, "-I", "-B", "-X", "importtime", "-c", f"import sys; sys.path.insert(0, {str(unpacked)!r}); {statement}"]
    done = subprocess.run(command, cwd=unpacked or ROOT, capture_output=True, text=True, check=True)
    total_us = 0
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            self_us = line.split(":", 1)[1].split("|")[0].strip()
            if self_us.isdigit():
                total_us += int(self_us)
    return total_us / 1000


def build_package(out: Path, stage: str = "prod") -> Path | None:
    """`chalice package` into `out`, as `make package` runs it before its bytecode step; the zip's path."""
    env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "eu-west-1")}
    done = subprocess.run([str(Path(sys.executable).parent / "chalice"), "package", "--stage", stage,
                           "--merge-template", "infra/app.yaml", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env)
    package = out / "deployment.zip"
    if done.returncode != 0 or not package.exists():
        print(f"chalice package failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return package


def sizes_mb(package: Path) -> tuple[float, float]:
    """Zipped and unpacked."""
    with zipfile.ZipFile(package) as archive:
        return package.stat().st_size / 1e6, sum(info.file_size for info in archive.infolist()) / 1e6


def package_figures(repeats: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as scratch:
        package = build_package(Path(scratch, "out"))
        if package is None:
            return []
        plain = sizes_mb(package)
        as_built, compiled = Path(scratch, "as-built"), Path(scratch, "compiled")
        with zipfile.ZipFile(package) as archive:
            archive.extractall(as_built)
        add_bytecode(package)
        shipped = sizes_mb(package)
        with zipfile.ZipFile(package) as archive:
            archive.extractall(compiled)
        samples: dict[str, list[float]] = {"as built": [], "with bytecode": []}
        for _ in range(repeats):
            samples["as built"].append(import_ms(APP, as_built))
            samples["with bytecode"].append(import_ms(APP, compiled))
    median = {name: statistics.median(values) for name, values in samples.items()}
    for name, values in samples.items():
        print(f"  package, {name:13} import ms: " + ", ".join(f"{v:.0f}" for v in values) + f"  (median {median[name]:.0f})")
    print(f"  package: {plain[0]:.1f} MB zipped ({plain[1]:.1f} MB unpacked) as built, "
          f"{shipped[0]:.1f} MB ({shipped[1]:.1f} MB) with bytecode")
    return [
        Figure("cold", "import app from the prod package, with bytecode (what Lambda runs)", median["with bytecode"], "ms",
               baseline=median["as built"], baseline_what="same package as chalice builds it: no bytecode"),
        Figure("cold", "deployment.zip (prod stage, with bytecode, zipped)", shipped[0], "MB",
               baseline=plain[0], baseline_what="as chalice builds it"),
    ]


def run(sizes: object = None, repeats: int = 7, package: bool = True) -> list[Figure]:
    """Sizes do not apply: an import is the same size in a quick run."""
    samples: dict[str, list[float]] = {"libraries": [], "app": [], "tick": []}
    for _ in range(repeats):
        samples["libraries"].append(import_ms(LIBRARIES))
        samples["app"].append(import_ms(APP))
        samples["tick"].append(import_ms(TICK_PATH))
    median = {name: statistics.median(values) for name, values in samples.items()}
    for name, values in samples.items():
        print(f"  {name:9} import ms: " + ", ".join(f"{v:.0f}" for v in values) + f"  (median {median[name]:.0f})")
    libraries = median["libraries"]
    figures = [
        Figure("cold", f"import app beyond the libraries ({median['app']:.0f} ms in all, libraries {libraries:.0f} ms)",
               median["app"] - libraries, "ms", target=at_most(TARGET_MS)),
        Figure("cold", f"import the tick path beyond the libraries ({median['tick']:.0f} ms in all)",
               median["tick"] - libraries, "ms", target=at_most(TARGET_MS)),
    ]
    if package:
        figures += package_figures(repeats)
    return figures


if __name__ == "__main__":
    print(table(run()))
