"""docs/contributing.md's worked examples ("Add a control", "Add a phase condition") say how many files a
change of their kind touches and list them, each with a name it holds: each file exists, holds that name,
and the count the text gives is the count of files listed. The example's own names (the `Resend` command,
the `Manual` condition) are found in no engine file the example leaves out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contributing.md"
ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \| .+ \| `(.+)` \|$")

# What only the example's own change wrote, in the engine's code: its command or condition and what names it.
OWN_NAMES = {
    "Add a control": re.compile(r"\bResend\b|\bresend_refusal\b|(?<!OnDoubt\.)\bRESEND\b(?! = \")|\bdef resend\b"),
    "Add a phase condition": re.compile(r"\bManual\b|\bConditionKind\.MANUAL\b|\bdef advance_phase\b"),
}


def _section(title: str) -> str:
    text = GUIDE.read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else len(text)]


def _rows(section: str) -> list[tuple[int, str, str]]:
    return [(int(m[1]), m[2], m[3]) for line in section.splitlines() if (m := ROW.match(line))]


@pytest.mark.parametrize("title", sorted(OWN_NAMES))
def test_a_worked_example_touches_the_files_it_counts_and_each_holds_what_it_names(title):
    section = _section(title)
    stated = re.search(r"touches\s+\*\*(\d+) files\*\*", section)
    assert stated is not None, f"{title}: the example says how many files it touches"
    rows = _rows(section)
    assert [number for number, _, _ in rows] == list(range(1, len(rows) + 1)), f"{title}: rows numbered in order"
    paths = [path for _, path, _ in rows]
    assert len(set(paths)) == len(paths) == int(stated[1]), f"{title}: says {stated[1]} files, lists {len(paths)}"
    missing = [path for path in paths if not (ROOT / path).is_file()]
    assert missing == [], f"{title}: no such file"
    lacking = [f"{path}: {name}" for _, path, name in rows if name not in (ROOT / path).read_text()]
    assert lacking == [], f"{title}: the file does not hold what the example names"


@pytest.mark.parametrize("title", sorted(OWN_NAMES))
def test_a_worked_examples_own_names_are_in_no_engine_file_it_leaves_out(title):
    listed = {path for _, path, _ in _rows(_section(title))}
    engine = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py")), *sorted((ROOT / "chalicelib").rglob("*.js"))]
    holding = {str(path.relative_to(ROOT)) for path in engine if OWN_NAMES[title].search(path.read_text())}
    assert holding, f"{title}: the example's names are found somewhere (the check is about something)"
    assert sorted(holding - listed) == [], f"{title}: the example also touches these files; list them"
