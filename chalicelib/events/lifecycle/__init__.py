"""The lifecycle of runs, phases and steps: every status, condition and wait the engine names, the
transitions between them, their SQL renderings and their words. The one import door.

The invariant: a word of the lifecycle is declared once, in the module of its
vocabulary (`runs`, `steps`, `phases`, `resources`), and everything else imports
it from here (`from ..lifecycle import …`), never from a module of this package
(`tests/test_homes.py` holds both). What a move writes is read from its
transitions table (`runs.TRANSITIONS`), the SQL names a word only through the
renderings of `sql`, and the console reads the words and their labels from
`GET /vocabulary` (`vocabulary`).
"""

from .phases import (
    CLOSED_WORDS,
    After,
    ClosedBy,
    Condition,
    ConditionKind,
    Manual,
    OnDeadline,
    OnTimeout,
    PhaseKind,
    PhaseState,
    SignalEffect,
    Signalled,
    StepsDone,
    condition_of,
)
from .resources import ResourceStatus, undeclared_revert
from .runs import (
    ATTENDED,
    BEFORE_FIRST_PHASE,
    CLEANUP_TARGETS,
    DUE,
    LIVE_PHASE,
    LIVE_RUN,
    OVERLAP_WORDS,
    RUN_FACTS,
    RUNNABLE,
    TERMINAL_RUN,
    TRANSITIONS,
    WORKING,
    CleanupOn,
    LateCleanup,
    Overlap,
    RehearsalBridge,
    RunMode,
    RunStatus,
    Transition,
    Wake,
    Who,
    table,
    writes,
)
from .sql import PhaseSQL, ResourceSQL, RunSQL, StepSQL, WaitSQL, sql_list, sql_literal
from .steps import (
    ABANDON,
    ACKNOWLEDGE,
    CANCEL_OPEN,
    CANCEL_PENDING,
    CLAIM,
    CLOSE_WITH_THE_PHASE,
    CONFIRM,
    DELAY_NEXT,
    DROP_TIMEOUT,
    END_IN_FLIGHT,
    ESCALATE,
    ESCALATION_OVER,
    FINISH,
    GIVE_UP,
    LAPSE,
    MOVE_TIMEOUT,
    OPEN_STEP,
    PARK,
    PARK_IN_DOUBT,
    PASS_OVER,
    RELEASE,
    REMIND,
    REOPEN_REVERT,
    REQUEUE,
    RESCHEDULE,
    RESEND,
    RETRY,
    RETRY_REVERT,
    RUNNER_FINISHES,
    SKIP,
    STAMP_KEY,
    STEP_FACTS,
    STEP_FAILURES,
    STEP_MOVES,
    TAKE_OVER,
    TIME_OUT,
    Count,
    CueOnTimeout,
    Doubt,
    Lease,
    OnDoubt,
    OnFailure,
    ParkReason,
    StepMove,
    StepStatus,
    step_table,
)
from .vocabulary import VOCABULARY_WORDS, vocabulary
from .waits import STALLS, WaitingFor
from .words import Facts

__all__ = [
    "ABANDON", "ACKNOWLEDGE", "ATTENDED", "BEFORE_FIRST_PHASE", "CANCEL_OPEN", "CANCEL_PENDING", "CLAIM", "CLEANUP_TARGETS",
    "CLOSED_WORDS", "CLOSE_WITH_THE_PHASE", "CONFIRM", "DELAY_NEXT", "DROP_TIMEOUT", "DUE", "END_IN_FLIGHT", "ESCALATE",
    "ESCALATION_OVER", "FINISH", "GIVE_UP", "LAPSE", "LIVE_PHASE", "LIVE_RUN",
    "MOVE_TIMEOUT", "OPEN_STEP", "OVERLAP_WORDS", "PARK", "PARK_IN_DOUBT", "PASS_OVER", "RELEASE",
    "REMIND", "REOPEN_REVERT", "REQUEUE",
    "RESCHEDULE", "RESEND", "RETRY", "RETRY_REVERT", "RUNNABLE", "RUNNER_FINISHES", "RUN_FACTS", "SKIP", "STALLS",
    "STAMP_KEY", "STEP_FACTS", "STEP_FAILURES", "STEP_MOVES", "TAKE_OVER", "TERMINAL_RUN", "TIME_OUT", "TRANSITIONS",
    "VOCABULARY_WORDS", "WORKING", "After", "CleanupOn", "ClosedBy", "Condition", "ConditionKind", "Count",
    "CueOnTimeout", "Doubt", "Facts", "LateCleanup", "Lease", "Manual", "OnDeadline", "OnDoubt", "OnFailure", "OnTimeout",
    "Overlap",
    "ParkReason", "PhaseKind", "PhaseSQL", "PhaseState", "RehearsalBridge", "ResourceSQL", "ResourceStatus", "RunMode",
    "RunSQL", "RunStatus", "SignalEffect", "Signalled", "StepMove", "StepSQL", "StepStatus", "StepsDone", "Transition",
    "WaitSQL", "WaitingFor", "Wake", "Who", "condition_of", "sql_list", "sql_literal", "step_table", "table",
    "undeclared_revert", "vocabulary", "writes"
]
