"""What the torture tests share: sizes, a fleet of real tick-worker processes, and the log audit.

Sizes: every torture test has a CI size and the issue's full size; set
`TORTURE_SCALE=full` to run the full ones.

Workers are `multiprocessing` 'spawn' processes wired exactly as `python -m
chalicelib tick` is (`build_runner` from the settings), ticking until a stop
file appears. Each keeps a journal (one JSON object a line, one `os.write`
each, so a SIGKILL loses whole lines only): the clock of every tick, every
tick that raised, the log rows of every transaction whose COMMIT returned (when
asked), and its retry counts on a clean exit. Files rather than a
multiprocessing queue or event: a process killed while holding the lock of one
would hang every other.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from chalicelib.config import Settings
from chalicelib.db import Database, DatabaseClock, Tx, must_exist
from chalicelib.events.lifecycle import TERMINAL_RUN
from chalicelib.events.runner.command import tick_once
from chalicelib.events.runner.compose import build_runner
from devtools.kit.game_bridge import SECRET, GameBridge
from tests.support.factory import make_definition

FULL = os.environ.get("TORTURE_SCALE", "ci").strip().lower() == "full"


def sized(ci, full):
    """The CI size, or the issue's size under TORTURE_SCALE=full."""
    return full if FULL else ci


# ── journals ────────────────────────────────────────────────────────────────
class Journal:
    def __init__(self, path: Path):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()  # the runner's pool threads write too

    def write(self, **entry) -> None:
        line = (json.dumps(entry, default=str) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)


def read_journal(path: Path) -> list[dict]:
    entries = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a line cut short by SIGKILL
            entries.append(json.loads(line))
    return entries


class _LogRecordingTx:
    """Passes every statement through (the rest of `Tx` too), keeping the event_run_log rows it inserts,
    whether sent at once or ahead of the next statement."""

    def __init__(self, tx, rows: list):
        self._tx, self._rows = tx, rows

    def _keep(self, sql, args) -> None:
        if sql.lstrip().startswith("INSERT INTO event_run_log"):  # one or many rows of 7 values each
            self._rows.extend(_log_key(args[i:i + 7]) for i in range(0, len(args), 7))

    def execute(self, sql, args=None):
        self._keep(sql, args)
        return self._tx.execute(sql, args)

    def send_ahead(self, sql, args=None):
        self._keep(sql, args)
        return self._tx.send_ahead(sql, args)

    def __getattr__(self, name):
        return getattr(self._tx, name)


def _log_key(values) -> list:
    run_id, step_id, kind, _phase, detail, _actor, created_at = values
    return [run_id, step_id, kind, detail, str(created_at)]


def log_keys(db: Database) -> Counter:
    """Every stored log row, keyed as a journal of committed rows keys it."""
    rows = db.autocommit(lambda tx: tx.all("SELECT run_id, step_id, kind, detail, created_at FROM event_run_log"))
    return Counter(json.dumps([r["run_id"], r["step_id"], r["kind"], r["detail"], str(r["created_at"])]) for r in rows)


class CommitJournalingDatabase(Database):
    """A Database that journals the log rows of each transaction once its COMMIT has returned.

    That is what the process saw committed; a COMMIT that failed (its outcome
    unknown) is not journaled.
    """

    def __init__(self, url: str, journal: Journal):
        super().__init__(url)
        self._journal = journal

    def transaction(self, work):
        rows: list = []

        def recorded(tx):
            rows.clear()  # a re-run starts over
            return work(_LogRecordingTx(tx, rows))

        result = super().transaction(recorded)
        if rows:
            self._journal.write(committed=[json.dumps(r) for r in rows])
        return result


