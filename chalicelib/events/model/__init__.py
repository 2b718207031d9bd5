"""The engine's typed rows: each row as the store reads it, and as the API shows it; the one import door of
the rows (`from ..model import …`).

The invariant: a row is typed once, here; its words (statuses, kinds, reasons) are the
lifecycle's (`lifecycle/`), imported from there and never re-exported here, its errors in
errors.py, its log rows in journal.py. The rows live by what they describe:

    runs.py         a run (and a dry run's settings), its phases, the signals it received, its log
    steps.py        a step as authored and as its row stands, its claim, a cue's timers, a resource it left
    definitions.py  a definition, its versions, what the planner needs of one that recurs, a skipped occurrence
    values.py       notes, whole numbers, times and JSON columns, as every row keeps and shows them
"""

from .definitions import (
    Definition,
    DefinitionVersion,
    OccurrenceSkip,
    Recurrence,
    ScheduleLogEntry,
    SchedulePause,
    VersionSummary,
)
from .runs import Health, HealthSQL, LogEntry, Phase, Rehearsal, Run, Signal
from .steps import Attention, Claim, OnlyIf, Resource, Revert, Step, StepSpec, step_label, step_named
from .values import MAX_NOTE, clean_note, is_whole_number, iso, kept_note

__all__ = [
    "MAX_NOTE", "Attention", "Claim", "Definition", "DefinitionVersion", "Health", "HealthSQL", "LogEntry", "OccurrenceSkip",
    "OnlyIf", "Phase", "Recurrence", "Rehearsal", "Resource", "Revert", "Run", "ScheduleLogEntry", "SchedulePause",
    "Signal", "Step", "StepSpec", "VersionSummary",
    "clean_note", "is_whole_number", "iso", "kept_note", "step_label", "step_named",
]
