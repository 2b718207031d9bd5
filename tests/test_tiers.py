"""`make check`'s tier starts no process and sleeps on no clock: a test that does carries a tier marker
(pytest.ini; realtime or slow), so the inner loop stays fast and `make test` still runs it.

Read from the source, not run: a test starts a process if its code, the helpers and fixtures it names, or
the project code they call (tests/support, bench, devtools, infra, chalicelib) calls subprocess,
multiprocessing or os's fork/spawn/exec/system. It sleeps on the clock if its module's code it reaches calls
time.sleep anywhere but in a `while` loop (a loop that polls a condition is a wait on that condition).
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("chalicelib", "bench", "devtools", "infra", "tests/support")
# The database server: a private mariadbd is started only on a machine that has none, once a session.
NOT_PER_TEST = {"devtools.kit.mariadb.server_url"}
# Tests that reach code able to start a process but are refused before it does, which is what they check.
REFUSED_FIRST = {"tests.test_infra_deploy::test_a_parameters_file_with_a_mistake_is_refused_before_aws_is_called",
                 "tests.test_bench_smoke::test_without_a_cpu_controller_lambda_cpu_says_so_in_one_line_and_measures_nothing"}
PROCESS_CALLS = ("subprocess.", "multiprocessing.", "os.fork", "os.forkpty", "os.system", "os.posix_spawn", "os.spawn",
                 "os.exec", "concurrent.futures.ProcessPoolExecutor")


def tiers() -> set[str]:
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    return {line.split(":")[0].strip() for line in ini["pytest"]["markers"].splitlines() if line.strip()}


class Module:
    """One source file: its top-level definitions and what each name it imports stands for."""

    def __init__(self, name: str, source: str, *, package: bool = False):
        self.name, self.tree = name, ast.parse(source)
        self.defs = {n.name: n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        self.imports: dict[str, str] = {}
        self._calls: dict[ast.AST, list[tuple[str, ast.Call]]] = {}
        within = name.split(".") if package else name.split(".")[:-1]
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(within[: len(within) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}"

    def resolve(self, node: ast.expr) -> str | None:
        """`a.b.c` as the dotted name it stands for here (`subprocess.run`, `tests.support.x.helper`), if a name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = f"{self.name}.{node.id}" if node.id in self.defs else self.imports.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    def calls(self, node: ast.AST) -> list[tuple[str, ast.Call]]:
        """Every call within `node` (nested functions and lambdas too) with the dotted name it calls."""
        if node not in self._calls:
            self._calls[node] = [(name, found) for found in ast.walk(node)
                                 if isinstance(found, ast.Call) and (name := self.resolve(found.func))]
        return self._calls[node]


def _starts_a_process(name: str, starters: set[str]) -> bool:
    parts = name.split(".")
    return name.startswith(PROCESS_CALLS) or any(".".join(parts[:i]) in starters for i in range(1, len(parts) + 1))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def library_modules() -> dict[str, Module]:
    paths = [p for folder in LIBRARIES for p in (ROOT / folder).rglob("*.py")] + [ROOT / "tests" / "conftest.py"]
    return {_module_name(p): Module(_module_name(p), p.read_text(), package=p.name == "__init__.py") for p in paths}


def process_starters(modules: dict[str, Module]) -> set[str]:
    """Every top-level function or class of these modules that starts a process, however indirectly."""
    starters: set[str] = set()
    grew = True
    while grew:
        grew = False
        for module in modules.values():
            for name, node in module.defs.items():
                qualified = f"{module.name}.{name}"
                if qualified not in starters | NOT_PER_TEST and any(_starts_a_process(c, starters) for c, _ in module.calls(node)):
                    starters.add(qualified)
                    grew = True
    return starters


def _fixtures(modules: dict[str, Module]) -> dict[str, str]:
    """The shared fixtures (tests/conftest.py, tests/support), by the parameter name a test asks for them with."""
    return {
        name: f"{module.name}.{name}"
        for module in modules.values()
        for name, node in module.defs.items()
        if any("fixture" in ast.unparse(d) for d in getattr(node, "decorator_list", []))
    }


def _sleeps_on_the_clock(module: Module, node: ast.AST) -> bool:
    polling: set[ast.AST] = {n for loop in ast.walk(node) if isinstance(loop, ast.While) for n in ast.walk(loop)}
    return any(name == "time.sleep" and call not in polling for name, call in module.calls(node))


