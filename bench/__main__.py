"""`python -m bench [--quick] [--only P1,P4,…]`: every benchmark, then one table.

Sizes (defaults: a few minutes on a 2-core machine; --quick: a smoke run under a minute):

    P1/P2  runs × instant steps drained by one tick worker, and the bare floor    200 × 20  |  20 × 10
    P4     due runs ticked over terminal runs and log rows               1,000 over 100,000 / 1,000,000  |  200 over 10,000 / 100,000
    P5/P6  runs × steps drained by 1, 2, 4 and 8 tick worker processes            300 × 10 each  |  30 × 5
    P6     control requests (pause/resume pairs) in-process and bare              200  |  30
    P10    running runs paused by one bulk press, vs one press per run            1,000  |  100
    peer   one-step jobs through django-tasks' database backend                   = P1's steps  |  = P1's steps
    bridge runs × 2 module steps, the game bridge answering after 50 ms            64 × 2  |  24 × 2
    shards runs × 2 module steps, 50 ms bridge: 1 tick process vs 2 sharding them  240 × 2  |  48 × 2
    P8     a tick over runs needing nobody + 1 due, vs the due run alone      10,000  |  2,000
    P9     50 waits of 1-5 s and 50 confirms through `python -m chalicelib tick`  same in both
    P11    chat presses each of Discord, console and Slack, warm; Discord presses, database silent  200; 12  |  30; 3
    P12    a change drawn on a run page in Chromium, a run of N steps vs one of 200, best of 6 | 3  9,800  |  2,000
    cold   import time (median of 7 fresh interpreters), the prod package with and without bytecode   same in both
    costs  20 runs × 2 and × 20 instant steps: a tick invocation's log bytes and metrics, a drain's redo and commits;
           50 runs × 2 and × 100: the database's growth   5 rounds  |  3
    lambda_cpu  P9 and runs × 2 module steps (50 ms bridge), a tick per CPU share: none, 512, 256 MB   64 × 2, 3 rounds  |  24, 1

Speed figures are interleaved `rounds` times (2, quick 1) and the best of each side kept;
P1 and P8 take five interleaved rounds and the median of each side, every round printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from . import (
    bridge_pool,
    cold_start,
    cost_inputs,
    lambda_cpu,
    p1_throughput,
    p3_materialise,
    p4_history,
    p5_scaling,
    p6_controls,
    p8_idle_runs,
    p9_on_time,
    p10_bulk,
    p11_interactions,
    p12_run_page,
    peer,
    shards,
)
from .harness import Figure, table
from .workload import quiet_channels


@dataclass(frozen=True)
class Sizes:
    rounds: int
    throughput_runs: int
    throughput_steps_per_run: int
    history_due_runs: int
    history_terminal_runs: int
    history_log_rows: int
    scaling_runs: int
    scaling_steps_per_run: int
    control_requests: int
    bulk_runs: int
    chat_presses: int
    deferred_presses: int


DEFAULT = Sizes(rounds=2, throughput_runs=200, throughput_steps_per_run=20, history_due_runs=1000,
                history_terminal_runs=100_000, history_log_rows=1_000_000, scaling_runs=300,
                scaling_steps_per_run=10, control_requests=200, bulk_runs=1000, chat_presses=200,
                deferred_presses=12)
QUICK = Sizes(rounds=1, throughput_runs=20, throughput_steps_per_run=10, history_due_runs=200,
              history_terminal_runs=10_000, history_log_rows=100_000, scaling_runs=30,
              scaling_steps_per_run=5, control_requests=30, bulk_runs=100, chat_presses=30, deferred_presses=3)

BENCHMARKS = {
    "P1": p1_throughput.run,  # P1 and P2
    "P3": p3_materialise.run,
    "P4": p4_history.run,
    "P5": p5_scaling.run,  # P5 and P6's claim → terminal latency
    "P6": p6_controls.run,
    "P8": p8_idle_runs.run,  # P8 and the idle loop's reads per second
    "P9": p9_on_time.run,  # due and confirmed steps dispatched on time; the tick's wall seconds for the cost model
    "P10": p10_bulk.run,  # N runs paused by one bulk press vs one press each
    "P11": p11_interactions.run,  # issue 42: a chat press answered, the database warm and silent
    "P12": p12_run_page.run,  # a long run's console page: a change drawn, 9,800 steps vs 200 (Chromium)
    "peer": peer.run,
    "bridge": bridge_pool.run,  # issue 3: a 50 ms bridge, default pool vs pool of 1
    "shards": shards.run,  # issue 22: two tick processes sharding one backlog vs one, a 50 ms bridge
    "cold": cold_start.run,  # import time of the app and the tick path, and the package size
    "costs": cost_inputs.run,  # the cost model's log bytes per step and per invocation, redo, commits and database bytes per step
    "lambda_cpu": lambda_cpu.run,  # the tick at 512 MB's and 256 MB's CPU share (a CFS quota) vs none: P9, a drain, RSS
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke-sized run (under a minute)")
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        help=f"comma-separated subset of {', '.join(BENCHMARKS)} (default: all)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    sizes = QUICK if args.quick else DEFAULT
    quiet_channels()
    figures: list[Figure] = []
    started = time.monotonic()
    for name in chosen:
        print(f"── {name} …", file=sys.stderr, flush=True)
        figures.extend(BENCHMARKS[name](sizes))
    print(table(figures))
    print(f"\n{'quick' if args.quick else 'default'} sizes; {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0  # a missed target is a finding the table reports, not a failure of the command


if __name__ == "__main__":
    sys.exit(main())