# ── the tick worker process ────────────────────────────────────────────────
def tick_worker(env: dict, journal_path: str, stop_path: str, journal_commits: bool) -> None:
    """Tick every EVENT_TICK_SECONDS (at once again after a tick that did work) until the stop file exists."""
    settings = Settings.from_env(env)
    journal = Journal(Path(journal_path))
    url = must_exist(settings.db_url)  # the fleet always passes EVENTS_DB_URL
    db = CommitJournalingDatabase(url, journal) if journal_commits else Database(url)
    runner = build_runner(settings, db, DatabaseClock(db))
    try:
        while not os.path.exists(stop_path):
            started = time.monotonic()
            try:
                report = tick_once(runner, settings.tick_seconds)
            except Exception as error:  # journaled for the test to judge; the loop goes on, as Lambda would
                journal.write(failed_tick=type(error).__name__, code=getattr(error, "args", [None])[0], detail=str(error)[:200])
                time.sleep(0.2)
                continue
            journal.write(tick=report.now.isoformat(), dispatched=report.dispatched, errors=report.errors,
                          seconds=time.monotonic() - started, hard_seconds=settings.tick_seconds + runner.doubt_worst_case_seconds)
            if report.dispatched == 0:
                while time.monotonic() < started + settings.tick_seconds and not os.path.exists(stop_path):
                    time.sleep(0.05)
    finally:
        journal.write(exit={"retries": {str(code): n for code, n in db.retries.items()},
                            "peak_rss_mb": _peak_rss_mb()})
        runner.close()


def _peak_rss_mb() -> float:
    """This process's own peak resident memory. Not getrusage's ru_maxrss: on Linux that
    carries over the parent's peak at fork (a worker spawned by a big pytest would inherit it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class TickFleet:
    """Tick-worker processes against one database and one game bridge: start, SIGKILL and restart, stop."""

    def __init__(self, folder: Path, db_url: str, bridge: GameBridge, journal_commits: bool = False, **settings: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.stop_path = self.folder / "stop"
        self.env = {
            "EVENTS_DB_URL": db_url,
            "GAME_BRIDGE_URL": bridge.url,
            "GAME_BRIDGE_SECRET": SECRET,
            "EVENT_TICK_SECONDS": "1",
            **settings,
        }
        self.journal_commits = journal_commits
        self.workers: dict[str, multiprocessing.process.BaseProcess] = {}
        self.journals: list[Path] = []
        self.killed = 0
        self._context = multiprocessing.get_context("spawn")

    def start(self, count: int) -> TickFleet:
        """`count` more workers."""
        for n in range(len(self.workers), len(self.workers) + count):
            self._spawn(f"w{n}")
        return self

    def _spawn(self, slot: str) -> None:
        journal = self.folder / f"{slot}.{len(self.journals)}.jsonl"
        journal.touch()
        self.journals.append(journal)
        process = self._context.Process(
            target=tick_worker, args=(self.env, str(journal), str(self.stop_path), self.journal_commits), daemon=True
        )
        process.start()
        self.workers[slot] = process

    def kill_and_restart(self, slot: str) -> None:
        process = self.workers[slot]
        os.kill(must_exist(process.pid), signal.SIGKILL)
        process.join(10)
        self.killed += 1
        self._spawn(slot)

    def pids(self) -> dict[str, int]:
        return {slot: must_exist(p.pid) for slot, p in self.workers.items()}

    def stop(self, timeout: float = 60) -> None:
        """Ask every worker to finish its tick and exit; each must exit 0."""
        self.stop_path.touch()
        for slot, process in self.workers.items():
            process.join(timeout)
            if process.exitcode is None:
                process.kill()
                process.join(5)
                raise AssertionError(f"tick worker {slot} did not stop within {timeout}s")
            assert process.exitcode == 0, f"tick worker {slot} exited {process.exitcode}"

    def entries(self) -> list[dict]:
        return [entry for path in self.journals for entry in read_journal(path)]

    def tick_times(self) -> list[list[datetime]]:
        """Each worker process's tick clocks, in order (a restarted worker is a new process)."""
        return [[datetime.fromisoformat(e["tick"]) for e in read_journal(path) if "tick" in e] for path in self.journals]

    def failed_ticks(self) -> list[dict]:
        return [e for e in self.entries() if "failed_tick" in e]

    def tick_errors(self) -> int:
        return sum(e["errors"] for e in self.entries() if "tick" in e)

    def ticks(self) -> list[dict]:
        """Every finished tick: its clock, `seconds` it took and the `hard_seconds` it had."""
        return [e for e in self.entries() if "tick" in e]

    def peak_rss_mb(self) -> list[float]:
        """Each cleanly exited worker's peak resident memory."""
        return [e["exit"]["peak_rss_mb"] for e in self.entries() if "exit" in e]

    def retries(self) -> Counter:
        total: Counter = Counter()
        for entry in self.entries():
            if "exit" in entry:
                total.update({int(code): n for code, n in entry["exit"]["retries"].items()})
        return total

    def committed_log_keys(self) -> Counter:
        return Counter(key for e in self.entries() if "committed" in e for key in e["committed"])

    def __enter__(self) -> TickFleet:
        return self

    def __exit__(self, *exc) -> None:
        if not self.stop_path.exists():
            self.stop_path.touch()
        for process in self.workers.values():
            process.join(30)
            if process.is_alive():
                process.kill()


