"""lambda_cpu: the tick at Lambda's CPU share — 512 MB against 256 MB, the same process with no quota the baseline.

Lambda gives a function CPU in proportion to its memory (1,769 MB is one vCPU),
so the tick at 512 MB has about 0.289 of a vCPU and at 256 MB about 0.145. Here
the tick is a real process (`python -m chalicelib tick`, as P9 runs it: the
Lambda's loop and runner, 8 workers) started inside a cgroup v1 cpu group whose
CFS quota is that share of each 100 ms period (`/sys/fs/cgroup/cpu`, root
only); the database, the game bridge and the API stay outside it, as they do on
AWS. The baseline's group has no quota. Each round starts one tick process per
share, the shares' order turning from round to round, and measures with it, in
this order:

- a drain: runs × 2 module steps, all due, against the bridge answering after
  50 ms (the bridge benchmark's workload at the deployed pool of 8): steps/s
  from the first step's request at the bridge to the last's, and the process's
  CPU time per step. A short drain first, untimed, warms the process. This is
  the drain, not P1's instant steps, because it is the deployed workload and
  still needs more CPU than either share gives (2.5–3 CPU ms a step at 130
  steps/s, 0.3–0.4 of a vCPU), so it shows what each share costs it; instant
  steps keep a core busy at any share, so their ratio would only restate the quota;
- P9's two latencies, due time → the step's request at the bridge and a
  confirm's answer → the next step's request (`p9_on_time`);
- the time from the process's start to its start line (imports, the runner
  built), its peak RSS (VmHWM), its CPU seconds and the periods the quota
  throttled it.

The latencies are pooled over the rounds, the drain and the start keep each
share's best, the RSS its highest. Without a cpu controller to write to (not
root, cgroup v2 only), it says so in one line and measures nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from chalicelib.db import Database, must_exist
from devtools.kit.game_bridge import Answer, GameBridge

from . import p9_on_time
from .harness import Figure, at_most, distribution, median, percentile, scratch_database
from .workload import schedule_runs

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000
ONE_VCPU_MB = 1769  # Lambda: a function at 1,769 MB has the equivalent of one vCPU, less in proportion
LAMBDA_RUNTIME_MB = 40  # what Lambda's Python runtime holds beside the handler's process
DRAIN_ACTION = "world.build"  # the drain's module step; P9's is world.spawn, answered at once
BRIDGE_DELAY_SECONDS = 0.05
WARM_UP_RUNS = 8
# More rounds than the harness's two: at 256 MB the tick that starts P9's 50 runs may outlast the first wait's
# second or not, and the waits' distribution with it.
ROUNDS = 3


@dataclass(frozen=True)
class Share:
    name: str
    memory_mb: int | None  # None: no quota (the baseline)

    @property
    def quota_us(self) -> int:
        """The CFS quota per period: the memory's share of a vCPU; -1, none."""
        return -1 if self.memory_mb is None else round(PERIOD_US * self.memory_mb / ONE_VCPU_MB)

    @property
    def vcpu(self) -> str:
        return "no quota" if self.memory_mb is None else f"{self.quota_us / PERIOD_US:.3f} vCPU"


BASELINE = Share("no quota", None)
SHARES = (BASELINE, Share("512 MB", 512), Share("256 MB", 256))


# ── the cpu group ─────────────────────────────────────────────────────────
@contextmanager
def cpu_group(name: str, quota_us: int, root: Path = CGROUP_CPU) -> Iterator[Path]:
    """A cgroup v1 cpu group of `quota_us` per 100 ms period under `root`, removed at the end (whatever it
    still holds moved back to `root` first)."""
    group = root / name
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota_us))
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            try:
                (root / "cgroup.procs").write_text(pid)
            except ProcessLookupError:
                pass  # it exited meanwhile
        group.rmdir()


def unavailable(root: Path = CGROUP_CPU) -> str | None:
    """Why no CPU quota can be set under `root` (None: one can): a group is made, given a quota and removed."""
    try:
        with cpu_group(f"events_bench_probe_{os.getpid()}", PERIOD_US, root):
            return None
    except OSError as error:
        return f"{error.strerror or error} ({error.filename or root})"


