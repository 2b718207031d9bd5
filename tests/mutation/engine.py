"""Apply one mutation at a time to a scratch copy of the repository and run its tests there.

A guard is named in the source by a marker on its own line, `# guard: <name>`
(`-- guard: <name>` in a migration), directly above the clause it marks: the
guard's region runs from the marker to the end of the block below it (in a
migration, to the statement's `;`). A mutation addresses its guard by name and
its snippet must occur exactly once in that region, so code that moves with its
marker keeps its mutations without rewriting them. The working tree is only ever read. The scratch copy holds no bytecode
(PYTHONDONTWRITEBYTECODE), so a mutated module is always compiled from its
mutated source, and each file is restored before the next mutation.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider")
# Where guards live: the engine, the dev kit, and the harness itself (one of its own guards is mutated).
MARKED_TREES = ("chalicelib", "devtools", "tests/mutation", "bridge/python")
MARKER = re.compile(r"^[ \t]*(?:#|--) guard: ([a-z0-9-]+)[ \t]*$", re.MULTILINE)
NOT_COPIED = (".git", ".venv", ".local", "__pycache__", ".pytest_cache", "node_modules")
DEFAULT_TIMEOUT = 900.0  # one mutation's test run; a hang counts as a kill, reported as such


@dataclass(frozen=True)
class Mutation:
    """One guard lost: `snippet` (exactly once in the region of the guard named `guard`) becomes `replacement`.

    `tests` are the test modules that must kill it. `equivalent` says why no
    test can: the mutation changes no behaviour a user could notice.
    """

    name: str
    guard: str
    snippet: str
    replacement: str
    tests: tuple[str, ...]
    equivalent: str | None = None

    def __post_init__(self) -> None:
        if self.snippet == self.replacement:
            raise ValueError(f"{self.name}: the replacement is the snippet")
        object.__setattr__(self, "tests", tuple(self.tests))


@dataclass(frozen=True)
class Result:
    mutation: Mutation
    verdict: str  # killed | survived | broken (the mutant did not import or collect) | timeout
    killer: str | None  # the first failing test id
    seconds: float
    output: str  # pytest's output, kept for a survivor or a broken run

    @property
    def killed(self) -> bool:
        return self.verdict in ("killed", "timeout")


@dataclass(frozen=True)
class Region:
    """Where a guard's marker stands: the file and the character span its mutations may touch."""

    file: str
    start: int
    end: int


def _block_end(source: str, line: int) -> int:
    """The last line of the block holding `line`: the statement there and every sibling after it (a decorator
    belongs to its definition), so a guard may span several statements of one block."""
    def first(node: ast.stmt) -> int:
        return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])

    tree = ast.parse(source)
    blocks = [body for node in ast.walk(tree) for field in ("body", "orelse", "finalbody")
              if isinstance(body := getattr(node, field, None), list) and body and isinstance(body[0], ast.stmt)]
    holding = [body for body in blocks if any(first(n) <= line <= (n.end_lineno or 0) for n in body)]
    if not holding:
        raise ValueError(f"no statement holds line {line}")
    innermost = min(holding, key=lambda body: (body[-1].end_lineno or 0) - first(body[0]))
    return innermost[-1].end_lineno or line


def _region(file: str, source: str, marker_at: int) -> Region:
    lines = source.splitlines(keepends=True)
    number = source.count("\n", 0, marker_at) + 1  # the marker's line, from 1
    below = number + 1
    while below <= len(lines) and (not lines[below - 1].strip() or MARKER.match(lines[below - 1])):
        below += 1
    if file.endswith(".sql"):
        last = next((n for n in range(below, len(lines) + 1) if lines[n - 1].rstrip().endswith(";")), len(lines))
    else:
        last = _block_end(source, below)
    start = sum(len(line) for line in lines[: number - 1])
    return Region(file, start, sum(len(line) for line in lines[:last]))


def guards(root: Path = ROOT) -> dict[str, list[Region]]:
    """Every marker in the marked trees, by guard name (a name marked twice lists both regions)."""
    found: dict[str, list[Region]] = {}
    for tree in MARKED_TREES:
        for path in sorted((root / tree).rglob("*")):
            if path.suffix not in (".py", ".sql") or "__pycache__" in path.parts:
                continue
            source = path.read_text()
            for match in MARKER.finditer(source):
                file = str(path.relative_to(root))
                found.setdefault(match.group(1), []).append(_region(file, source, match.start()))
    return found


