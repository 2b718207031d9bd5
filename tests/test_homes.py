"""Each concept keeps one home: these fail when code grows a second one."""

import ast
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
from pathlib import Path

import chalicelib
from chalicelib.events import journal
from tests.support.graphs import circles as import_circles

ROOT = Path(__file__).resolve().parent.parent

# An engine module does one job: no module under chalicelib/events/ is longer than this many lines.
MAX_ENGINE_MODULE_LINES = 450
# The modules still longer, each awaiting its split (issue 36). The list only shrinks: an entry that is gone or
# has come under the limit fails the test as well, so it is struck off in the commit that splits it.
LONG_MODULES_AWAITING_A_SPLIT: frozenset[str] = frozenset()
# One exceptions module per layer: the base layer's (configuration, secrets, tokens,
# outbound HTTP) and the engine's, each with its tree drawn in its docstring.
ERRORS_MODULES = ("chalicelib.errors", "chalicelib.events.errors")
# The base layer stands below the engine: these never import from events/.
BASE_LAYER = (
    "chalicelib/config.py", "chalicelib/runtime.py", "chalicelib/secrets.py", "chalicelib/errors.py", "chalicelib/health.py",
    "chalicelib/schema_version.py", "chalicelib/roles.py", "chalicelib/api/auth.py", "chalicelib/outbound.py",
)


def _modules():
    yield importlib.import_module("chalicelib")
    for info in pkgutil.walk_packages(chalicelib.__path__, "chalicelib."):
        yield importlib.import_module(info.name)


def test_exception_classes_are_defined_only_in_the_errors_module():
    elsewhere = sorted(
        f"{module.__name__}.{name}"
        for module in _modules()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and module.__name__ not in ERRORS_MODULES
    )
    assert elsewhere == [], f"exception classes belong in {ERRORS_MODULES}: {elsewhere}"


def test_each_errors_module_draws_the_tree_of_its_classes():
    for name in ERRORS_MODULES:
        module = importlib.import_module(name)
        own = [n for n, v in vars(module).items() if inspect.isclass(v) and issubclass(v, BaseException) and v.__module__ == name]
        assert own and all(f" {n} " in (module.__doc__ or "") for n in own), name


def test_log_kinds_are_written_as_literals_only_in_the_journal():
    kinds = (*journal.KINDS, *journal.SCHEDULE_KINDS)  # the run log's and the schedule log's
    quoted = [f'"{kind}"' for kind in kinds] + [f"'{kind}'" for kind in kinds]
    sources = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
    elsewhere = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        if path != ROOT / "chalicelib" / "events" / "journal.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if any(literal in line for literal in quoted)
    ]
    assert elsewhere == [], f"log kinds are named only in chalicelib/events/journal.py: {elsewhere}"


def _imports_of(module: str, path: Path) -> set[str]:
    """The chalicelib modules `module` imports, wherever in the file (a function-level import still ties them)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return found


def test_no_import_circle_in_chalicelib():
    paths = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (ROOT / "chalicelib").rglob("*.py")
    }
    graph = {name: (_imports_of(name, path) & paths.keys()) - {name} for name, path in paths.items()}
    circles = import_circles(graph)
    assert circles == [], f"import circles: {[' -> '.join(c) for c in circles]}"


def test_the_code_and_docs_stand_on_their_own():
    """A reader of the repository has no outside specification to look up."""
    outside = re.compile(r"SPEC|\.\./shared|the original|the reference")
    readable = {".py", ".js", ".html", ".css", ".sql", ".json", ".md", ".txt"}
    code = [p for p in (ROOT / "chalicelib").rglob("*") if p.suffix in readable]
    texts = [ROOT / "app.py", ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *code]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in texts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []


def test_every_module_logs_through_logger_named_after_itself():
    wrong = []
    for path in (ROOT / "chalicelib").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            logs = isinstance(node, ast.Assign) and "getLogger" in ast.unparse(node.value)
            if logs and ast.unparse(node) != "logger = logging.getLogger(__name__)":
                wrong.append(f"{path.relative_to(ROOT)}: {ast.unparse(node)}")
    assert wrong == [], "a module's logger is `logger = logging.getLogger(__name__)`"


def test_statuses_are_written_in_sql_only_by_the_lifecycles_renderings():
    """The store names a status in SQL through `RunSQL` / `StepSQL`, never as a quoted literal."""
    from chalicelib.events.lifecycle import RunStatus, StepStatus

    words = sorted({s.value for s in (*RunStatus, *StepStatus)})
    quoted = re.compile(r"'(" + "|".join(words) + r")'")
    home = ROOT / "chalicelib" / "events" / "lifecycle" / "sql.py"
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
        if path != home
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if quoted.search(line)
    ]
    assert found == [], f"a status in SQL is written as lifecycle.RunSQL / StepSQL: {found}"


def test_a_status_rendering_is_never_left_unformatted():
    """`{RunSQL.X}` (or any `…SQL` rendering) in a plain string (an f missing) would reach the database as braces."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "chalicelib").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and re.search(r"\{\w+SQL\.", node.value)
    ]
    assert found == []


