"""The mutation harness's own runs: a test run it starts behaves as one started from a terminal."""

import signal
import textwrap

import pytest

from tests.mutation.engine import run_tests

PROBE = textwrap.dedent('''
    import signal


    def test_ctrl_c_is_a_keyboard_interrupt():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
''')


@pytest.mark.slow
def test_a_test_run_gets_the_default_ctrl_c_even_from_a_shell_that_ignores_it(tmp_path):
    """`make mutate` from a background job inherits an ignored SIGINT; its test runs must not (issue 23, item 15)."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, output = run_tests(tmp_path, ["test_probe.py"], timeout=60)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 0, output
