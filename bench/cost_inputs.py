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
- custom metrics: the metric names in the EMF document(s) an invocation prints,
  each billed for every hour in which it is published. Two invocations of the
  deployed tick, its sleep on against moto's rule and schedules: the sleep's
  daily wake (woken by its one-time wake-up with nothing to do: it looks and
  sleeps again), and a live minute (runs start, their steps are done and they
  complete, a cue parks and one parked before is reminded).
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
- database bytes per step: the tables' data and indexes (`information_schema.TABLES`'
  DATA_LENGTH + INDEX_LENGTH, read after ANALYZE TABLE so they are current)
  before a backlog of instant steps is scheduled and after one tick drains it,
  again a long drain less a short one so that a run's own rows cancel, the
  median of a few rounds. Those sizes are the pages InnoDB has reserved: page
  by page up to 32 pages an index, then a 1 MB extent or more at a time, so
  the long drain adds thousands of steps (megabytes) and the figure still
  varies by a tenth or so from round to round; it errs high, as a year's table
  fills the extents it reserved. An empty schema's size, freshly migrated, is
  printed beside it.

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
from tests.support.aws_world import FUNCTION, ROLE, RULE, Deployment, engine_aws

from .harness import Figure, median, migrated_database, scratch_database
from .workload import drain, make_runner, schedule_backlog, schedule_runs

ROOT = Path(__file__).resolve().parents[1]
RUNS = 20  # runs per drain: enough for the tick's eight workers
FEW_STEPS, MANY_STEPS = 2, 20  # steps per run in the short and the long drain
POWERTOOLS_DEFAULT_LEVEL = "INFO"  # what Powertools logs at when no level is set
PURGE_WAIT_SECONDS = 10.0
AURORA_WRITE_IO_BYTES = 4096  # Aurora counts write I/Os in 4 KB units of log records
CHANNELS_LOGGER = "chalicelib.events.adapters.channels"
LEVEL_SETTINGS = ("POWERTOOLS_LOG_LEVEL", "LOG_LEVEL", "AWS_LAMBDA_LOG_LEVEL")
GROWTH_RUNS, GROWTH_FEW, GROWTH_MANY = 50, 2, 100  # runs per drain and their steps: 4,900 steps apart, ~7 MB
LIVE_RUNS, LIVE_STEPS = 4, 3  # the live minute's runs that start and complete, and their instant steps each
REMIND_AFTER_SECONDS = 120  # a cue's first reminder: the minute after the one it parked in, inside the horizon
CUE_DOCUMENT = {"name": "Benchmark cue", "grace_seconds": 3600, "ending": [], "phases": [{"name": "main", "steps": [
    {"action": "core.cue", "params": {"instruction": "Light the bonfire", "remind_after_seconds": REMIND_AFTER_SECONDS}}]}]}


def _prod_environment() -> dict[str, str]:
    """The tick's plain environment in the prod stage (.chalice/config.json)."""
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    return {**config["environment_variables"], **config["stages"]["prod"].get("environment_variables", {})}


def deployed_environment() -> dict[str, str]:
    """The tick's plain environment in the prod stage, without the sleep switch.

    Sleeping needs the AWS schedule; a deployment goes to sleep once per event, not per step.
    """
    env = _prod_environment()
    env.pop("EVENTS_SLEEP", None)
    return env


def sleeping_environment() -> dict[str, str]:
    """The tick's plain environment in the prod stage, its sleep as deployed, with the names of moto's rule,
    function and role (`engine_aws`) for the ones the template passes."""
    return {**_prod_environment(), "EVENTS_TICK_RULE_NAME": RULE, "EVENTS_TICK_FUNCTION_ARN": FUNCTION,
            "EVENTS_WAKE_ROLE_ARN": ROLE}


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
    metrics: frozenset[str]  # the custom metrics its EMF document(s) publish


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


def _invoke(db: Database, clock: ManualClock, env: dict[str, str], event: dict) -> tuple[dict, str]:
    """One tick invocation through the Lambda handler (`app.tick`, middleware and all), as Lambda invokes it with
    `event`, at the deployed log level: its summary, and everything it wrote to standard output and error."""
    import app  # the handler Lambda calls, with its middleware

    settings = Settings.from_env({**env, "EVENTS_DB_URL": db.params.url()})
    with runtime.override(settings=settings, database=db, clock=clock), _deployed_logging(), \
            _invocation_time(clock), _lambda_streams() as captured:
        summary = app.tick(event, lambda_context())
    return summary, captured.getvalue()


