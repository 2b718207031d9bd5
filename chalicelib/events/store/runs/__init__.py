"""event_runs: occurrences, their guarded transitions, the run lease, and the wake time; the one import door of
the store's run statements (`from ..store import runs`).

Every statement that changes a run or hands it back also writes its wake time
(see `wake`): scheduling writes scheduled_for, taking the run lease the lease's expiry
(a worker that dies is looked at again then), the release the earliest timer
from the rows as they stand, and a status change what its row of
`lifecycle.TRANSITIONS` says: a pause or an end NULL, a person's resume now
(confirm and skip wake the run in their own statements, in `steps`).

Every status change is one row of the transitions table, rendered by the one
writer (`moves.move`); the statements live by job:

    reads.py      a run, a page of runs (or the runs a filter matches, counted), the runs of some occurrences or of a
                  window, the due ones, the counts
    scheduled.py  a run created (an occurrence, a dry run), postponed or upgraded, then started within its grace or
                  missed
    moves.py      the one writer of a status change, `transition`, a run failed for its unreadable document, and
                  `degrade`
    leaving.py    a drained phase left (the runner), a held phase's condition met (a person's advance)
    cleanup.py    into cleaning_up, woken, paused on a failed revert, and out to its target; a finished run's
                  cleanup (Clean up), its status kept
    lease.py      the run lease, taken and given back
    overlap.py    the runs of a definition under way when another falls due, and a run queued behind one
"""

from .cleanup import begin_cleanup, begin_late_cleanup, end_cleanup, end_late_cleanup, pause_cleanup, wake_cleanup
from .lease import release_lease, take_lease
from .leaving import advance_phase, leave_phase
from .moves import degrade, fail_unreadable, recover, transition
from .overlap import queue, queued_behind, under_way, waiting_in_line
from .reads import (
    REHEARSAL_FILTERS,
    Lookout,
    RunFilter,
    count_matching,
    find_due,
    get,
    list_page,
    live_between,
    lookout,
    matching,
    next_wake,
    occurrence_key,
    of_occurrences,
    oldest_paused_since,
    scheduled_of_earlier_versions,
    waiting_counts,
    waiting_on,
)
from .scheduled import insert_occurrence, insert_rehearsal, miss_after_grace, postpone, start_within_grace, upgrade

__all__ = [
    "REHEARSAL_FILTERS", "Lookout", "RunFilter", "advance_phase", "begin_cleanup", "begin_late_cleanup", "count_matching",
    "degrade", "end_cleanup", "end_late_cleanup", "fail_unreadable", "find_due", "get",
    "insert_occurrence", "insert_rehearsal", "leave_phase", "list_page", "live_between", "lookout", "matching", "miss_after_grace",
    "next_wake", "occurrence_key", "of_occurrences", "oldest_paused_since", "pause_cleanup", "postpone", "queue",
    "queued_behind", "recover", "release_lease", "scheduled_of_earlier_versions", "start_within_grace", "take_lease",
    "transition", "under_way", "upgrade",
    "waiting_counts", "waiting_in_line", "waiting_on", "wake_cleanup",
]