def check(mutations: Sequence[Mutation], root: Path = ROOT, *, whole: bool = True) -> list[str]:
    """Everything wrong with the list as the code stands: what `--check` reports. Only the whole catalogue
    (`whole`) must address every marker; a chosen few (`--only`) must each apply."""
    problems, seen = [], set()
    marked = guards(root)
    for m in mutations:
        if m.name in seen:
            problems.append(f"{m.name}: the name is used twice")
        seen.add(m.name)
        regions = marked.get(m.guard, [])
        if len(regions) != 1:
            problems.append(f"{m.name}: its guard {m.guard!r} is marked {len(regions)} times (must be exactly once)")
            continue
        region = regions[0]
        count = (root / region.file).read_text()[region.start:region.end].count(m.snippet)
        if count != 1:
            problems.append(f"{m.name}: its snippet occurs {count} times in guard {m.guard!r} ({region.file}; must be exactly once)")
        if not m.tests:
            problems.append(f"{m.name}: no test modules named")
        for module in m.tests:
            if not (root / module.split("::")[0]).is_file():
                problems.append(f"{m.name}: no test module {module}")
    addressed = {m.guard for m in mutations} if whole else set(marked)
    problems.extend(f"guard {name!r} ({regions[0].file}) is marked but no mutation addresses it"
                    for name, regions in sorted(marked.items()) if name not in addressed)
    return problems


def locate(mutation: Mutation, root: Path) -> tuple[Path, int]:
    """The file holding the mutation's guard and the snippet's offset in it."""
    regions = guards(root).get(mutation.guard, [])
    if len(regions) != 1:
        raise ValueError(f"{mutation.name}: its guard {mutation.guard!r} is marked {len(regions)} times")
    region = regions[0]
    path = root / region.file
    within = path.read_text()[region.start:region.end]
    if within.count(mutation.snippet) != 1:
        raise ValueError(f"{mutation.name}: the snippet does not occur exactly once in guard {mutation.guard!r}")
    return path, region.start + within.index(mutation.snippet)


def scratch_copy(root: Path = ROOT) -> Path:
    target = Path(tempfile.mkdtemp(prefix="mutation-")) / "repo"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
    return target


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVENTS_DB_URL", "PYTEST_ADDOPTS")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _default_ctrl_c() -> None:
    """In the child, before it runs Python: Ctrl-C as Python expects it. A `make mutate` started from a
    shell that ignores SIGINT (a background job) would otherwise hand the ignored signal down to every
    test run, and a test that stops a process with Ctrl-C would fail for every mutation."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _first_failure(output: str) -> str | None:
    # Only the short summary: captured log lines above it also start with "ERROR".
    summary = output.rpartition("short test summary info")[2]
    for line in summary.splitlines():
        for prefix in ("FAILED ", "ERROR "):
            if line.startswith(prefix):
                return line[len(prefix):].split(" - ")[0].strip()
    return None


def run_tests(scratch: Path, modules: Iterable[str], timeout: float, python: str = sys.executable) -> tuple[int | None, str]:
    """pytest over `modules` in the scratch copy; (exit code or None on timeout, output)."""
    command = [python, "-m", "pytest", *PYTEST_ARGS, *modules]
    try:
        done = subprocess.run(command, cwd=scratch, env=_child_env(), capture_output=True, text=True, timeout=timeout,
                              # guard: mutation-runs-inherit-an-ignored-ctrl-c
                              preexec_fn=_default_ctrl_c)
    except subprocess.TimeoutExpired as hung:
        out = hung.stdout.decode() if isinstance(hung.stdout, bytes) else (hung.stdout or "")
        return None, out
    return done.returncode, done.stdout + done.stderr


def mutate_and_test(mutation: Mutation, scratch: Path, timeout: float = DEFAULT_TIMEOUT) -> Result:
    path, at = locate(mutation, scratch)
    original = path.read_text()
    started = time.monotonic()
    path.write_text(original[:at] + mutation.replacement + original[at + len(mutation.snippet):])
    try:
        code, output = run_tests(scratch, mutation.tests, timeout)
    finally:
        path.write_text(original)
    seconds = time.monotonic() - started
    killer = _first_failure(output)
    if code is None:
        verdict = "timeout"
    elif code == 0:
        verdict = "survived"
    elif code == 1 and killer and "::" in killer:
        verdict = "killed"
    else:  # a collection or import error: the mutant is not valid Python, not a kill
        verdict = "broken"
    return Result(mutation, verdict, killer, seconds, output)


def run(
    mutations: Sequence[Mutation],
    *,
    root: Path = ROOT,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[int, int, Result], None] | None = None,
) -> list[Result]:
    """Every mutation in turn on one scratch copy, removed afterwards."""
    problems = check(mutations, root, whole=False)
    if problems:
        raise ValueError("the mutation list does not apply:\n  " + "\n  ".join(problems))
    scratch = scratch_copy(root)
    try:
        results = []
        for i, mutation in enumerate(mutations, 1):
            result = mutate_and_test(mutation, scratch, timeout)
            results.append(result)
            if progress:
                progress(i, len(mutations), result)
        return results
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)


def baseline(mutations: Sequence[Mutation], root: Path = ROOT, timeout: float = DEFAULT_TIMEOUT) -> tuple[bool, str]:
    """The union of the named test modules passes unmutated (else every kill would mean nothing)."""
    modules = sorted({m for mutation in mutations for m in mutation.tests})
    scratch = scratch_copy(root)
    try:
        code, output = run_tests(scratch, modules, timeout * 2)
        return code == 0, output
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
