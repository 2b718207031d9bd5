"""`make test`'s second half (tests/support/side_by_side.py): two pytest runs at once, reports apart, one verdict."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import side_by_side

pytestmark = pytest.mark.realtime  # each starts two pytest runs

HERE = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path, beside: str, ahead: str) -> tuple[int, str]:
    (tmp_path / "beside").mkdir()
    (tmp_path / "ahead").mkdir()
    (tmp_path / "beside" / "test_beside.py").write_text(beside)
    (tmp_path / "ahead" / "test_ahead.py").write_text(ahead)
    script = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from tests.support import side_by_side; "
              f"sys.exit(side_by_side.main(['-v', '-p', 'no:cacheprovider', '--rootdir', {str(tmp_path)!r}], "
              f"beside=[{str(tmp_path / 'beside')!r}], ahead=[{str(tmp_path / 'ahead')!r}]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    return done.returncode, done.stdout


def _meets(mine: str, theirs: str) -> str:
    """A test that passes only while the other run is running too: each leaves a mark and waits for the other's."""
    return (f"import time\nfrom pathlib import Path\n\ndef test_meets():\n"
            f"    Path({mine!r}).touch()\n"
            f"    deadline = time.monotonic() + 30\n"
            f"    while not Path({theirs!r}).exists():\n"
            f"        assert time.monotonic() < deadline, 'the other run never ran at the same time'\n"
            f"        time.sleep(0.05)\n")


def test_both_runs_run_at_once_and_the_held_report_follows_whole(tmp_path):
    code, out = _run(tmp_path, _meets(str(tmp_path / "b"), str(tmp_path / "a")),
                     _meets(str(tmp_path / "a"), str(tmp_path / "b")))
    assert code == 0, out
    assert out.index("test_ahead.py") < out.index("run beside ──") < out.index("test_beside.py"), out
    assert out.count("1 passed") == 2, out


@pytest.mark.parametrize("which", ["beside", "ahead"])
def test_a_failure_on_either_side_fails_the_whole(tmp_path, which):
    failing = "def test_fails():\n    assert False, 'this side failed'\n"
    passing = "def test_passes():\n    pass\n"
    code, out = _run(tmp_path, failing if which == "beside" else passing, failing if which == "ahead" else passing)
    assert code != 0
    assert "this side failed" in out


def test_make_test_runs_the_torture_directory_beside_the_other_long_tests():
    assert side_by_side.TORTURE[0] == "tests/torture" and "--ignore=tests/torture" in side_by_side.THE_REST
    makefile = (HERE / "Makefile").read_text()
    assert "-m tests.support.side_by_side" in makefile