def dispatching(pid: int, bridge_port: int) -> bool:
    """Whether process `pid` holds an open TCP connection to the game bridge right now (a dispatch in flight)."""
    inodes = set()
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            remote_port, state, inode = int(fields[2].split(":")[1], 16), fields[3], fields[9]
            if remote_port == bridge_port and state == "01":  # ESTABLISHED
                inodes.add(f"socket:[{inode}]")
    try:
        links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except (FileNotFoundError, ProcessLookupError):
        return False
    return bool(inodes & links)


# ── workloads and waiting ──────────────────────────────────────────────────
def module_steps(count: int, on_failure: str = "pause") -> list[dict]:
    return [{"action": f"world.step{i}", "params": {"i": i}, "on_failure": on_failure} for i in range(count)]


def document_of(phases: list[list[dict]], ending: list[dict] | None = None) -> dict:
    return {
        "name": "Torture",
        "grace_seconds": 3600,
        "phases": [{"name": f"phase {i + 1}", "steps": steps} for i, steps in enumerate(phases)],
        "ending": ending or [],
    }


def schedule_runs(db: Database, doc: dict, count: int, *, now: datetime | None = None) -> list[int]:
    """`count` runs of one new definition, due now (database time), in one multi-row INSERT."""
    now = now or DatabaseClock(db).now()
    definition = make_definition(db, now, doc)
    tag = f"{definition.id}@torture-{time.monotonic_ns()}"
    rows = [(definition.id, 1, f"{tag}-{i}", "scheduled", now, 3600, "ok", now, now, now) for i in range(count)]
    db.transaction(lambda tx: tx.executemany(
        """INSERT INTO event_runs (definition_id, definition_version, occurrence_key, status, scheduled_for,
                                   grace_seconds, health, created_at, updated_at, wake_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""", rows))
    return [r["id"] for r in db.autocommit(lambda tx: tx.all(
        "SELECT id FROM event_runs WHERE occurrence_key LIKE %s ORDER BY id", (tag + "-%",)))]


_TERMINAL_SQL = ", ".join(f"'{s.value}'" for s in sorted(TERMINAL_RUN))


def unfinished_runs(db: Database) -> int:
    return must_exist(db.autocommit(lambda tx: tx.one(f"SELECT COUNT(*) AS n FROM event_runs WHERE status NOT IN ({_TERMINAL_SQL})")))["n"]


def unfinished_report(db: Database, limit: int = 5) -> str:
    """What the first unfinished runs stand on (their wake time, open steps and last log rows): a run that
    never finishes is a stranded run or a wedged step, and the rows say which before the database is dropped."""
    def read(tx: Tx) -> list[str]:
        lines = [f"now {tx.one('SELECT NOW(6) AS now')}"]
        for run in tx.all(f"""SELECT id, status, current_phase, wake_at, waiting_for FROM event_runs
                                WHERE status NOT IN ({_TERMINAL_SQL}) ORDER BY id LIMIT %s""", (limit,)):
            lines.append(f"run {run}")
            lines += [f"  step {step}" for step in tx.all(
                """SELECT id, phase, seq, status, attempts, due_at, claimed_by IS NOT NULL AS claimed, claim_expires_at,
                          in_doubt, park_reason FROM event_run_steps WHERE run_id = %s AND status IN ('pending', 'running')""",
                (run["id"],))]
            lines += [f"  log {row}" for row in reversed(tx.all(
                "SELECT id, step_id, kind, created_at, detail FROM event_run_log WHERE run_id = %s ORDER BY id DESC LIMIT 6",
                (run["id"],)))]
        return lines
    return "\n".join(db.autocommit(read))