def published_metrics(written: str) -> frozenset[str]:
    """The custom metrics named in the EMF documents among an invocation's lines."""
    names: set[str] = set()
    for line in written.splitlines():
        entry = json.loads(line) if line.startswith("{") else {}
        for directive in entry.get("_aws", {}).get("CloudWatchMetrics", []):
            names.update(metric["Name"] for metric in directive["Metrics"])
    return frozenset(names)


def invocation_output(db: Database, steps_per_run: int, *, spread: bool = False) -> Output:
    """One tick invocation through the Lambda handler over RUNS runs of `steps_per_run` instant steps.

    The runs are all due at once (one tick), or `spread` a second apart (a tick each).
    """
    run_ids = schedule_backlog(db, RUNS, steps_per_run, label=f"logs{steps_per_run}{'s' if spread else ''}")
    clock = ManualClock(DatabaseClock(db).now())
    if spread:
        _spread(db, run_ids, clock.now())
    summary, written = _invoke(db, clock, deployed_environment(), SCHEDULED_EVENT)
    steps = sum(tick["dispatched"] for tick in summary["ticks"])
    if steps != RUNS * steps_per_run or any(tick["errors"] for tick in summary["ticks"]):
        raise RuntimeError(f"the invocation did not drain its {RUNS * steps_per_run} steps cleanly: {summary}")
    engine = notice = notices = 0
    for line in written.splitlines(keepends=True):
        size = len(line.encode())
        if '"channel"' in line and json.loads(line).get("kind") == "announce":
            notice, notices = notice + size, notices + 1
        else:
            engine += size
    return Output(steps, len(summary["ticks"]), engine, notice, notices, published_metrics(written))


def idle_wake_metrics(db: Database) -> frozenset[str]:
    """The custom metrics of the sleep's daily wake: the deployed tick, asleep over nothing to do, invoked by its
    one-time wake-up; it looks, finds nothing and sleeps again."""
    with engine_aws():
        clock = ManualClock(DatabaseClock(db).now())
        env = sleeping_environment()
        minute, _ = _invoke(db, clock, env, SCHEDULED_EVENT)  # the minute rule's, with nothing due: it sleeps
        deployment = Deployment.here()
        [(name, wake_at)] = [(name, at) for name, at in deployment.schedules().items() if "-wake-" in name]
        event = json.loads(deployment.scheduler.get_schedule(Name=name)["Target"]["Input"])  # type: ignore[attr-defined]
        deployment.scheduler.delete_schedule(Name=name)  # type: ignore[attr-defined]  # a one-time schedule, fired
        clock.set(wake_at)
        summary, written = _invoke(db, clock, env, event)
    if not (minute["asleep"] and summary["asleep"]) or invocation_module.invocation_totals(summary["ticks"]).get("dispatched"):
        raise RuntimeError(f"the wake did not find nothing to do and sleep again: {minute} then {summary}")
    return published_metrics(written)


def live_minute_metrics(db: Database) -> frozenset[str]:
    """The custom metrics of a live minute's invocation of the deployed tick: LIVE_RUNS runs start, their steps
    are done and they complete, a cue parks, and the cue parked the minute before is reminded."""
    with engine_aws():
        clock = ManualClock(DatabaseClock(db).now())
        env = sleeping_environment()
        schedule_runs(db, CUE_DOCUMENT, 1, label="reminded")
        _invoke(db, clock, env, SCHEDULED_EVENT)  # the minute before: the cue parks
        clock.advance(REMIND_AFTER_SECONDS)
        schedule_backlog(db, LIVE_RUNS, LIVE_STEPS, label="live")
        schedule_runs(db, CUE_DOCUMENT, 1, label="parked")
        summary, written = _invoke(db, clock, env, SCHEDULED_EVENT)
    totals = invocation_module.invocation_totals(summary["ticks"])
    if (totals.get("started") != LIVE_RUNS + 1 or totals.get("reminders") != 1 or totals.get("errors")
            or totals.get("outcomes") != {"done": LIVE_RUNS * LIVE_STEPS, "parked": 1}
            or totals.get("statuses", {}).get("completed") != LIVE_RUNS):
        raise RuntimeError(f"the live minute was not the one described: {totals}")
    return published_metrics(written)


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


