"""The README and docs/ point only at things that exist: every relative link (and its #anchor) and every `make`
target they name, so a reader who follows one never lands on nothing. The README stays short."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"(?<![\w/.-])make(?:\s+-[a-zA-Z]+)*\s+([a-z][a-z-]*)\b(?!=)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", path.read_text())
    found = set()
    for heading in re.findall(r"^#+\s+(.*)$", text, re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", path.read_text()))


def code(path: Path) -> str:
    text = path.read_text()
    return "\n\0".join([*FENCE.findall(text), *CODE_SPAN.findall(FENCE.sub("", text))])  # \0: no match across spans


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))


def test_every_relative_link_and_anchor_in_the_docs_exists():
    broken = []
    for doc in DOCS:
        for target in links(doc):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: outside the repository
            file_part, _, anchor = target.partition("#")
            linked = (doc.parent / file_part).resolve() if file_part else doc
            if not linked.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_make_target_the_docs_name_exists():
    targets = makefile_targets()
    named = {(doc.relative_to(ROOT), target) for doc in DOCS for target in MAKE.findall(code(doc))}
    assert {target for _, target in named} >= {"dev", "test"}  # the check reads what it should
    assert sorted(f"{doc}: make {target}" for doc, target in named if target not in targets) == []


def test_a_link_to_a_missing_file_or_heading_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A heading: with `code`, and more\n\n[ok](#a-heading-with-code-and-more) [bad](#nowhere)\n")
    assert links(page) == ["#a-heading-with-code-and-more", "#nowhere"]
    assert anchors(page) == {"a-heading-with-code-and-more"}


def test_the_readme_stays_short_and_keeps_the_test_command():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    first = re.search(r"make test|pytest[^`]*", readme)
    assert first and first.group(0) == "make test"  # the command CI runs (.ci/run) is the one a reader sees first
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_file_a_curl_example_sends_exists():
    named = {(doc.relative_to(ROOT), path) for doc in DOCS for path in re.findall(r"-d @(\S+)", code(doc))}
    assert named, "the check reads what it should"
    assert sorted(f"{doc}: {path}" for doc, path in named if not (ROOT / path).is_file()) == []
