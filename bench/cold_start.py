"""Cold start: what importing the engine costs a new Lambda container, and the size of what it unpacks.

`python -X importtime` in a fresh interpreter, for the app (what every function
imports) and for the tick's path (the app plus the modules its first tick pulls
in), against chalice, PyMySQL and Powertools imported alone in the same run: the
engine's own cost is the difference. Each figure is the median of `repeats`
fresh interpreters, interleaved so a busy moment hits both sides alike.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .harness import Figure, at_most, table

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = "import chalice, pymysql; from aws_lambda_powertools import Logger, Metrics"
APP = "import app"
# The modules the tick function's first invocation imports beyond the app.
TICK_PATH = "import app; from chalicelib.events.runner import schedule; schedule.build_runner"
TARGET_MS = 50.0


def import_ms(statement: str) -> float:
    """Total self time of every module imported by `statement`, in ms, in a new interpreter."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    total_us = 0
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            self_us = line.split(":", 1)[1].split("|")[0].strip()
            if self_us.isdigit():
                total_us += int(self_us)
    return total_us / 1000


def zip_size_mb(stage: str = "prod") -> float | None:
    """The deployment package `chalice package` builds (function code and its libraries)."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "eu-west-1")}
        done = subprocess.run([str(Path(sys.executable).parent / "chalice"), "package", "--stage", stage, out], cwd=ROOT,
                              capture_output=True, text=True, env=env)
        package = Path(out) / "deployment.zip"
        if done.returncode != 0 or not package.exists():
            print(f"chalice package failed: {done.stderr.strip()[-300:]}", file=sys.stderr)
            return None
        with zipfile.ZipFile(package) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
        print(f"  package: {package.stat().st_size / 1e6:.1f} MB zipped, {unpacked / 1e6:.1f} MB unpacked")
        return package.stat().st_size / 1e6


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
        size = zip_size_mb()
        if size is not None:
            figures.append(Figure("cold", "deployment.zip (prod stage, zipped)", size, "MB"))
    return figures


if __name__ == "__main__":
    print(table(run()))