def _words_written(source: str, words: set[str]) -> list[int]:
    """The lines where one of `words` is written as a literal: quoted inside SQL text (`'word'` in a string) or
    compared with (`x == "word"`, `x in ("word", …)`). Docstrings (prose) are left out; a home declares its
    words by assignment (`OK = "ok"`), which is neither."""
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    in_sql = re.compile(r"'(" + "|".join(sorted(words)) + r")'")

    def word(node: ast.expr) -> bool:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(i, ast.Constant) and i.value in words for i in items)

    def written(node: ast.expr) -> bool:
        if isinstance(node, ast.Compare):
            return any(word(side) for side in (node.left, *node.comparators))
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose \
            and in_sql.search(node.value) is not None

    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.expr) and written(node)})


def _written_in(words: set[str]) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{number}"
            for path in [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
            for number in _words_written(path.read_text(), words)]


def test_a_runs_health_is_written_only_through_its_enum():
    """A run's health is `model.Health`, in SQL its rendering `HealthSQL`: never a quoted or compared literal."""
    from chalicelib.events.model import Health

    words = {h.value for h in Health}
    caught = ("x = \"UPDATE event_runs SET health = 'degraded'\"", 'if run.health == "ok": pass')
    assert all(_words_written(line, words) == [1] for line in caught)  # the rule is about something
    assert _words_written('"""health: \'ok\' or \'degraded\'"""\nOK = "ok"\nbody = {"ok": True}', words) == []
    assert _written_in(words) == [], "a run's health is written as model.Health / HealthSQL"


def test_the_engines_sleep_state_is_written_only_through_its_enum():
    """The engine state row's `state` is `engine_state.SleepState`, in SQL its rendering `SleepSQL`: never a
    quoted or compared literal, in the store or in the runner that reads the row."""
    from chalicelib.events.store.engine_state import SleepState

    words = {s.value for s in SleepState}
    caught = ("x = \"UPDATE event_engine_state SET state = 'asleep'\"", 'if seen.state != "awake": pass',
              'if seen.state in ("waking", "asleep"): pass')
    assert all(_words_written(line, words) == [1] for line in caught)  # the rule is about something
    assert _written_in(words) == [], "the engine's state is written as engine_state.SleepState / SleepSQL"


