"""A step's lifecycle: its statuses, why a parked step waits, and what its failure or its doubt does.

The invariant: a step status, an `on_failure`, an `on_doubt`, a park reason or a
cue's `on_timeout` is named here and nowhere else; the store's SQL writes a step
status only through `StepSQL` (`sql.py`). Every write of a step is a row of the
step transitions table (`STEP_MOVES`): from which statuses, to which, by whom,
and what the move writes besides (the lease, the counters, the attempt
allowance, `in_doubt`, `finished_at`); `store/steps/write.py`, the one writer,
renders the SET and the status part of the WHERE from that row, and
`docs/contract.md`'s step table is `step_table()` (`tests/test_lifecycle.py`
compares them). `attempts` is raised by the claim and lowered by nothing: a
person's retry or resend renews the step's allowance of attempts instead, so
the attempt the game sees only ever rises.

    pending ─► running ─► done | failed | refused     (the claimer)
       ▲          │  (parked: running with no lease)
       └──────────┘  retry, a lease taken back
    pending, parked ─► skipped (a person; a pending step whose only_if is not met, the tick);
                      ─► cancelled (the run ending)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .runs import Who
from .words import Facts


class StepStatus(str, Enum):
    PENDING = "pending"  # waiting its turn (and its due_at)
    RUNNING = "running"  # claimed (lease set) or parked (lease NULL)
    DONE = "done"  # succeeded, or a person confirmed it
    FAILED = "failed"  # failed, or gave up at the attempt ceiling
    REFUSED = "refused"  # the module understood and declined
    SKIPPED = "skipped"  # a person decided against it, or its `only_if` was not met when its turn came
    CANCELLED = "cancelled"  # the engine closed it without running it to the end (its log row says why)

    @property
    def terminal(self) -> bool:
        return STEP_FACTS[self].terminal


STEP_FACTS: dict[StepStatus, Facts] = {
    StepStatus.PENDING: Facts("pending", "○", open=True),
    StepStatus.RUNNING: Facts("running", "▶", open=True),
    StepStatus.DONE: Facts("done", "✓", terminal=True),
    StepStatus.FAILED: Facts("failed", "✕", terminal=True),
    StepStatus.REFUSED: Facts("refused", "✕", terminal=True),
    StepStatus.SKIPPED: Facts("skipped", "↷", terminal=True),
    StepStatus.CANCELLED: Facts("cancelled", "✕", terminal=True),
}

OPEN_STEP = tuple(s for s, f in STEP_FACTS.items() if f.open)
# What a claimer may finish a step as; skipped is a person's decision, cancelled the run's end.
RUNNER_FINISHES = (StepStatus.DONE, StepStatus.FAILED, StepStatus.REFUSED)
# A claimer's outcomes that apply the step's on_failure.
STEP_FAILURES = (StepStatus.FAILED, StepStatus.REFUSED)


class OnFailure(str, Enum):
    PAUSE = "pause"  # run paused, last_error set, health degraded
    SKIP = "skip"  # health degraded, the phase moves on
    ABORT_RUN = "abort_run"  # pending steps cancelled, run failed


class OnDoubt(str, Enum):
    """What a step in doubt (its last attempt has no known outcome) does before it is sent again."""

    RESEND = "resend"  # sent again with the same key: the game is trusted to de-duplicate
    PARK = "park"  # parked for a person's decision: confirm (it was applied), skip, or resend


class ParkReason(str, Enum):
    """Why a parked step waits for a person."""

    CUE = "cue"  # a core.cue: a person does what it asks
    DOUBT = "doubt"  # a step in doubt under on_doubt park: a person decides whether the game applied it


@dataclass(frozen=True)
class ParkWords:
    """How the console shows a parked step: its badge's words, and whether a person decides on it (a decision)."""

    label: str
    decision: bool = False
    default: bool = False  # how a step parked before its reason was kept waits


PARK_WORDS: dict[ParkReason, ParkWords] = {
    ParkReason.CUE: ParkWords("parked: waiting", default=True),
    ParkReason.DOUBT: ParkWords("in doubt: waiting for a decision", decision=True),
}


