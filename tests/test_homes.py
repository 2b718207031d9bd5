"""Each concept keeps one home: these fail when code grows a second one."""

import importlib
import inspect
import pkgutil
from pathlib import Path

import chalicelib
from chalicelib.events import journal

ROOT = Path(__file__).resolve().parent.parent

ERRORS_MODULE = "chalicelib.events.errors"


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
        and module.__name__ != ERRORS_MODULE
    )
    assert elsewhere == [], f"exception classes belong in {ERRORS_MODULE}: {elsewhere}"


def test_log_kinds_are_written_as_literals_only_in_the_journal():
    quoted = [f'"{kind}"' for kind in journal.KINDS] + [f"'{kind}'" for kind in journal.KINDS]
    sources = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
    elsewhere = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        if path != ROOT / "chalicelib" / "events" / "journal.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if any(literal in line for literal in quoted)
    ]
    assert elsewhere == [], f"log kinds are named only in chalicelib/events/journal.py: {elsewhere}"
