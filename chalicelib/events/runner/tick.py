"""One tick: one clock read, then its chores in order, each on its share of the budget.

The chores are reclaim, plan, then walk the runs whose wake time has come, on a
bounded pool (a parked cue's reminders, escalation and timeout are worked there,
by its run's wake time), then escalate the runs stalled waiting for a person, then edit the chat messages
whose step no longer waits (`chat/settle.py`, with a chat channel);
later work (cleanup) is one more chore in `Runner.chores`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ...db import Clock, Database, Tx, must_exist
from ..actions.perform import Actions
from ..adapters.channels import LogChannel
from ..adapters.rehearsal import rehearsal_actions
from ..chat import ChatApis
from ..chat.settle import settle_messages
from ..errors import UnreadableDocument
from ..lifecycle import CleanupOn, RehearsalBridge
from ..model import Run
from ..programme import Programme, programme_of
from ..store import definitions, runs
from .attempt import Need
from .budget import Budget
from .outcomes import Rules
from .planner import plan_occurrences
from .reclaim import reclaim
from .stalls import escalate_stalls
from .walk import RunReport, RunWalker

logger = logging.getLogger(__name__)

DUE_RUNS_PER_BATCH = 200
DEFAULT_HORIZON = timedelta(minutes=15)
PLANNING_SHARE = 0.5  # of a tick's time for taking work, at most, spent planning recurring definitions
# A dispatch's worst case beyond its outbound deadline: its claim and its outcome transaction.
DATABASE_MARGIN_SECONDS = 2.0


@dataclass(frozen=True)
class TickWork:
    """What every chore of one tick shares: its one clock read, when its leases lapse, its report."""

    now: datetime
    began: float  # on the budget's clock: when the tick's chores began (after the database answered)
    leases_lapse_at: float  # on the budget's clock: every lease taken in this tick ends by then
    report: TickReport


@dataclass(frozen=True)
class Chore:
    """One part of a tick: its name, its share of the time left for taking work when it starts
    (None: the tick's own budget, whatever is left), and the work."""

    name: str
    share: float | None
    work: Callable[[TickWork, Budget], None]


@dataclass
class TickReport:
    now: datetime
    requeued: int = 0
    gave_up: int = 0
    abandoned: int = 0  # leased steps of runs that ended meanwhile, cancelled by the sweep
    parked_in_doubt: int = 0  # expired steps in doubt at the attempt ceiling under on_doubt park: a person decides
    planned: int = 0
    skipped_occurrences: int = 0  # past their grace window when first planned: no run
    plan_failures: int = 0  # recurring definitions whose schedule could not be planned
    plan_deferred: int = 0  # recurring definitions left for the next tick for want of time
    runs_seen: int = 0
    runs_advanced: int = 0  # run leases this tick won
    dispatched: int = 0
    started: int = 0  # runs this tick took from scheduled into their first phase
    outcomes: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)  # how the walked runs were left
    errors: int = 0
    reminders: int = 0
    escalations: int = 0
    out_of_budget: bool = False
    due_lag_seconds: float | None = None  # how long after its wake time the longest-waiting due run was found
    rehearsals: int = 0  # dry runs this tick looked at: counted here alone, never in the production figures

    def add(self, run: RunReport | None, *, rehearsal: bool = False) -> None:
        # guard: a-dry-run-counts-in-the-ticks-production-figures
        if rehearsal:
            self.rehearsals += 1
            return
        self.runs_seen += 1
        if run is None:
            self.errors += 1
            return
        self.runs_advanced += run.leased
        self.dispatched += run.dispatched
        self.started += run.started
        self.outcomes.update(run.outcomes)
        self.out_of_budget |= run.out_of_budget
        self.reminders += run.reminders
        self.escalations += run.escalations
        self.errors += run.escalation_failures
        if run.status is not None:
            self.statuses[run.status.value] += 1

    def summary(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(),
            "requeued": self.requeued,
            "gave_up": self.gave_up,
            "abandoned": self.abandoned,
            "parked_in_doubt": self.parked_in_doubt,
            "planned": self.planned,
            "skipped_occurrences": self.skipped_occurrences,
            "plan_failures": self.plan_failures,
            "plan_deferred": self.plan_deferred,
            "runs_seen": self.runs_seen,
            "runs_advanced": self.runs_advanced,
            "dispatched": self.dispatched,
            "started": self.started,
            "outcomes": dict(self.outcomes),
            "statuses": dict(self.statuses),
            "errors": self.errors,
            "reminders": self.reminders,
            "escalations": self.escalations,
            "out_of_budget": self.out_of_budget,
            "due_lag_seconds": self.due_lag_seconds,
            "rehearsals": self.rehearsals,
        }