class CueOnTimeout(str, Enum):
    """What a parked cue does when nobody answered it in time (`core.cue`'s `on_timeout`)."""

    CONTINUE = "continue"  # cancelled, and the phase goes on
    PAUSE = "pause"  # the run pauses once; the cue waits on
    CONFIRM = "confirm"  # done, as if a person had confirmed it


# ── the step transitions table ────────────────────────────────────────────
class Lease(str, Enum):
    """What a move does to the step's lease (`claimed_by`, `claim_expires_at`)."""

    KEPT = "—"
    TAKEN = "taken"  # the claim's token and expiry
    CLEARED = "cleared"  # both NULL: no claimer has it
    CLAIMER_CLEARED = "claimer cleared"  # claimed_by NULL: a pending or parked step has no expiry to clear


class Count(str, Enum):
    """What a move does to a counter (`attempts`, `retries`): a counter only ever rises."""

    KEPT = "—"
    RAISED = "+1"


class Doubt(str, Enum):
    """What a move writes to `in_doubt` (its last attempt has no known outcome)."""

    KEPT = "—"
    SET = "set"  # nobody knows what its attempt did (a lease taken back)
    CLEARED = "cleared"  # a person sends it again knowingly
    ANSWERED = "as answered"  # what the claimer's answer says


@dataclass(frozen=True)
class StepMove:
    """One row of the step transitions table: who moves a step from `sources` to `to`, and what the move
    writes besides (`store/steps/write.py` renders its SET and the status part of its WHERE from it).

    `sources` empty: whatever its status; `to` None: its status kept (a write of a running or pending step's
    own columns). `finished_at` follows the statuses: set by a move into a terminal status, cleared by a move
    out of one.
    """

    name: str
    sources: tuple[StepStatus, ...]
    to: StepStatus | None
    who: Who
    when: str
    lease: Lease = Lease.KEPT
    attempts: Count = Count.KEPT
    retries: Count = Count.KEPT
    in_doubt: Doubt = Doubt.KEPT
    # A fresh allowance of attempts (`attempts_allowed_from = attempts`): the ceiling counts the attempts after
    # it, while the attempt the game sees goes on rising (its status endpoint's fence refuses a lower one).
    renews_allowance: bool = False
    # A person's retry of a step whose last attempt was answered (not in doubt) goes with a new idempotency key:
    # a bridge keeps that answer (a refusal) under the old key and would replay it; one in doubt keeps its key,
    # so the game still applies it at most once.
    fresh_key: bool = False
    clears_due_at: bool = False  # sent again now, not at a retry's or a wait's time
    stamps_first_start: bool = False  # started_at, if it never started

    @property
    def stamps_finished_at(self) -> bool:
        return self.to is not None and self.to.terminal and not all(s.terminal for s in self.sources)

    @property
    def clears_finished_at(self) -> bool:
        return self.to is not None and not self.to.terminal and any(s.terminal for s in self.sources)


_S = StepStatus
_TICK, _PERSON = Who.TICK, Who.PERSON
# The claimer: its claim, then its answer's write, fenced on the claim's token and attempt.
# guard: step-claim-of-a-step-not-pending
CLAIM = StepMove("claim", (_S.PENDING,), _S.RUNNING, _TICK, "its turn has come, it is due, its run is runnable",
                 lease=Lease.TAKEN, attempts=Count.RAISED, stamps_first_start=True)
PARK = StepMove("park", (_S.RUNNING,), None, _TICK, "its answer waits for a person: a cue, or a decision on a step in doubt",
                lease=Lease.CLEARED, in_doubt=Doubt.ANSWERED)
# guard: a-fenced-write-of-a-step-not-running
RESCHEDULE = StepMove("reschedule", (_S.RUNNING,), _S.PENDING, _TICK, "its answer asks for a later attempt",
                      lease=Lease.CLEARED, in_doubt=Doubt.ANSWERED)
FINISH = {to: StepMove("finish", (_S.RUNNING,), to, _TICK, f"its answer is {to.value}", lease=Lease.CLEARED,
                       in_doubt=Doubt.ANSWERED) for to in RUNNER_FINISHES}
END_IN_FLIGHT = StepMove("cancel if over", (_S.RUNNING,), _S.CANCELLED, _TICK,
                         "its answer came after its run or its phase ended (or a cleanup began)", lease=Lease.CLEARED,
                         in_doubt=Doubt.ANSWERED)