def _marks(module: Module, decorators: list[ast.expr]) -> set[str]:
    return {n.attr for d in decorators for n in ast.walk(d) if isinstance(n, ast.Attribute)
            and (module.resolve(n.value) or "").endswith("pytest.mark")}


def unmarked(module: Module, starters: set[str], fixtures: dict[str, str]) -> dict[str, str]:
    """The tests of a fast-tier module that start a process or sleep on the clock without a tier marker."""
    tier = tiers()
    module_marks = {m for n in module.tree.body if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets) for m in _marks(module, [n.value])}
    found = {}
    for top in module.tree.body:
        owner = top if isinstance(top, ast.ClassDef) else None
        for test in (owner.body if owner else [top]):
            if not isinstance(test, ast.FunctionDef) or not test.name.startswith("test"):
                continue
            if (module_marks | _marks(module, test.decorator_list) | (_marks(module, owner.decorator_list) if owner else set())) & tier:
                continue
            # What the test reaches in its module: itself, the helpers it names and the fixtures it (or they) ask for.
            reached: set[ast.AST] = set()
            todo: list[ast.AST] = [test]
            while todo:
                node = todo.pop()
                if node in reached:
                    continue
                reached.add(node)
                asked = [a.arg for a in node.args.args] if isinstance(node, ast.FunctionDef) else []
                todo += [module.defs[n] for n in [*asked, *(n.id for n in ast.walk(node) if isinstance(n, ast.Name))]
                         if n in module.defs]
            shared = [fixtures[a.arg] for a in test.args.args if a.arg in fixtures and a.arg not in module.defs]
            starts = any(_starts_a_process(c, starters) for node in reached for c, _ in module.calls(node)) or any(
                f in starters for f in shared)
            sleeps = any(_sleeps_on_the_clock(module, node) for node in reached)
            if starts or sleeps:
                what = " and ".join(w for w, did in (("starts a process", starts), ("sleeps on the clock", sleeps)) if did)
                found[f"{module.name}::{test.name}"] = what
    return found


def test_no_fast_tier_test_starts_a_process_or_sleeps_on_the_clock():
    modules = library_modules()
    starters, fixtures = process_starters(modules), _fixtures(modules)
    assert "tests.support.runner_kit.tick_process" in starters and "bench.shards.drain_with" in starters
    found = {test: what for path in sorted((ROOT / "tests").glob("test_*.py"))
             for test, what in unmarked(Module(f"tests.{path.stem}", path.read_text()), starters, fixtures).items()}
    assert found.keys() >= REFUSED_FIRST, "REFUSED_FIRST names a test that no longer reaches a process: drop it"
    unmarked_here = [f"{test} {what}" for test, what in found.items() if test not in REFUSED_FIRST]
    assert unmarked_here == [], "mark these realtime (seconds) or slow (tens of seconds), pytest.ini: " + "; ".join(unmarked_here)


def test_a_process_or_a_sleep_is_found_however_it_is_reached():
    support = Module("tests.support.kit", "import subprocess\n"
                     "def launch():\n    return subprocess.Popen(['true'])\n"
                     "def helper():\n    return launch()\n")
    starters = process_starters({"tests.support.kit": support})
    assert starters == {"tests.support.kit.launch", "tests.support.kit.helper"}
    module = Module("tests.test_made_up", """
import threading
import time
import pytest
from tests.support import kit
from tests.support.kit import helper as started

def _wait():
    time.sleep(1)

@pytest.fixture
def peer():
    threading.Thread(target=lambda: time.sleep(2)).start()

def test_through_an_imported_helper():
    started()

def test_through_its_module():
    kit.helper()

def test_through_a_local_helper():
    _wait()

def test_through_its_fixture(peer):
    pass

def test_through_a_shared_fixture(bridge_process):
    pass

def test_polling_a_condition_is_no_sleep():
    while not done():
        time.sleep(0.05)

@pytest.mark.realtime
def test_marked():
    _wait()
""")
    assert unmarked(module, starters, {"bridge_process": "tests.support.kit.launch"}) == {
        "tests.test_made_up::test_through_an_imported_helper": "starts a process",
        "tests.test_made_up::test_through_its_module": "starts a process",
        "tests.test_made_up::test_through_a_local_helper": "sleeps on the clock",
        "tests.test_made_up::test_through_its_fixture": "sleeps on the clock",
        "tests.test_made_up::test_through_a_shared_fixture": "starts a process",
    }
