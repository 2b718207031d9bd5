"""The cost model's per-step inputs, measured on the real paths (`python -m bench --only costs`).

Invariant: every figure printed here comes from the engine's own output, never
from an estimate:

- log bytes: the tick Lambda's handler (`app.tick`, middleware and all) is
  invoked as Lambda invokes it, with the settings and the log level the prod
  stage deploys, over runs of instant steps on a scratch database; everything
  it writes to standard output and standard error (JSON log lines and the EMF
  metrics document) is counted. Two invocations differ only in their steps, so
  the bytes per step are their difference divided by the difference in steps,
  and what an invocation writes whatever its steps cancels out; a third, its
  runs due a second apart, differs only in its ticks (one per run). The instant
  steps are `core.announce` on the `log` channel: their notice lines are the
  announcements themselves (the deployed templates post notices to SNS), so
  they are counted apart from the engine's own bytes.
- redo bytes and commits: InnoDB's `Innodb_os_log_written` and the server's
  `Com_commit` before and after one tick drains instant steps (eight workers,
  as deployed), again a long drain less a short one so that starting and
  ending runs cancel, the median of a few rounds. InnoDB's purge of the old
  row versions a drain leaves writes redo too, so each reading waits for the
  purge to finish. Both counters are global: the figure is taken on a mariadbd
  of our own that nothing else writes to (the tests' binary, started in a
  throwaway folder), and printed beside the same measurement on the shared
  server (a scratch database there, no wait for a purge others keep busy),
  which includes whatever the tests write meanwhile.

Aurora bills write I/Os in 4 KB units of redo log records ("a log record that
is 1024 bytes will count as one write I/O operation", Amazon Aurora FAQs) and
batches small concurrent records into one ("Planning I/O in Amazon Aurora",
AWS Database Blog), so a commit costs at most ceil(redo bytes / 4096) write
I/Os (the figure the cost model takes) and at least redo bytes / 4096 (were
every record batched into full units). Aurora's engine is not MariaDB's: the
redo is the same rows, indexes and undo written, not the same bytes.

The invocation's time (monotonic, and the run clock with it) moves only when
it sleeps: it drains its runs and ends its minute at once, without waiting.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
import math
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from chalicelib import observability, runtime
from chalicelib.config import Settings
from chalicelib.db import ConnectionParams, Database, DatabaseClock
from chalicelib.events.runner import lambda_handler as invocation_module
from devtools.kit.clock import ManualClock
from devtools.kit.lambda_invocation import SCHEDULED_EVENT, lambda_context
from devtools.kit.mariadb import PrivateMariaDB

from .harness import Figure, median, migrated_database, scratch_database
from .workload import drain, make_runner, schedule_backlog

ROOT = Path(__file__).resolve().parents[1]
RUNS = 20  # runs per drain: enough for the tick's eight workers
FEW_STEPS, MANY_STEPS = 2, 20  # steps per run in the short and the long drain
POWERTOOLS_DEFAULT_LEVEL = "INFO"  # what Powertools logs at when no level is set
PURGE_WAIT_SECONDS = 10.0
AURORA_WRITE_IO_BYTES = 4096  # Aurora counts write I/Os in 4 KB units of log records
CHANNELS_LOGGER = "chalicelib.events.adapters.channels"
LEVEL_SETTINGS = ("POWERTOOLS_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL")


def deployed_environment() -> dict[str, str]:
    """The tick's plain environment in the prod stage (.chalice/config.json), without the sleep switch.

    Sleeping needs the AWS schedule; a deployment goes to sleep once per event, not per step.
    """
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    env = {**config["environment_variables"], **config["stages"]["prod"].get("environment_variables", {})}
    env.pop("EVENTS_SLEEP", None)
    return env


def deployed_log_level() -> str:
    """The level the tick logs at once deployed: a level setting in either template, else Powertools' default."""
    env = deployed_environment()
    templates = (ROOT / "infra" / "app.yaml").read_text() + (ROOT / ".chalice" / "config.json").read_text()
    for name in LEVEL_SETTINGS:
        if name in env:
            return env[name].upper()
        if name in templates:
            raise RuntimeError(f"the templates set {name}: teach deployed_log_level to read it")
    return POWERTOOLS_DEFAULT_LEVEL


@dataclass(frozen=True)
class Output:
    """What one tick invocation wrote, by kind of line."""

    steps: int
    ticks: int
    engine_bytes: int  # log lines and the EMF document
    notice_bytes: int  # the log channel's notices (the announcements themselves)
    notices: int


@contextlib.contextmanager
def _lambda_streams() -> Iterator[io.StringIO]:
    """Standard output and error (where Lambda's log comes from) captured, the engine's log handler included."""
    captured = io.StringIO()
    handler = observability.structured_logger().registered_handler
    assert isinstance(handler, logging.StreamHandler)  # Powertools writes to standard output through one
    previous = handler.setStream(captured)
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            yield captured
    finally:
        handler.setStream(previous)


