"""event_run_steps: every statement, each guarded by its own WHERE clause; the one import door of the store's
step statements (`from ..store import steps`).

Two rules govern the writes:

1. `attempts` is raised by `claim` and by nothing else, and nothing lowers it
   (a sweep that reset it once made the attempt ceiling unreachable and a row
   cycle for ever; a retry that reset it sent the game an attempt its status
   endpoint had fenced off). A person's retry or resend renews the step's
   allowance (`attempts_allowed_from`): the ceiling counts the attempts after it.
2. A *parked* step is `running` with a NULL lease: in flight, held by nobody.
   Nothing treats a NULL lease as stale, so a cue can wait overnight. Its
   `park_reason` says for what: a cue, or a decision on a step in doubt
   (`in_doubt`: its last attempt has no known outcome), which holds its phase.

Every UPDATE of a step is one row of the lifecycle's step transitions table,
rendered by the one writer (`write.py`); the statements live by who sends them:

    reads.py        a step, a run's or a phase's steps, the open and parked ones, how far a phase got
    materialise.py  a phase's steps inserted, each keyed from its own id
    claimer.py      the claim, then its answer's write, fenced on the claim's token and attempt
    sweep.py        steps whose lease lapsed, taken back
    people.py       a person's step controls: confirm, resend, skip, acknowledge, release, take over, retry
    branching.py    a step whose only_if is not met passed over, and a cue's answer read
    attention.py    a parked cue's reminders, escalation and timeout, and the lapse of its hold
    closing.py      the steps of a run or a phase that ended, closed
    fragments.py    the SQL several of their guards share
"""

from .attention import claim_escalation, claim_reminder, drop_timeout, escalation_over, lapse, time_out
from .branching import answer_of, pass_over
from .claimer import PHASE_ENDED, RUN_ENDED, cancel_if_over, claim, claim_token, delay_next, finish, park, reschedule
from .closing import cancel_open, cancel_pending, cancel_phase, skip_phase_for_advance
from .fragments import COLUMNS
from .materialise import keys_stamped, materialise_phase
from .people import (
    acknowledge,
    confirm_parked,
    move_timeout,
    release,
    reopen_reverts,
    requeue_revert,
    requeue_where_stopped,
    resend,
    skip_by_human,
    take_over,
)
from .reads import (
    first_newer,
    get,
    get_on_run,
    holding_phase,
    last_started_seq,
    list_for_phase,
    list_for_run,
    oldest_parked_since,
    open_steps,
    open_steps_and_close_due,
    page_for_run,
    parked_in_doubt_of,
    parked_of,
    phase_ended,
    status_counts,
)
from .sweep import GAVE_UP, Reclaimed, reclaim_stale

__all__ = [
    "COLUMNS", "GAVE_UP", "PHASE_ENDED", "RUN_ENDED", "Reclaimed", "acknowledge", "answer_of", "cancel_if_over", "cancel_open",
    "cancel_pending", "cancel_phase", "claim", "claim_escalation", "claim_reminder", "claim_token", "confirm_parked",
    "delay_next", "drop_timeout", "escalation_over", "finish", "first_newer", "get", "get_on_run", "holding_phase", "keys_stamped",
    "lapse", "last_started_seq", "list_for_phase", "list_for_run", "materialise_phase", "move_timeout", "oldest_parked_since", "open_steps",
    "open_steps_and_close_due", "page_for_run", "park", "parked_in_doubt_of", "parked_of", "pass_over", "phase_ended",
    "reclaim_stale", "release", "reopen_reverts", "requeue_revert", "requeue_where_stopped", "reschedule", "resend", "skip_by_human",
    "skip_phase_for_advance", "status_counts", "take_over", "time_out"
]