class Runner:
    """Ticks against one database. Keeps its worker threads (and so their connections) between ticks."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        actions: Actions,
        rules: Rules,
        *,
        concurrency: int = 8,
        horizon: timedelta = DEFAULT_HORIZON,
        batch_size: int = DUE_RUNS_PER_BATCH,
        shard: tuple[int, int] = (0, 1),
        rehearsals: Mapping[RehearsalBridge, Actions] | None = None,
        chat: ChatApis | None = None,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if not 0 <= shard[0] < shard[1]:
            raise ValueError(f"shard must be (index, count) with 0 <= index < count, got {shard}")
        self.shard = shard  # this runner walks only the runs of its shard (see runs.find_due)
        self.db, self.clock, self.actions, self.rules = db, clock, actions, rules
        # A dry run's actions, by its bridge: never the live bridge or channels (default: simulated, logged).
        self.rehearsals = rehearsals or rehearsal_actions(actions, LogChannel("rehearsal"), None)
        self.horizon, self.batch_size = horizon, batch_size
        self.concurrency = concurrency
        self.chat = chat  # the bots whose messages a step's change edits (None: no chat channel)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="tick-worker")
        self._programmes: dict[tuple[int, int], Programme] = {}
        self._programmes_lock = threading.Lock()
        self._told_unfitted: set[tuple[int, int]] = set()  # (step id, attempts): said once, not at every tick

    @property
    def step_worst_case_seconds(self) -> float:
        longest = max(a.longest_dispatch_seconds for a in (self.actions, *self.rehearsals.values()))
        return longest + DATABASE_MARGIN_SECONDS

    @property
    def doubt_worst_case_seconds(self) -> float:
        """The longest attempt's worst case: a step in doubt asked about first adds the status GET's deadline
        to `step_worst_case_seconds`."""
        longest = max(a.longest_attempt_seconds for a in (self.actions, *self.rehearsals.values()))
        return longest + DATABASE_MARGIN_SECONDS

    def chores(self, *, plan: bool = True) -> list[Chore]:
        """What one tick does, in order, each with its share of the budget: take back expired
        step leases, plan recurring definitions (unless `plan` is False), walk the due runs, escalate
        the runs that have waited too long for a person."""
        return [
            Chore("reclaim", None, self._reclaim),
            *([Chore("plan", PLANNING_SHARE, self._plan)] if plan else []),
            Chore("walk", None, self._walk_due),
            Chore("escalate", None, self._escalate_stalls),
            *([Chore("chat", None, self._settle_chat)] if self.chat is not None else []),
        ]

    def tick(self, budget: Budget, *, plan: bool = True) -> TickReport:
        """One clock read, then every chore in order on its share of the budget."""
        # A database that is down or resuming is waited for while the tick could still take work.
        self.db.reach(budget.take_work_until, monotonic=budget.monotonic)
        now = self.clock.now()  # the one clock read of this tick
        began = budget.monotonic()  # every lease this tick takes lapses `lease_seconds` after it
        tick = TickWork(now, began, began + self.rules.lease_seconds, TickReport(now=now))
        for chore in self.chores(plan=plan):
            # A share is taken of the time left when the chore starts: the rest is for the chores after it.
            chore.work(tick, budget if chore.share is None else budget.portion(chore.share))
        return tick.report

    def _reclaim(self, tick: TickWork, budget: Budget) -> None:
        now, report = tick.now, tick.report
        escalate_after = self.actions.escalate_after_seconds  # of a step the sweep parks in doubt
        # guard: tick-sweeps-in-autocommit
        swept = self.db.transaction(lambda tx: reclaim(tx, now, self.rules.max_attempts, escalate_after_seconds=escalate_after,
                                                       compensates=self._cleans_up_on_failure))
        report.requeued, report.gave_up, report.abandoned = swept.requeued, swept.gave_up, swept.abandoned
        report.parked_in_doubt = swept.parked

    def _plan(self, tick: TickWork, planning: Budget) -> None:
        report = tick.report
        planned = plan_occurrences(self.db, tick.now, self.horizon, keep_going=lambda: planning.allows(0))
        report.planned, report.skipped_occurrences = planned.planned, planned.skipped
        report.plan_failures, report.plan_deferred = planned.failed, planned.deferred

    def _walk_due(self, tick: TickWork, budget: Budget) -> None:
        now, report = tick.now, tick.report

        def walker(actions: Actions) -> RunWalker:
            return RunWalker(self.db, actions, self.rules, self._programme_for, now, budget,
                               self.step_worst_case_seconds, tick.leases_lapse_at)

        live = walker(self.actions)
        rehearsing = {bridge: walker(actions) for bridge, actions in self.rehearsals.items()}

        def walker_for(run: Run) -> RunWalker:
            """The tick picks a run's bridge and channels from its row."""
            # guard: a-dry-run-is-driven-with-the-live-bridge-and-channels
            return live if run.rehearsal is None else rehearsing[run.rehearsal.bridge]

        after = None
        while budget.allows(self.step_worst_case_seconds):
            batch = self.db.autocommit(lambda tx: runs.find_due(tx, now, self.batch_size, after=after, shard=self.shard))
            # guard: a-dry-run-counts-in-the-due-lag
            live_runs = [run for run in batch if run.rehearsal is None]
            if live_runs and after is None and live_runs[0].wake_at is not None:  # in wake order: the first waited longest
                report.due_lag_seconds = max(0.0, (now - live_runs[0].wake_at).total_seconds())
            for run, result in zip(batch, self._pool.map(lambda run: self._walk_one(walker_for(run), run), batch),
                                   strict=True):
                report.add(result, rehearsal=run.rehearsal is not None)
                if result is not None and result.unfitted is not None:
                    self._tell_once_if_never_fits(tick, budget, result.unfitted)
            if len(batch) < self.batch_size:
                break
            last = batch[-1]
            assert last.wake_at is not None  # noqa: S101 — for mypy only: find_due reads only runs whose wake time has come
            after = (last.wake_at, last.id)
        else:
            report.out_of_budget = True

    def _tell_once_if_never_fits(self, tick: TickWork, budget: Budget, need: Need) -> None:
        """A head step this tick left that it could not have taken even at its start (its worst case beyond
        the tick's hard end, or its dispatch beyond its lease) is said once for its attempt, not at every tick
        that meets it: left, and looked at again each poll period, until a tick with more time takes it."""
        whole_seconds = budget.finish_by - tick.began
        lease_seconds = self.rules.lease_seconds
        if need.worst_case_seconds <= whole_seconds and need.dispatch_seconds < lease_seconds:
            return  # it fitted the tick's whole time: only what earlier work spent left it for the next
        step = need.step
        # guard: a-step-that-never-fits-is-said-at-every-tick
        if (step.id, step.attempts) in self._told_unfitted:
            return
        self._told_unfitted.add((step.id, step.attempts))
        logger.warning(
            "step %s (%s%s) of run %s needs up to %.1f s (%.1f s of outbound deadlines, the rest its claim and"
            " outcome), more than a whole tick gives it here (%.1f s to the tick's end, a %.0f s lease): it waits"
            " for a tick with more time", step.id, step.action_id, ", in doubt" if step.in_doubt else "",
            step.run_id, need.worst_case_seconds, need.dispatch_seconds, whole_seconds, lease_seconds)

    def _escalate_stalls(self, tick: TickWork, budget: Budget) -> None:
        escalated = escalate_stalls(self.db, self.actions, self.rules, tick.now, budget,
                                    self.rehearsals[RehearsalBridge.SIMULATE])  # its channels: any bridge's
        tick.report.escalations += escalated.tries
        tick.report.errors += escalated.failed
        tick.report.out_of_budget |= escalated.out_of_budget

    def _settle_chat(self, tick: TickWork, budget: Budget) -> None:
        assert self.chat is not None  # noqa: S101 — for mypy only: the chore is listed only with the bots
        settle_messages(self.db, self.chat, tick.now, retry_seconds=self.rules.retry_seconds, affords=budget.allows)

    def next_wake(self) -> datetime | None:
        """The earliest wake time of any run (one indexed read): when the next tick has work."""
        return self.db.autocommit(runs.next_wake)

    def lookout(self) -> runs.Lookout:
        """The earliest wake time, and whether a person is awaited (one statement): what the loop reads between ticks."""
        return self.db.autocommit(runs.lookout)

    def close_connections(self) -> None:
        """Close the connection of every worker thread and of the caller (the deployment goes to sleep).

        One task per thread: each waits at a barrier until all are placed, so no
        thread takes two. The next unit of work anywhere opens a new connection.
        """
        barrier = threading.Barrier(self.concurrency)

        def close(_: int) -> None:
            barrier.wait(timeout=10)
            self.db.close()

        list(self._pool.map(close, range(self.concurrency)))
        self.db.close()

    def close(self) -> None:
        """Drop queued runs, wait for the ones in hand, then let the threads (and their connections) go."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _walk_one(self, walker: RunWalker, run: Run) -> RunReport | None:
        try:
            return walker.walk(run)
        except Exception:  # one run's failure must not stop the others; its worker gave the run lease back: next tick retries
            logger.exception("walking run %s failed", run.id)
            return None

    def _cleans_up_on_failure(self, tx: Tx, run_id: int) -> bool:
        """The run's document says `cleanup_on: fail` (an unreadable one says nothing: the run fails as before)."""
        run = runs.get(tx, run_id)
        try:
            return run is not None and CleanupOn.FAIL in self._programme_for(run).cleanup_on
        except UnreadableDocument:
            return False

    def _programme_for(self, run: Run) -> Programme:
        # Versions are immutable, so a programme read once serves every later tick of this process.
        key = (run.definition_id, run.definition_version)
        with self._programmes_lock:
            programme = self._programmes.get(key)
        if programme is None:
            version = must_exist(self.db.autocommit(lambda tx: definitions.get_version(tx, *key)))
            programme = programme_of(version.document)
            with self._programmes_lock:
                self._programmes[key] = programme
        return programme