# guard: hold-next-holds-a-settled-step
DELAY_NEXT = StepMove("delay next", (_S.PENDING,), None, _TICK, "a wait before it delays it (its due_at, only ever later)")
# The sweep: a lease that lapsed is taken back, and nobody knows what its attempt did.
ABANDON = StepMove("reclaim", (_S.RUNNING,), _S.CANCELLED, _TICK, "its lease lapsed after its run or its phase ended",
                   lease=Lease.CLEARED, in_doubt=Doubt.SET)
GIVE_UP = StepMove("reclaim", (_S.RUNNING,), _S.FAILED, _TICK, "its lease lapsed at the attempt ceiling",
                   lease=Lease.CLEARED, in_doubt=Doubt.SET)
PARK_IN_DOUBT = StepMove("reclaim", (_S.RUNNING,), None, _TICK,
                         "its lease lapsed at the attempt ceiling under `on_doubt: park`: parked for a decision",
                         lease=Lease.CLEARED, in_doubt=Doubt.SET)
# guard: the-sweep-requeues-a-step-without-its-doubt
REQUEUE = StepMove("reclaim", (_S.RUNNING,), _S.PENDING, _TICK, "its lease lapsed below the attempt ceiling",
                   lease=Lease.CLEARED, in_doubt=Doubt.SET)
# A run's or a phase's end.
# guard: cancel-pending-cancels-settled-steps
CANCEL_PENDING = StepMove("cancel pending", (_S.PENDING,), _S.CANCELLED, _TICK, "its run fails (`on_failure: abort_run`)")
CANCEL_OPEN = StepMove("cancel open", (_S.PENDING, _S.RUNNING), _S.CANCELLED, _PERSON,
                       "its run is cancelled, and it is pending or parked", lease=Lease.CLAIMER_CLEARED)
CLOSE_WITH_THE_PHASE = {
    to: StepMove("close with the phase", (_S.PENDING, _S.RUNNING), to, who, when, lease=Lease.CLEARED)
    for to, who, when in (
        (_S.SKIPPED, _PERSON, "a person advances its phase while it is pending, parked or lapsed"),
        (_S.CANCELLED, _TICK, "its phase closes (a signal, `after`, a time limit) while it is pending, parked or lapsed"),
    )
}
# A person's step controls (a confirm and a skip, and a resend, wake its run in the same statement).
# guard: confirm-a-step-that-is-not-running
CONFIRM = StepMove("confirm", (_S.RUNNING,), _S.DONE, _PERSON, "a person did what its parked cue asked",
                   lease=Lease.CLAIMER_CLEARED)
# guard: a-resent-step-stays-in-doubt
# guard: a-resent-step-keeps-its-spent-allowance
RESEND = StepMove("resend", (_S.RUNNING,), _S.PENDING, _PERSON, "a person sends its parked step in doubt again",
                  lease=Lease.CLAIMER_CLEARED, in_doubt=Doubt.CLEARED, renews_allowance=True, clears_due_at=True)
SKIP = {
    source: StepMove("skip", (source,), _S.SKIPPED, _PERSON, f"a person decides against it while it is {when}",
                     lease=Lease.CLAIMER_CLEARED)
    for source, when in ((_S.PENDING, "pending"), (_S.RUNNING, "parked"))
}
ACKNOWLEDGE = StepMove("acknowledge", (_S.RUNNING,), None, _PERSON, "a person has its parked cue")
RELEASE = StepMove("release", (_S.RUNNING,), None, _PERSON, "whoever has its parked cue (or a moderator) lets it go")
TAKE_OVER = StepMove("take over", (_S.RUNNING,), None, _PERSON, "a person takes its parked cue over from whoever has it")
# guard: retry-a-step-that-did-not-fail
# guard: a-retry-keeps-the-retries
# guard: a-retried-step-keeps-its-spent-allowance
RETRY = StepMove("retry", (_S.FAILED,), _S.PENDING, _PERSON, "a person retries the failed step its paused run stopped at",
                 lease=Lease.CLEARED, retries=Count.RAISED, renews_allowance=True, fresh_key=True,
                 clears_due_at=True)