def launcher(group: Path) -> list[str]:
    """A command that moves itself into `group`, then execs its arguments (same pid, so its children are in it)."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs")]


def throttled(group: Path) -> tuple[int, int, float]:
    """(periods, periods throttled, seconds throttled) of `group` so far."""
    stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
    return int(stat["nr_periods"]), int(stat["nr_throttled"]), int(stat["throttled_time"]) / 1e9


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process (its threads included) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


# ── one tick process at one share ─────────────────────────────────────────
def _drain_document(steps: int) -> dict:
    return {"name": "Lambda CPU drain", "grace_seconds": 3600, "ending": [],
            "phases": [{"name": "main", "steps": [{"action": DRAIN_ACTION, "params": {"i": i}} for i in range(steps)]}]}


def drain_steps_per_second(db: Database, bridge: GameBridge, runs_count: int, label: str) -> float:
    """`runs_count` due runs × 2 module steps, drained by the running tick process: steps/s from the first
    request at the bridge to the last."""
    run_ids = set(schedule_runs(db, _drain_document(2), runs_count, label=label))
    wanted, deadline = runs_count * 2, time.monotonic() + 300
    while True:
        arrivals = sorted(r.at for r in bridge.received(DRAIN_ACTION) if r.json["run_id"] in run_ids)
        if len(arrivals) == wanted:
            return (wanted - 1) / (arrivals[-1] - arrivals[0])
        if time.monotonic() > deadline:
            raise RuntimeError(f"lambda_cpu: {len(arrivals)} of {wanted} drain steps reached the game bridge")
        time.sleep(0.05)


@dataclass(frozen=True)
class TickProcess:
    process: subprocess.Popen
    group: Path
    start_seconds: float  # from the process's start to its start line (imports, settings, the runner built)


@contextmanager
def tick_at(share: Share, db: Database, bridge: GameBridge, label: str, root: Path) -> Iterator[TickProcess]:
    """`python -m chalicelib tick` in a cpu group of its own at `share`, ticking; stopped as Ctrl-C stops it."""
    with cpu_group(f"events_bench_{label}_{os.getpid()}", share.quota_us, root) as group:
        started = time.monotonic()
        process = p9_on_time.tick_process(db, bridge, launcher(group))
        try:
            for line in must_exist(process.stderr):  # what it says before its start line
                if line.startswith("ticking"):
                    break
            else:
                raise RuntimeError(f"lambda_cpu: the tick process ended before ticking: {process.communicate()[1][-3000:]}")
            yield TickProcess(process, group, time.monotonic() - started)
        finally:
            process.send_signal(signal.SIGINT)  # Ctrl-C: the workers finish the step in hand
            try:
                _, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                _, err = process.communicate()
            if "Traceback" in err:
                print(f"lambda_cpu: the tick process failed:\n{err[-3000:]}", file=sys.stderr)


@dataclass
class Pass:
    start_seconds: float
    drain: float  # steps/s
    drain_cpu_ms_per_step: float
    waits: list[float]  # seconds
    confirms: list[float]
    peak_rss_mb: float
    cpu_seconds: float
    periods: int
    periods_throttled: int
    seconds_throttled: float


def one_pass(db: Database, bridge: GameBridge, share: Share, runs_count: int, label: str, root: Path) -> Pass:
    with tick_at(share, db, bridge, label, root) as tick:
        pid = tick.process.pid
        drain_steps_per_second(db, bridge, WARM_UP_RUNS, f"{label}-warm")
        cpu_before = cpu_seconds(pid)
        drain = drain_steps_per_second(db, bridge, runs_count, label)
        drain_cpu = cpu_seconds(pid) - cpu_before
        waits = p9_on_time.wait_latencies(db, bridge)
        confirms = p9_on_time.confirm_latencies(db, bridge)
        return Pass(tick.start_seconds, drain, drain_cpu * 1000 / (runs_count * 2), waits, confirms, peak_rss_mb(pid),
                    cpu_seconds(pid), *throttled(tick.group))


# ── the benchmark ─────────────────────────────────────────────────────────
@dataclass
class Measured:
    share: Share
    passes: list[Pass] = field(default_factory=list)

    def pooled(self, attribute: str) -> list[float]:
        return [value for p in self.passes for value in getattr(p, attribute)]

    @property
    def drain(self) -> float:
        return max(p.drain for p in self.passes)

    @property
    def peak_rss_mb(self) -> float:
        return max(p.peak_rss_mb for p in self.passes)

    @property
    def start_seconds(self) -> float:
        return min(p.start_seconds for p in self.passes)


def _report(measured: Measured) -> str:
    share = measured.share
    lines = [f"{share.name} ({share.vcpu}, quota {share.quota_us} µs per {PERIOD_US} µs):",
             "  " + distribution("due_at -> dispatch", measured.pooled("waits")),
             "  " + distribution("confirm -> next dispatch", measured.pooled("confirms"))]
    for number, p in enumerate(measured.passes, 1):
        waits, confirms = ([median(v) * 1000, percentile(v, 99) * 1000] for v in (p.waits, p.confirms))
        lines.append(f"  round {number}: due_at -> dispatch median {waits[0]:.0f} ms, p99 {waits[1]:.0f};"
                     f" confirm -> next dispatch median {confirms[0]:.0f}, p99 {confirms[1]:.0f};"
                     f" started in {p.start_seconds:.2f} s; drain {p.drain:.1f} steps/s,"
                     f" {p.drain_cpu_ms_per_step:.1f} CPU ms a step; peak RSS {p.peak_rss_mb:.1f} MB; {p.cpu_seconds:.1f} CPU s"
                     f" in all, throttled in {p.periods_throttled} of {p.periods} periods ({p.seconds_throttled:.1f} s)")
    return "\n".join(lines)


def _figures(measured: Measured, baseline: Measured) -> list[Figure]:
    name = f"at {measured.share.name} ({measured.share.vcpu})"
    figures = []
    for attribute, what, targets in (
            ("waits", "due_at -> dispatch", (p9_on_time.MEDIAN_TARGET, p9_on_time.P99_TARGET)),
            ("confirms", "confirm (API) -> next dispatch", (None, p9_on_time.CONFIRM_P99_TARGET))):
        for statistic, of, target in (("median", median, targets[0]), ("p99", lambda v: percentile(v, 99), targets[1])):
            figures.append(Figure(
                "lambda_cpu", f"{name}, {what}, {statistic}", of(measured.pooled(attribute)) * 1000, "ms",
                baseline=of(baseline.pooled(attribute)) * 1000, baseline_what="(no quota)",
                target=None if target is None else at_most(target * 1000)))
    figures += [
        Figure("lambda_cpu", f"{name}, drain, 50 ms bridge, pool of 8", measured.drain, "steps/s",
               baseline=baseline.drain, baseline_what="(no quota)"),
        Figure("lambda_cpu", f"{name}, the process's start to its first look (imports, the runner built)",
               measured.start_seconds * 1000, "ms", baseline=baseline.start_seconds * 1000, baseline_what="(no quota)"),
        Figure("lambda_cpu", f"{name}, the tick's peak RSS (≤ the memory less the runtime's {LAMBDA_RUNTIME_MB} MB)",
               measured.peak_rss_mb, "MB", baseline=baseline.peak_rss_mb, baseline_what="(no quota)",
               target=at_most(must_exist(measured.share.memory_mb) - LAMBDA_RUNTIME_MB)),
    ]
    return figures


def run(sizes, root: Path | None = None) -> list[Figure]:
    root = root or CGROUP_CPU
    reason = unavailable(root)
    if reason is not None:
        print(f"lambda_cpu: skipped, no CPU quota can be set here: {reason}. It needs root and a cgroup v1 cpu"
              f" controller at {root}; nothing measured.", flush=True)
        return []
    runs_count, rounds = (24, 1) if sizes.rounds == 1 else (64, ROUNDS)
    measured = {share: Measured(share) for share in SHARES}
    with scratch_database("lambda_cpu") as db, GameBridge() as bridge:
        bridge.respond(DRAIN_ACTION, lambda _: Answer(delay=BRIDGE_DELAY_SECONDS))
        for round_number in range(rounds):
            turn = round_number % len(SHARES)  # interleaved, each share first in turn
            for share in SHARES[turn:] + SHARES[:turn]:
                label = f"{(share.memory_mb or 0)}mb{round_number}"
                print(f"   lambda_cpu: round {round_number + 1}, {share.name} …", file=sys.stderr, flush=True)
                measured[share].passes.append(one_pass(db, bridge, share, runs_count, label, root))
    print("\nlambda_cpu (ms, sorted, pooled over the rounds):\n" + "\n".join(_report(m) for m in measured.values()))
    baseline = measured[BASELINE]
    return [figure for share in SHARES if share is not BASELINE for figure in _figures(measured[share], baseline)]