@contextlib.contextmanager
def _logger_level(name: str, level: int | str) -> Iterator[None]:
    """`name` logs at `level` inside the block, and as before after it."""
    observability.structured_logger()  # sets the package's handler and level up first, so they are put back
    chosen = logging.getLogger(name)
    saved = chosen.level
    chosen.setLevel(level)
    try:
        yield
    finally:
        chosen.setLevel(saved)


@contextlib.contextmanager
def _deployed_logging() -> Iterator[None]:
    """The package logs at the deployed level, and the channel's lines are not silenced as the other benchmarks do."""
    with _logger_level(observability.PACKAGE_LOGGER, deployed_log_level()), _logger_level(CHANNELS_LOGGER, logging.NOTSET):
        yield


@contextlib.contextmanager
def _invocation_time(clock: ManualClock) -> Iterator[None]:
    """The invocation's time (monotonic, and the run clock with it) moves only by its own sleeps: it ends at once."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        clock.advance(seconds)

    original = invocation_module.run_invocation
    invocation_module.run_invocation = functools.partial(original, monotonic=lambda: now[0], sleep=sleep)
    try:
        yield
    finally:
        invocation_module.run_invocation = original


def _spread(db: Database, run_ids: list[int], start: datetime) -> None:
    """Each run due a second after the one before: a tick of its own each."""
    db.transaction(lambda tx: tx.executemany(
        "UPDATE event_runs SET scheduled_for = %s, wake_at = %s WHERE id = %s",
        [(start + timedelta(seconds=i), start + timedelta(seconds=i), run_id) for i, run_id in enumerate(run_ids)]))


def invocation_output(db: Database, steps_per_run: int, *, spread: bool = False) -> Output:
    """One tick invocation through the Lambda handler over RUNS runs of `steps_per_run` instant steps.

    The runs are all due at once (one tick), or `spread` a second apart (a tick each).
    """
    import app  # the handler Lambda calls, with its middleware

    run_ids = schedule_backlog(db, RUNS, steps_per_run, label=f"logs{steps_per_run}{'s' if spread else ''}")
    clock = ManualClock(DatabaseClock(db).now())
    if spread:
        _spread(db, run_ids, clock.now())
    settings = Settings.from_env({**deployed_environment(), "EVENTS_DB_URL": db.params.url()})
    with runtime.override(settings=settings, database=db, clock=clock), _deployed_logging(), \
            _invocation_time(clock), _lambda_streams() as captured:
        summary = app.tick(SCHEDULED_EVENT, lambda_context())
    steps = sum(tick["dispatched"] for tick in summary["ticks"])
    if steps != RUNS * steps_per_run or any(tick["errors"] for tick in summary["ticks"]):
        raise RuntimeError(f"the invocation did not drain its {RUNS * steps_per_run} steps cleanly: {summary}")
    engine = notice = notices = 0
    for line in captured.getvalue().splitlines(keepends=True):
        size = len(line.encode())
        if '"channel"' in line and json.loads(line).get("kind") == "announce":
            notice, notices = notice + size, notices + 1
        else:
            engine += size
    return Output(steps, len(summary["ticks"]), engine, notice, notices)


@dataclass(frozen=True)
class LogBytes:
    per_step: float  # the engine's, beside a notice's own line
    per_extra_tick: float
    per_invocation: float  # with no step
    per_notice: float  # one log-channel notice line


def log_bytes(rounds: int) -> LogBytes:
    """The medians over `rounds` of what a tick invocation writes per step, per tick and per invocation."""
    per_step, per_tick, per_invocation, per_notice = [], [], [], []
    with scratch_database("logs") as db:
        invocation_output(db, 1)  # the first invocation of a process sets its pieces up; not a figure
        for _ in range(rounds):
            few, many = invocation_output(db, FEW_STEPS), invocation_output(db, MANY_STEPS)
            spread = invocation_output(db, MANY_STEPS, spread=True)
            step = (many.engine_bytes - few.engine_bytes) / (many.steps - few.steps)
            per_step.append(step)
            per_tick.append((spread.engine_bytes - many.engine_bytes) / (spread.ticks - many.ticks))
            per_invocation.append(few.engine_bytes - step * few.steps)
            per_notice.append(many.notice_bytes / many.notices)
    return LogBytes(median(per_step), median(per_tick), median(per_invocation), median(per_notice))


def _server_counters(db: Database) -> dict[str, int]:
    rows = db.autocommit(lambda tx: tx.all(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_os_log_written', 'Com_commit', 'Innodb_history_list_length')"))
    return {row["Variable_name"]: int(row["Value"]) for row in rows}


def _purged(db: Database, wait_seconds: float) -> dict[str, int]:
    """The counters once InnoDB has purged the old row versions (its purge writes redo too, a step's share),
    or after `wait_seconds` (on a shared server others keep the history from ever emptying)."""
    deadline = time.monotonic() + wait_seconds
    while (counters := _server_counters(db))["Innodb_history_list_length"] and time.monotonic() < deadline:
        time.sleep(0.05)
    return counters


@dataclass(frozen=True)
class Drain:
    steps: int
    redo_bytes: int  # Innodb_os_log_written while the tick drained
    commits: int  # COMMITs the server counted meanwhile


def drain_counters(db: Database, steps_per_run: int, purge_wait_seconds: float = PURGE_WAIT_SECONDS) -> Drain:
    """One tick drains RUNS runs of `steps_per_run` instant steps: the server's redo and commit counters meanwhile."""
    schedule_backlog(db, RUNS, steps_per_run, label=f"redo{steps_per_run}")
    runner = make_runner(db, concurrency=8)  # the deployed EVENT_TICK_CONCURRENCY
    try:
        before = _purged(db, purge_wait_seconds)
        report = drain(runner)
        after = _purged(db, purge_wait_seconds)
    finally:
        runner.close()
    return Drain(report.dispatched, after["Innodb_os_log_written"] - before["Innodb_os_log_written"],
                 after["Com_commit"] - before["Com_commit"])


@dataclass(frozen=True)
class Redo:
    bytes_per_step: float
    commits_per_step: float

    @property
    def bytes_per_commit(self) -> float:
        return self.bytes_per_step / self.commits_per_step


def redo_per_step(db: Database, rounds: int, purge_wait_seconds: float = PURGE_WAIT_SECONDS) -> Redo:
    """Medians over `rounds` of a long drain less a short one, per step: redo bytes and commits."""
    per_step, commits = [], []
    with _logger_level(CHANNELS_LOGGER, logging.ERROR):  # the instant steps' notices would time the terminal
        drain_counters(db, 1, purge_wait_seconds)  # warm: the first drain reads the tables in
        for _ in range(rounds):
            few = drain_counters(db, FEW_STEPS, purge_wait_seconds)
            many = drain_counters(db, MANY_STEPS, purge_wait_seconds)
            per_step.append((many.redo_bytes - few.redo_bytes) / (many.steps - few.steps))
            commits.append((many.commits - few.commits) / (many.steps - few.steps))
    return Redo(median(per_step), median(commits))


@contextlib.contextmanager
def private_database() -> Iterator[Database]:
    """A migrated database on a mariadbd of our own (the tests' binary, a throwaway folder): nobody else writes redo."""
    home = Path(tempfile.mkdtemp(prefix="events-redo-"))
    server = PrivateMariaDB(home).start()
    try:
        with migrated_database(ConnectionParams.from_url(server.url + "events_redo")) as db:
            yield db
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def run(sizes) -> list[Figure]:
    rounds = 3 if sizes.rounds == 1 else 5
    logs = log_bytes(rounds)
    with private_database() as db:
        alone = redo_per_step(db, rounds)
    with scratch_database("redo") as db:
        shared = redo_per_step(db, rounds, purge_wait_seconds=0)
    write_ios = math.ceil(alone.bytes_per_commit / AURORA_WRITE_IO_BYTES)
    batched = alone.bytes_per_commit / AURORA_WRITE_IO_BYTES
    print(f"\ncost inputs (the tick logging at {deployed_log_level()}): --log-bytes-per-step {max(0, math.ceil(logs.per_step))}"
          f" --log-bytes-per-tick-invocation {math.ceil(logs.per_invocation)} --commits-per-step {alone.commits_per_step:g}"
          f" --write-ios-per-commit {write_ios}\n  (Aurora: {write_ios} write I/Os per commit if each is sent alone,"
          f" {batched:.2f} if every log record were batched into full 4 KB units)\n"
          f"  a tick more adds {logs.per_extra_tick:.1f} B; a log-channel notice its line, {logs.per_notice:.0f} B;"
          f" redo per commit {alone.bytes_per_commit:.0f} B on a server of its own,"
          f" {shared.bytes_per_commit:.0f} B on the shared one (others' writes in, the purge's out)")
    return [
        Figure("costs", "tick log bytes per step", logs.per_step, "B"),
        Figure("costs", "tick log bytes per extra tick", logs.per_extra_tick, "B"),
        Figure("costs", "tick log bytes per invocation", logs.per_invocation, "B"),
        Figure("costs", "log-channel notice line", logs.per_notice, "B"),
        Figure("costs", "commits per step (server count)", alone.commits_per_step, ""),
        Figure("costs", "redo bytes per commit", alone.bytes_per_commit, "B"),
        Figure("costs", "redo bytes per commit, shared server", shared.bytes_per_commit, "B"),
    ]