def test_below_the_engine_no_run_status_or_verdict_is_spelled():
    """The modules the engine stands on (all of chalicelib outside events/ and the API above it) never spell a
    run status or a dispatch's verdict: the tick's metrics are named by the engine (`runner/tick_metrics.py`,
    keyed by the enums), and `observability` only publishes them."""
    from chalicelib.events.actions.outcome import Verdict
    from chalicelib.events.lifecycle import RunStatus

    words = {s.value for s in RunStatus} | {v.value for v in Verdict}
    below = [p for p in sorted((ROOT / "chalicelib").rglob("*.py")) if not {"events", "api"} & set(p.relative_to(ROOT).parts)]
    assert ROOT / "chalicelib" / "observability.py" in below  # the rule is about something

    def spelled(path: Path) -> list[str]:
        tree = ast.parse(path.read_text())
        prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        return [f"{path.relative_to(ROOT)}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and n.value in words and id(n) not in prose]

    assert [line for path in below for line in spelled(path)] == []


def test_the_base_layer_does_not_reach_up_into_the_engine():
    reaching = {
        path: sorted(i for i in _imports_of(".".join(Path(path).with_suffix("").parts), ROOT / path)
                     if i.startswith("chalicelib.events"))
        for path in BASE_LAYER
    }
    assert {p: found for p, found in reaching.items() if found} == {}


def test_nothing_below_the_engine_imports_from_it():
    """What events/ builds on — every chalicelib module outside events/ that an events/ module imports,
    and what those import in turn — never imports from events/: the layers stay layers."""
    paths = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (ROOT / "chalicelib").rglob("*.py")
    }
    imports = {name: _imports_of(name, path) & paths.keys() for name, path in paths.items()}
    engine = {name for name in paths if name == "chalicelib.events" or name.startswith("chalicelib.events.")}
    below: set[str] = set()
    frontier = {i for name in engine for i in imports[name]} - engine - {"chalicelib"}
    while frontier:
        below |= frontier
        frontier = {i for name in frontier for i in imports[name]} - engine - below - {"chalicelib"}
    assert "chalicelib.db" in below and "chalicelib.outbound" in below  # the rule is about something
    reaching = {name: sorted(imports[name] & engine) for name in sorted(below)}
    assert {name: found for name, found in reaching.items() if found} == {}


def test_the_console_keeps_no_status_list_of_its_own():
    """Statuses, their words and marks, and the controls come from GET /vocabulary: a console file names a
    status at most once (a comparison), never a list of them."""
    from chalicelib.events.lifecycle import RunStatus, StepStatus

    quoted = re.compile(r"""['"`](""" + "|".join(sorted({s.value for s in (*RunStatus, *StepStatus)})) + r""")['"`]""")
    static = ROOT / "chalicelib" / "console" / "static"
    named = {path.name: quoted.findall(path.read_text()) for path in sorted(static.glob("*.js")) + sorted(static.glob("*.html"))}
    assert {name: found for name, found in named.items() if len(found) > 1} == {}


def _chalicelib_imports() -> dict[str, set[str]]:
    """Each chalicelib module -> the chalicelib modules it imports."""
    paths = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (ROOT / "chalicelib").rglob("*.py")
    }
    return {name: _imports_of(name, path) & paths.keys() for name, path in paths.items()}


def _under(package: str, names) -> set[str]:
    return {name for name in names if name == package or name.startswith(package + ".")}


CONTRACT, ADAPTERS = "chalicelib.events.actions", "chalicelib.events.adapters"


def test_the_action_contract_imports_no_adapter():
    """`events/actions/` names the outside only by its interfaces (Bridge, Channel); `events/adapters/`
    implements them, so reading the contract loads no client of the outside."""
    imports = _chalicelib_imports()
    reaching = {name: sorted(_under(ADAPTERS, imports[name])) for name in sorted(_under(CONTRACT, imports))}
    assert {name: found for name, found in reaching.items() if found} == {}


def test_the_contract_and_the_adapters_never_reach_the_database():
    """Neither the contract nor an adapter imports, directly or in turn, the database, the store, the runner,
    the controls or the API: an adapter turns what it meets outside into the contract's values, and the
    runner applies them."""
    imports = _chalicelib_imports()
    forbidden = {"chalicelib.db"} | _under("chalicelib.events.commands", imports) | _under("chalicelib.events.store", imports) \
        | _under("chalicelib.events.runner", imports) | _under("chalicelib.api", imports)
    for package in (CONTRACT, ADAPTERS):
        reached, frontier = set(), _under(package, imports)
        while frontier:
            reached |= frontier
            frontier = {i for name in frontier for i in imports[name]} - reached
        assert sorted(reached & forbidden) == [], package
    assert _under(ADAPTERS, imports) and _under(CONTRACT, imports)  # the rule is about something


def test_the_dev_tools_and_their_kit_import_nothing_from_the_tests():
    """`make dev` and the benchmarks stand on `devtools/kit/` (the database finder, the loopback game bridge,
    the clock): it lives outside tests/, and nothing under devtools/ reaches back into them."""
    reaching = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "devtools").rglob("*.py"))
        for name in _imports_of(".".join(p for p in path.relative_to(ROOT).with_suffix("").parts if p != "__init__"), path)
        if name == "tests" or name.startswith("tests.")
    ]
    assert reaching == []