RETRY_REVERT = StepMove("retry", (_S.FAILED, _S.REFUSED), _S.PENDING, _PERSON,
                        "a person retries a revert that failed, of a run paused in its cleanup", lease=Lease.CLEARED,
                        retries=Count.RAISED, renews_allowance=True, fresh_key=True, clears_due_at=True)
REOPEN_REVERT = StepMove("retry", (_S.CANCELLED, _S.FAILED, _S.REFUSED), _S.PENDING, _PERSON,
                         "a person cleans up a finished run: a revert its cancel abandoned, or one that failed or was"
                         " refused, is sent after all",
                         lease=Lease.CLEARED, retries=Count.RAISED, renews_allowance=True, fresh_key=True,
                         clears_due_at=True)
# A parked cue's attention timers (runner/attention.py).
REMIND = StepMove("remind", (_S.RUNNING,), None, _TICK, "its parked cue's reminder is due")
ESCALATE = StepMove("escalate", (_S.RUNNING,), None, _TICK, "its parked cue's escalation is due")
ESCALATION_OVER = StepMove("escalation over", (), None, _TICK, "its escalation was posted, or its last try failed")
LAPSE = StepMove("lapse", (_S.RUNNING,), None, _TICK, "its parked cue's hold lapsed unanswered: nobody has it")
TIME_OUT = {to: StepMove("time out", (_S.RUNNING,), to, _TICK, f"nobody answered its parked cue in time: {to.value}{why}")
            for to, why in ((_S.CANCELLED, ""), (_S.DONE, ""), (_S.FAILED, " (a by-hand revert: its resource left)"))}
DROP_TIMEOUT = StepMove("drop timeout", (_S.RUNNING,), None, _TICK,
                        "its parked cue's timeout paused its run (or came in the ending): it waits on")
# A branch not taken: its turn came, never tried, and its `only_if` is not met (runner/branches.py).
PASS_OVER = StepMove("pass over", (_S.PENDING,), _S.SKIPPED, _TICK,
                     "its turn has come, never tried, and its only_if is not met (the cue's answer or the signal's value)")
# Its idempotency key, from its own id, once its INSERT has given it one.
STAMP_KEY = StepMove("stamp key", (), None, _TICK, "its phase is materialised")
# A person moves a parked cue's timeout, later or earlier but not into the past (commands/plans.py).
MOVE_TIMEOUT = StepMove("move timeout", (_S.RUNNING,), None, _PERSON, "a person moves its parked cue's timeout")

STEP_MOVES: tuple[StepMove, ...] = (
    CLAIM, PARK, RESCHEDULE, *FINISH.values(), END_IN_FLIGHT, DELAY_NEXT, ABANDON, GIVE_UP, PARK_IN_DOUBT, REQUEUE,
    CANCEL_PENDING, CANCEL_OPEN, *CLOSE_WITH_THE_PHASE.values(), CONFIRM, RESEND, *SKIP.values(), ACKNOWLEDGE, RELEASE,
    TAKE_OVER, RETRY, RETRY_REVERT, REOPEN_REVERT, REMIND, ESCALATE, ESCALATION_OVER, LAPSE, *TIME_OUT.values(),
    DROP_TIMEOUT, PASS_OVER, STAMP_KEY, MOVE_TIMEOUT,
)


def step_table() -> list[tuple[str, ...]]:
    """`STEP_MOVES` as docs/contract.md's step table spells it: move, from, to, who, when, finished_at, lease,
    attempts (and whether the move renews their allowance), retries, in_doubt (and whether the step gets a new key)."""
    def finished(move: StepMove) -> str:
        return "set" if move.stamps_finished_at else "cleared" if move.clears_finished_at else "—"

    return [
        (move.name, ", ".join(s.value for s in move.sources) or "any", "—" if move.to is None else move.to.value,
         move.who.value, move.when, finished(move), move.lease.value,
         f"{move.attempts.value} (allowance renewed)" if move.renews_allowance else move.attempts.value,
         move.retries.value, f"{move.in_doubt.value} (a new key, unless in doubt)" if move.fresh_key else move.in_doubt.value)
        for move in STEP_MOVES
    ]