def database_bytes(db: Database) -> int:
    """The database's tables, data and indexes, as `information_schema.TABLES` gives them once ANALYZE TABLE has
    brought them up to date (InnoDB updates them only now and then by itself)."""
    tables = db.autocommit(lambda tx: tx.all(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'"))
    names = ", ".join(f"`{row['TABLE_NAME']}`" for row in tables)
    db.autocommit(lambda tx: tx.all(f"ANALYZE TABLE {names}"))
    return int(db.autocommit(lambda tx: tx.scalar(
        "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")))


def grown_by_drain(db: Database, steps_per_run: int) -> tuple[int, int]:
    """GROWTH_RUNS runs of `steps_per_run` instant steps scheduled and drained by one tick: the bytes the database
    grew by, the runs' rows included, and the steps."""
    before = database_bytes(db)
    schedule_backlog(db, GROWTH_RUNS, steps_per_run, label=f"growth{steps_per_run}")
    runner = make_runner(db, concurrency=8)  # the deployed EVENT_TICK_CONCURRENCY
    try:
        report = drain(runner)
    finally:
        runner.close()
    return database_bytes(db) - before, report.dispatched


@dataclass(frozen=True)
class Growth:
    empty_bytes: int  # a freshly migrated schema
    bytes_per_step: float


def database_growth(db: Database, rounds: int) -> Growth:
    """`db` freshly migrated: its size, and the median over `rounds` of a long drain's growth less a short one's,
    per step."""
    empty = database_bytes(db)
    per_step = []
    with _logger_level(CHANNELS_LOGGER, logging.ERROR):  # the instant steps' notices would time the terminal
        for _ in range(rounds):
            (few, few_steps), (many, many_steps) = grown_by_drain(db, GROWTH_FEW), grown_by_drain(db, GROWTH_MANY)
            per_step.append((many - few) / (many_steps - few_steps))
    return Growth(empty, median(per_step))


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
    with scratch_database("wake") as db:
        idle = idle_wake_metrics(db)
    with scratch_database("live") as db:
        live = live_minute_metrics(db)
    with scratch_database("growth") as db:
        growth = database_growth(db, rounds)
    write_ios = math.ceil(alone.bytes_per_commit / AURORA_WRITE_IO_BYTES)
    batched = alone.bytes_per_commit / AURORA_WRITE_IO_BYTES
    print(f"\ncost inputs (the tick logging at {deployed_log_level()}): --log-bytes-per-step {max(0, math.ceil(logs.per_step))}"
          f" --log-bytes-per-tick-invocation {math.ceil(logs.per_invocation)} --commits-per-step {alone.commits_per_step:g}"
          f" --write-ios-per-commit {write_ios} --database-bytes-per-step {math.ceil(growth.bytes_per_step)}"
          f" --database-empty-bytes {growth.empty_bytes}\n  (Aurora: {write_ios} write I/Os per commit if each is sent alone,"
          f" {batched:.2f} if every log record were batched into full 4 KB units)\n"
          f"  a tick more adds {logs.per_extra_tick:.1f} B; a log-channel notice its line, {logs.per_notice:.0f} B;"
          f" redo per commit {alone.bytes_per_commit:.0f} B on a server of its own,"
          f" {shared.bytes_per_commit:.0f} B on the shared one (others' writes in, the purge's out)\n"
          f"  custom metrics an invocation publishes: {len(idle)} on the sleep's idle wake ({', '.join(sorted(idle))});"
          f" {len(live)} in a live minute ({', '.join(sorted(live))})")
    return [
        Figure("costs", "tick log bytes per step", logs.per_step, "B"),
        Figure("costs", "tick log bytes per extra tick", logs.per_extra_tick, "B"),
        Figure("costs", "tick log bytes per invocation", logs.per_invocation, "B"),
        Figure("costs", "log-channel notice line", logs.per_notice, "B"),
        Figure("costs", "commits per step (server count)", alone.commits_per_step, ""),
        Figure("costs", "redo bytes per commit", alone.bytes_per_commit, "B"),
        Figure("costs", "redo bytes per commit, shared server", shared.bytes_per_commit, "B"),
        Figure("costs", "database bytes per step (data + indexes)", growth.bytes_per_step, "B"),
        Figure("costs", "database bytes, an empty schema", growth.empty_bytes, "B"),
        Figure("costs", "custom metrics, the sleep's idle wake", len(idle), ""),
        Figure("costs", "custom metrics, a live minute", len(live), ""),
    ]