def test_the_api_reads_through_views_and_never_touches_the_store():
    """The HTTP layer reads through `events/views/` and changes state through the engine's use cases: no module
    under chalicelib/api/ imports a store module (the SQL stays behind the engine)."""
    imports = _chalicelib_imports()
    api = _under("chalicelib.api", imports)
    assert "chalicelib.api.routes.runs" in api  # the rule is about something
    reaching = {name: sorted(_under("chalicelib.events.store", imports[name])) for name in sorted(api)}
    assert {name: found for name, found in reaching.items() if found} == {}


def test_no_engine_module_is_longer_than_the_limit():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "chalicelib" / "events").rglob("*.py")}
    too_long = sorted(f"{path}: {n} lines" for path, n in lengths.items()
                      if n > MAX_ENGINE_MODULE_LINES and path not in LONG_MODULES_AWAITING_A_SPLIT)
    assert too_long == [], f"split these along their seams (at most {MAX_ENGINE_MODULE_LINES} lines a module)"
    struck_off = sorted(p for p in LONG_MODULES_AWAITING_A_SPLIT if lengths.get(p, 0) <= MAX_ENGINE_MODULE_LINES)
    assert struck_off == [], "split or gone: strike these off LONG_MODULES_AWAITING_A_SPLIT"


RUNNER = ROOT / "chalicelib" / "events" / "runner"
# Names the runner keeps from before "advance" meant only a person's control: the tick report's key.
KEPT_ADVANCE_NAMES = {"runs_advanced"}


def test_only_the_tick_walks_runs_and_no_move_calls_the_walk_back():
    """The walk's loop (`runner/walk.py`) composes the moves; a move returns the next cursor and never
    imports the loop, so it cannot call it: only the tick builds walkers."""
    importers = sorted(name for name, imported in _chalicelib_imports().items()
                       if "chalicelib.events.runner.walk" in imported)
    assert importers == ["chalicelib.events.runner.tick"]


def test_advance_names_only_a_persons_control_in_the_runner():
    """A run is walked and its lease taken; "advance" is the Advance phase control alone (glossary)."""
    named = []
    for path in sorted(RUNNER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = {
                ast.FunctionDef: lambda n: [n.name], ast.ClassDef: lambda n: [n.name], ast.arg: lambda n: [n.arg],
                ast.Name: lambda n: [n.id], ast.Attribute: lambda n: [n.attr],
            }.get(type(node), lambda n: [])(node)
            named += [f"{path.name}: {name}" for name in names
                      if "advanc" in name.lower() and name not in KEPT_ADVANCE_NAMES]
    assert named == []


def test_the_store_imports_no_command():
    """store/ is SQL only: what a command means (its protocol, its rules, its log rows) never reaches down into it."""
    store = ROOT / "chalicelib" / "events" / "store"
    reaching = {
        str(path.relative_to(store)): sorted(
            i for i in _imports_of(".".join(p for p in path.relative_to(ROOT).with_suffix("").parts if p != "__init__"), path)
            if i.startswith(("chalicelib.events.commands", "chalicelib.events.controls")))
        for path in sorted(store.rglob("*.py"))
    }
    assert {name: found for name, found in reaching.items() if found} == {}


CONTROL_NAMES = ("pause", "resume", "cancel", "advance", "confirm", "skip", "acknowledge", "release", "take-over", "retry",
                 "resend")
COMMANDS_HOME = ROOT / "chalicelib" / "events" / "commands"


def _control_names_quoted(source: str) -> list[int]:
    """The lines where a control's name is written as a literal where a control is meant: compared with a
    control, the value of a "control" entry or a `control=` argument, an argument of a function about
    controls (`run_control`, `refusal`, …), or a key of CONTROLS. The same words in other vocabularies
    (a step's on_failure, what a run waits for, what closed a phase) are not controls."""
    def named(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and node.value in CONTROL_NAMES

    def about_controls(node: ast.AST) -> bool:
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        return "control" in word.lower() or "refusal" in word.lower()

    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(named(s) for s in sides) and any(about_controls(s) for s in sides):
                found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            found += [v.lineno for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "control" and named(v)]
        elif isinstance(node, ast.Subscript) and about_controls(node.value) and named(node.slice):
            found.append(node.lineno)
        elif isinstance(node, ast.Call):
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg is None or about_controls(ast.Name(k.arg)))]
            if about_controls(node.func) and any(named(a) for a in arguments):
                found.append(node.lineno)
            found += [k.value.lineno for k in node.keywords if k.arg == "control" and named(k.value)]
    return sorted(set(found))