def wait_until(condition: Callable[[], bool], timeout: float, what: str, every: float = 0.2,
               explain: Callable[[], str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}" + (f"\n{explain()}" if explain else ""))
        time.sleep(every)


def duplicate_deliveries(bridge: GameBridge) -> list[tuple[str, int]]:
    """(Idempotency-Key, attempt) pairs the game side received more than once."""
    seen = Counter((r.headers["idempotency-key"], r.json["attempt"]) for r in bridge.received())
    return [pair for pair, n in seen.items() if n > 1]


def attempts_delivered(bridge: GameBridge) -> dict[str, list[int]]:
    """Each key's attempts in the order the game side received them."""
    by_key: dict[str, list[int]] = defaultdict(list)
    for request in sorted(bridge.received(), key=lambda r: r.at):
        by_key[request.headers["idempotency-key"]].append(request.json["attempt"])
    return by_key


# ── the log audit ──────────────────────────────────────────────────────────
def audit(db: Database, now: datetime | None = None, ticked_at: datetime | None = None) -> list[str]:
    """Replay the run log and compare it with the rows: what the log says happened is what happened.

    Each step starts pending at attempt 0. A claim writes no row of its own: the
    dispatch row of its attempt records it, or, if its claimer died before
    answering, the sweep's row that took it back. So a runner row about attempt
    a, found while the replay has the step pending at a - 1, is that claim plus
    its ending. Every row must start from the state the replay is in (its
    `from`, its attempt): a transition logged twice, or a dispatch of an attempt
    already dispatched, fails here; a transition logged never leaves the replay
    behind the rows. It also checks that no live run's wake time is late, and,
    after a tick (`ticked_at`), that no phase it could close was left open past
    its deadline (see `late_wakes`). Returns the problems found, none when the log is honest.
    """

    def read(tx):
        return (
            tx.all("SELECT id, status FROM event_runs"),
            tx.all("SELECT id, run_id, status, attempts, claim_expires_at FROM event_run_steps"),
            tx.all("SELECT id, run_id, step_id, kind, detail, actor FROM event_run_log ORDER BY id"),
        )

    run_rows, step_rows, log_rows = db.autocommit(read)
    problems: list[str] = []
    run_state = {r["id"]: None for r in run_rows}
    step_state = {s["id"]: ("pending", 0) for s in step_rows}
    steps_of_run: dict[int, list[int]] = defaultdict(list)
    for s in step_rows:
        steps_of_run[s["run_id"]].append(s["id"])
    entries = [{**row, "detail": json.loads(row["detail"]) if row["detail"] else {}} for row in log_rows]
    # A claim was in flight at a given row if a later runner row about the step exists, or if the step
    # is leased now (no claim can follow a cancel or an abort: the claim needs a runnable run).
    leased_now = {s["id"] for s in step_rows if s["status"] == "running" and s["claim_expires_at"] is not None}
    claim_rows: dict[int, list[int]] = defaultdict(list)
    for e in entries:
        if e["step_id"] is not None and e["actor"] == "runner" and not e["detail"].get("fenced_out"):
            claim_rows[e["step_id"]].append(e["id"])

    for e in entries:
        d, where = e["detail"], f"log row {e['id']} ({e['kind']} {e['detail']})"
        if e["kind"] == "run.status":
            run_id = e["run_id"]
            before = run_state[run_id] or "scheduled"
            created = d.get("from") is None
            if (created and run_state[run_id] is not None) or (not created and d.get("from") != before):
                problems.append(f"{where}: run {run_id} was {before}")
            run_state[run_id] = d["to"]
            if "cancelled_steps" in d:
                closing = ("pending", "parked") if d.get("control") == "cancel" else ("pending",)
                hit = [
                    sid for sid in steps_of_run[run_id]
                    if step_state[sid][0] in closing
                    and sid not in leased_now and not any(i > e["id"] for i in claim_rows[sid])
                ]
                if len(hit) != d["cancelled_steps"]:
                    problems.append(f"{where}: {len(hit)} open steps by the log, {d['cancelled_steps']} cancelled")
                for sid in hit:
                    step_state[sid] = ("cancelled", step_state[sid][1])
        elif e["kind"] == "step.dispatch" and not d.get("fenced_out"):
            status, attempts = step_state[e["step_id"]]
            if status != "pending" or d["attempt"] != attempts + 1:
                problems.append(f"{where}: dispatched while the step was {status} at attempt {attempts}")
            step_state[e["step_id"]] = ("parked" if d["outcome"] == "parked" else "leased", d["attempt"])
        elif e["kind"] == "step.status":
            sid = e["step_id"]
            status, attempts = step_state[sid]
            control = d.get("control")
            if control is None:
                attempt = d.get("attempt", d.get("attempts"))
                claimed_unlogged = status == "pending" and attempt == attempts + 1
                # A phase's close cancels its pending and parked steps where they stand (a `cause`, no attempt).
                closed_with_its_phase = d["to"] == "cancelled" and status in ("pending", "parked") and attempt == attempts
                if not (status == "leased" and attempt == attempts) and not claimed_unlogged and not closed_with_its_phase:
                    problems.append(f"{where}: the step was {status} at attempt {attempts}")
                step_state[sid] = (d["to"], attempt)
                continue
            legal_from = {"confirm": ("parked",), "skip": ("pending", "parked"), "retry": ("failed",),
                          # an advance also skips a step whose lease lapsed (never one under a live lease)
                          "advance": ("pending", "parked", "leased")}[control]
            shown = "running" if status in ("parked", "leased") else status
            lapsed_unlogged = control == "advance" and status == "pending" and d.get("from") == "running"
            if (status not in legal_from or d.get("from") != shown) and not lapsed_unlogged:
                problems.append(f"{where}: the step was {status}")
            if control == "retry" and d.get("attempts") != attempts:  # kept: attempts only rise
                problems.append(f"{where}: retried at {d.get('attempts')} attempts but the log had {attempts}")
            if control == "advance":  # a lapsed claim logs nothing until the sweep: the row says its attempts
                attempts = d["attempts"]
            step_state[sid] = (d["to"], attempts)

    for s in step_rows:
        actual = s["status"]
        if actual == "running":
            actual = "leased" if s["claim_expires_at"] is not None else "parked"
        expected = step_state[s["id"]]
        in_flight = actual == "leased" and expected == ("pending", s["attempts"] - 1)
        if (actual, s["attempts"]) != expected and not in_flight:
            problems.append(f"step {s['id']} is {actual} at attempt {s['attempts']}; its log says {expected}")
    for r in run_rows:
        if (run_state[r["id"]] or "scheduled") != r["status"]:
            problems.append(f"run {r['id']} is {r['status']}; its log says {run_state[r['id']] or 'scheduled'}")
    return problems + late_wakes(db, now, ticked_at)


def late_wakes(db: Database, now: datetime | None = None, ticked_at: datetime | None = None) -> list[str]:
    """Live runs whose wake time is later than the earliest moment, from `now` on, a tick could work them.

    That moment is the run's own timer (scheduled_for; now for a starting run or a
    phase with no open step; the head step's due_at, or its lease's expiry), but
    never before the run's own lease lapses, nor before `now`: a timer that came
    while the run was paused (a step due at :30 of a run resumed at :31) is
    served by a wake time of now. A parked head or a paused run has no timer:
    only a person moves it, and so has a drained phase whose condition (read from its row) nobody met.
    The phase adds its own timer: now once its condition is met and it is not closed, else its
    deadline as its document sets it (`authored_deadlines`, which also checks the row's column). A
    wake time may be early, never late. With `ticked_at`, the clock of a tick that just ran, a phase
    whose authored deadline had come by then must not be open still at a run that tick could work.
    """
    now = now or DatabaseClock(db).now()

    def read(tx):
        return (
            tx.all("""SELECT id, status, scheduled_for, current_phase, claim_expires_at, wake_at FROM event_runs
                       WHERE status IN ('scheduled', 'starting', 'running', 'ending')"""),
            tx.all("""SELECT s.run_id, s.phase, s.seq, s.status, s.due_at, s.claim_expires_at FROM event_run_steps s
                        JOIN event_runs r ON r.id = s.run_id
                       WHERE r.status IN ('running', 'ending') AND s.status IN ('pending', 'running')
                       ORDER BY s.run_id, s.phase, s.seq"""),
            tx.all("""SELECT run_id, number, `condition` IS NOT NULL AS held_when_drained, condition_met, deadline, closed_at
                        FROM event_run_phases"""),
        )

    live, open_steps, phase_rows = db.autocommit(read)
    deadlines, problems = authored_deadlines(db)
    rows_of = {(p["run_id"], p["number"]): p for p in phase_rows}
    waits_for_a_person = {key for key, p in rows_of.items() if p["held_when_drained"] and not p["condition_met"]}
    heads: dict[tuple[int, int], dict] = {}
    for s in open_steps:
        heads.setdefault((s["run_id"], s["phase"]), s)
    for r in live:
        if r["status"] == "scheduled":
            timer = r["scheduled_for"]
        elif r["status"] == "starting":
            timer = now
        else:
            phase = r["current_phase"]  # an ending run's is its ending's own number (phase rows)
            head = heads.get((r["id"], phase))
            if head is None:
                timer = None if (r["id"], phase) in waits_for_a_person else now
            elif head["status"] == "pending":
                timer = head["due_at"] or now
            else:
                timer = head["claim_expires_at"]  # None: parked, a person's to move
            # The phase's own timer: now once its condition is met (it must be closed or left), else its deadline.
            row, deadline = rows_of.get((r["id"], phase)), deadlines.get((r["id"], phase))
            if row is not None and row["closed_at"] is None and (row["condition_met"] or deadline is not None):
                phase_timer = now if row["condition_met"] else deadline
                timer = phase_timer if timer is None else min(timer, phase_timer)
            lease = r["claim_expires_at"]
            if ticked_at is not None and row is not None and row["closed_at"] is None and deadline is not None \
                    and deadline <= ticked_at and r["status"] == "running" and (lease is None or lease < ticked_at):
                problems.append(f"run {r['id']}: phase {phase}'s deadline {deadline} had come, and the tick at "
                                f"{ticked_at} left the phase open")
        if timer is None:
            continue
        earliest = max(timer, r["claim_expires_at"] or timer, now)
        if r["wake_at"] is None or r["wake_at"] > earliest:
            problems.append(f"run {r['id']} ({r['status']}) wakes at {r['wake_at']}, later than {earliest}")
    return problems


def authored_deadlines(db: Database) -> tuple[dict[tuple[int, int], datetime], list[str]]:
    """Each opened phase's standing deadline by (run id, number), derived from its document, not the code's column:
    `opened_at` plus the phase's `advance.seconds` (`after`) or `timeout_seconds`, none once a `pause` timeout
    acted (its run.status row to paused, at or after it, names the phase as waiting). The main phases' rows
    are the document's phases in order. With the problems: each row whose `deadline` column says otherwise.
    """

    def read(tx):
        return (
            tx.all("""SELECT p.run_id, p.number, p.opened_at, p.deadline, r.definition_id, r.definition_version
                        FROM event_run_phases p JOIN event_runs r ON r.id = p.run_id
                       WHERE p.kind = 'main' ORDER BY p.run_id, p.number"""),
            {(v["definition_id"], v["version"]): v["document"] for v in tx.all(
                "SELECT definition_id, version, document FROM event_definition_versions")},
            tx.all("""SELECT run_id, detail, created_at FROM event_run_log
                       WHERE kind = 'run.status' AND JSON_VALUE(detail, '$.to') = 'paused'"""),
        )

    phase_rows, documents, pauses = db.autocommit(read)
    paused: dict[int, list[tuple[str, datetime]]] = defaultdict(list)
    for e in pauses:
        paused[e["run_id"]].append((json.loads(e["detail"]).get("cause") or "", e["created_at"]))
    rows_of_run: dict[int, list[dict]] = defaultdict(list)
    for p in phase_rows:
        rows_of_run[p["run_id"]].append(p)
    deadlines: dict[tuple[int, int], datetime] = {}
    problems = []
    for run_id, rows in rows_of_run.items():
        raw = documents[(rows[0]["definition_id"], rows[0]["definition_version"])]
        authored = (json.loads(raw) if isinstance(raw, (str, bytes)) else raw)["phases"]
        for row, plan in zip(rows, authored, strict=True):
            advance = plan.get("advance") or {}
            after = advance.get("when") == "after"
            seconds = advance["seconds"] if after else advance.get("timeout_seconds")
            deadline = None if row["opened_at"] is None or seconds is None else row["opened_at"] + timedelta(seconds=seconds)
            waited = f"phase {row['number']} ({plan['name']}) waited {seconds} s for "
            if deadline is not None and not after and advance.get("on_timeout") == "pause" and any(
                    cause.startswith(waited) and at >= deadline for cause, at in paused[run_id]):
                deadline = None  # it paused the run once; the phase waits on without one
            if row["deadline"] != deadline:
                problems.append(f"run {run_id}: phase {row['number']}'s deadline is {row['deadline']}; opened at "
                                f"{row['opened_at']} with {seconds} s, its document makes it {deadline}")
            if deadline is not None:
                deadlines[(run_id, row["number"])] = deadline
    return deadlines, problems
