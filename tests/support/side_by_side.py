"""`make test`'s second half: the torture suite and the other long tests as two pytest runs side by side.

Each run keeps to one process, so nothing else of its own kind skews its timing, and each is mostly
waiting (on the database, a peer, a deadline): one after the other they left a core idle. They are two
plain pytest runs, not xdist workers, because schemathesis's cases share one test id, which xdist's
grouping would fold into one. The torture run's report is held and printed whole after the other's, so
the two never interleave; the exit code fails if either run failed, and Ctrl-C stops both.

    python -m tests.support.side_by_side [pytest arguments for both runs]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

LONG = "torture or slow"
# tests/torture/ on one side; on the other the long tests outside it (the end-to-end processes, R10,
# the sleep proofs), which weigh about the same.
TORTURE = ["tests/torture", "-m", LONG, "-p", "no:cacheprovider"]  # one writer of .pytest_cache: the other run
THE_REST = ["tests", "-m", LONG, "--ignore=tests/torture"]


def main(shared: list[str], beside: list[str] = TORTURE, ahead: list[str] = THE_REST) -> int:
    """Run `ahead` in this terminal while `beside` runs into a held report; 0 only if both passed."""
    pytest = [sys.executable, "-m", "pytest", *shared]
    print(f"{beside[0]} runs beside these tests; its report follows theirs", flush=True)
    with tempfile.TemporaryFile() as report:
        held = subprocess.Popen([*pytest, *beside], stdout=report, stderr=subprocess.STDOUT)
        try:
            ahead_code = subprocess.call([*pytest, *ahead])
            beside_code = held.wait()
        finally:
            if held.poll() is None:  # Ctrl-C, or the run ahead could not start: stop the held one too
                held.terminate()
                held.wait()
        report.seek(0)
        print(f"\n── {beside[0]}, run beside ──", flush=True)
        sys.stdout.buffer.write(report.read())
        sys.stdout.flush()
    return ahead_code or beside_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