def test_control_names_are_quoted_only_in_the_commands():
    """A control is named by its command (`Pause.name`, …): no other chalicelib module writes its name as a literal."""
    caught = ('journal.run_control(run, "pause", to, actor)', 'x = {"control": "skip"}', 'if control == "advance": pass',
              'CONTROLS["retry"]', 'refusal("resend", run)', 'journal.step_status(step, a, b, control="confirm")')
    assert all(_control_names_quoted(line) == [1] for line in caught)  # the rule is about something
    assert _control_names_quoted('on_failure = "pause"\nwaiting = {"for": "advance"}\nclosed_by == "advance"') == []
    sources = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
    elsewhere = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources if COMMANDS_HOME not in path.parents
        for number in _control_names_quoted(path.read_text())
    ]
    assert elsewhere == [], f"a control's name is written only in chalicelib/events/commands/: {elsewhere}"


def _controls_given_as_literals(source: str) -> list[int]:
    """The lines where a literal is given as a log row's control, whatever its word: the `control` of a journal
    builder (by position or by keyword), any `control=` argument, or a dict's "control" entry."""
    builders: dict[str, int | None] = {}  # a builder's name -> the position of its control (None: by keyword only)
    for name, function in vars(journal).items():
        parameters = list(inspect.signature(function).parameters.values()) if inspect.isfunction(function) else []
        for position, parameter in enumerate(parameters):
            if parameter.name == "control":
                builders[name] = position if parameter.kind is parameter.POSITIONAL_OR_KEYWORD else None

    def literal(node: ast.expr) -> bool:
        return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))

    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
            at = builders.get(called)
            positional = at is not None and at < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args[:at + 1])
            if (at is not None and positional and literal(node.args[at])) \
                    or any(k.arg == "control" and literal(k.value) for k in node.keywords):
                found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            found += [v.lineno for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "control" and literal(v)]
    return sorted(set(found))


def test_a_log_rows_control_is_never_a_literal():
    """The control a log row names is a command's `name`, or a named word of the commands for a press that is
    no declared control (`commands.SKIP_OCCURRENCE`): no chalicelib module writes it as a literal, whatever
    the word, so a new one cannot slip past CONTROL_NAMES."""
    caught = ('journal.run_control(run, "skip_occurrence", to, actor)', 'run_advance(run, "nudge", 2, actor)',
              'journal.chat_pressed(step, actor, "wave")', 'journal.run_status(1, None, a, b, control="x")',
              'row = {"control": f"{name}"}')
    assert all(_controls_given_as_literals(line) == [1] for line in caught)  # the rule is about something
    assert _controls_given_as_literals('journal.run_control(run, Pause.name, to, "runner", reason="x")') == []
    sources = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sources for number in _controls_given_as_literals(path.read_text())]
    assert found == [], f"a log row's control is named from chalicelib/events/commands/: {found}"


