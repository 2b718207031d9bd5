"""A test run leaves the tracked screenshots (docs/screens/) as committed: a doc screenshot goes to .local/, and
into docs/screens/ too only under `make screens`."""

import struct
import subprocess

from tests.console import browser as shots
from tests.console.browser import DOC_WIDTH, LAPTOP

ROOT = shots.ROOT


def _width_of(png: bytes) -> int:
    return struct.unpack(">I", png[16:20])[0]  # the IHDR chunk's width


def test_a_doc_screenshot_reaches_docs_screens_only_when_asked(chromium, tmp_path, monkeypatch):
    local, docs = tmp_path / "local", tmp_path / "docs"
    monkeypatch.setattr(shots, "DOC_SHOTS", local)
    monkeypatch.setattr(shots, "DOC_SCREENS", docs)
    monkeypatch.delenv(shots.UPDATE_DOC_SCREENS, raising=False)
    chromium.set_window_size(*LAPTOP)
    chromium.get("data:text/html,<h1>Runs</h1>")

    taken = shots.doc_screenshot(chromium, "runs-list")
    assert taken == local / "runs-list.png" and _width_of(taken.read_bytes()) == DOC_WIDTH[0]
    assert not docs.exists()
    assert chromium.get_window_size() == {"width": LAPTOP[0], "height": LAPTOP[1]}  # the test goes on at its size

    monkeypatch.setenv(shots.UPDATE_DOC_SCREENS, "1")
    shots.doc_screenshot(chromium, "runs-list")
    assert (docs / "runs-list.png").read_bytes() == (local / "runs-list.png").read_bytes()


def test_make_screens_asks_for_them_and_make_test_does_not():
    def recipe(target: str) -> str:
        return subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    assert f"{shots.UPDATE_DOC_SCREENS}=1" in recipe("screens")
    assert shots.UPDATE_DOC_SCREENS not in recipe("test")