def _imported_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from module import name` in the file, the module resolved to its full name."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            found += [(base, alias.name) for alias in node.names]
    return found


def _python_sources() -> list[Path]:
    return [ROOT / "app.py", *(p for tree in ("chalicelib", "tests", "bench", "devtools") for p in sorted((ROOT / tree).rglob("*.py")))]


def test_the_lifecycle_has_one_import_door():
    """Its words are imported from `chalicelib.events.lifecycle`, never from a module inside it, nor from a
    module that imported them (the model's door re-exports none)."""
    from chalicelib.events import lifecycle

    package = ROOT / "chalicelib" / "events" / "lifecycle"
    words = {name for name in lifecycle.__all__ if not inspect.isfunction(getattr(lifecycle, name))}
    wrong = [
        f"{path.relative_to(ROOT)}: from {module} import {name}"
        for path in _python_sources() if not path.is_relative_to(package)
        for module, name in _imported_names(path)
        if module.startswith("chalicelib.events.lifecycle.")
        or (name in words and module.startswith("chalicelib") and module != "chalicelib.events.lifecycle")
    ]
    assert wrong == []


# The phase and wait vocabularies (lifecycle/phases.py, waits.py, steps.py): each word is written only in
# its home. A word with no other meaning in the code is refused wherever it is quoted whole; a word that
# is also another vocabulary's (a control's name: advance, pause, resume, confirm; a phase's or a
# receipt's `signal` field; a notice's kind or the banner style `cue`; the cue's attention timer
# `timeout`; the HTTP header `Connection: close`; the cue's `continue`) is refused where it is compared
# with, or given to, a field of the vocabulary, and inside SQL text as a quoted literal.
_VOCABULARY_FIELDS = r"(?:\bwhen|closed_by|waiting_for|on_timeout|on_deadline|\beffect|park_reason|\.for|[\"']for[\"'])"
_SHARED = {"advance", "signal", "cue", "pause", "resume", "close", "confirm", "continue", "timeout"}


def _vocabulary_words() -> set[str]:
    from chalicelib.events import lifecycle

    enums = (lifecycle.ConditionKind, lifecycle.ClosedBy, lifecycle.WaitingFor, lifecycle.OnTimeout,
             lifecycle.OnDeadline, lifecycle.SignalEffect, lifecycle.ParkReason, lifecycle.CueOnTimeout,
             lifecycle.CleanupOn)
    return {word.value for enum in enums for word in enum}


def _given_to_a_field(words: set[str]) -> re.Pattern[str]:
    alternatives = "|".join(sorted(words))
    quoted = rf"[\"']({alternatives})[\"']"
    return re.compile(rf"{_VOCABULARY_FIELDS}[\"']?\s*(?:===?|!==?|:|=|\bis\b|\bin\b|<>)\s*\(?{quoted}"
                      rf"|{quoted}\s*(?:===?|!==?)\s*\S*{_VOCABULARY_FIELDS}|\bcase\s+{quoted}")


def _code_lines(source: str) -> list[tuple[int, str]]:
    """(number, line) of the source's code: comments cut off, docstrings (prose, not code) left out."""
    prose = {n for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
             for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            number, column = token.start
            lines[number - 1] = lines[number - 1][:column]
    return [(n, line) for n, line in enumerate(lines, 1) if n not in prose]


def test_phase_and_wait_words_are_written_only_in_the_lifecycle():
    """A condition kind, `closed_by`, `waiting_for`, `on_timeout`/`on_deadline`, a signal effect, a park
    reason, a cue's `on_timeout` or a `cleanup_on` is named in chalicelib's Python only through its enum
    (and in SQL only through `PhaseSQL`, `WaitSQL`, `StepSQL`); its home is `chalicelib/events/lifecycle/`."""
    words = _vocabulary_words()
    assert words >= _SHARED  # each shared word is one of them
    distinct = words - _SHARED
    in_sql = re.compile(r"'(" + "|".join(sorted(words)) + r")'")
    given = _given_to_a_field(words)
    home = ROOT / "chalicelib" / "events" / "lifecycle"
    found = []
    for path in [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]:
        if path.is_relative_to(home):
            continue
        source = path.read_text()
        prose = {n for n, _ in enumerate(source.splitlines(), 1)} - {n for n, _ in _code_lines(source)}
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.lineno not in prose and (
                    node.value in distinct or in_sql.search(node.value)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
        found += [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for n, line in _code_lines(source) if given.search(line)]
    assert found == [], f"a word of the phase and wait vocabularies is written as its enum (lifecycle): {found}"


def test_the_console_switches_on_no_phase_or_wait_word():
    """The console reads these words, their labels and the facts it decides by from GET /vocabulary: no
    console file compares with, switches on or lists one of them."""
    words = _vocabulary_words()
    distinct = re.compile(r"""['"`](""" + "|".join(sorted(words - _SHARED)) + r""")['"`]""")
    given = _given_to_a_field(words)
    static = ROOT / "chalicelib" / "console" / "static"
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(static.glob("*.js")) + sorted(static.glob("*.html"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if given.search(line) or distinct.search(line.split("//")[0] if "://" not in line else line)
    ]
    assert found == []
