"""What a cue or an announcement posts, and the one interface of whatever carries it.

A Notice is the authored text and where it comes from, whichever channel
carries it; a Channel (`adapters/channels.py` builds them from the settings)
either delivers a notice or raises ChannelError: a notice is never dropped
silently. Whatever its kind and whatever an author wrote, a notice fits the
Limit its channel declares: one rule (`shorten`) cuts the text and ends it with
an ellipsis, never the run, step or console link around it. A notice about a step
names it by its one name (`Step.named`: "Run 6 · Phase 1 · step 2 (light the
bonfire)"), never by its database id alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from ..lifecycle import WaitingFor
from ..model import Step


class Channel(Protocol):
    name: str
    timeout: float  # the longest one post may take

    def post(self, notice: Notice) -> None:
        """Deliver `notice`; raise ChannelError if it was not delivered."""


@dataclass(frozen=True)
class Notice:
    """What a core action posts: the authored text and where it comes from."""

    kind: str  # "cue", "announce", or one of the engine's own (`ABOUT_A_WAIT`)
    text: str  # the instruction or message as authored (for the engine's own kinds, its sentence)
    run_id: int
    step_id: int | None  # None for "advance" and "stall": they are about a run, not a step
    idempotency_key: str
    at: datetime  # the tick's clock: webhooks sign with it
    link: str | None = None  # the run's page in the console
    rehearsal: bool = False  # from a dry run: what a person reads begins with REHEARSAL_PREFIX
    choices: tuple[str, ...] = ()  # a cue that asks: its answers' labels (a chat message's buttons)
    decision: bool = False  # an escalation of a step parked in doubt: a person confirms, skips or resends it
    step_named: str | None = None  # the step's one name (`Step.named`); None for a notice about a run
    # The step's `attempts_allowed_from`: it rises only when a person grants the step new attempts (a retry, a
    # resend), so a notice posted again after that is told from the same notice's own retries (`delivery_key`).
    allowance: int = 0

    @property
    def delivery_key(self) -> str:
        """The key a receiver deduplicates on (a webhook's Idempotency-Key, an SNS FIFO topic's deduplication id,
        Discord's nonce): the notice's own key, the same for every try of one post, so a try taken but answered
        too late is one delivery; after a person granted new attempts, with their marker, so the post a person
        asked for again is a delivery of its own and not a repeat a receiver drops (SNS drops one silently)."""
        # guard: a-notice-asked-for-again-is-taken-for-a-repeat
        return self.idempotency_key if not self.allowance else f"{self.idempotency_key}:a{self.allowance}"

    @classmethod
    def of(cls, step: Step, kind: str, text: str, at: datetime, console_url: str | None) -> Notice:
        return cls(kind, text, step.run_id, step.id, step.idempotency_key, at, console_link(console_url, step.run_id),
                   choices=tuple(str(c["label"]) for c in step.choices) if kind == "cue" else (), step_named=step.named,
                   allowance=step.attempts_allowed_from)

    @classmethod
    def reminder(cls, step: Step, n: int, of: int, waited_seconds: int, at: datetime, console_url: str | None) -> Notice:
        """The n-th reminder of a parked cue: which one it is, how long the cue has waited, that nobody has it
        (or whose hold lapsed)."""
        text = (f"Reminder {n} of {of}: {step.named} has waited {waited(waited_seconds)} for a game master, "
                f"and {_nobody(step, 'yet')}: {step.params.get('instruction', step.action_id)}")
        return cls("reminder", text, step.run_id, step.id, f"{_round_key(step)}:r{n}", at,
                   console_link(console_url, step.run_id), step_named=step.named, allowance=step.attempts_allowed_from)

    @classmethod
    def escalation(cls, step: Step, waited_seconds: int, at: datetime, console_url: str | None) -> Notice:
        """A parked cue nobody has answered or acknowledged in time (or whose hold lapsed unanswered), or a step
        parked in doubt nobody decided."""
        if step.parked_in_doubt:
            text = (f"Escalation: {step.named} has waited {waited(waited_seconds)} for a decision: the game may or"
                    " may not have applied it; confirm, skip or resend it")
        else:
            text = (f"Escalation: {step.named} has waited {waited(waited_seconds)} for a game master, and "
                    f"{_nobody(step)}: {step.params.get('instruction', step.action_id)}")
        return cls("escalation", text, step.run_id, step.id, f"{_round_key(step)}:e", at,
                   console_link(console_url, step.run_id), decision=step.parked_in_doubt, step_named=step.named,
                   allowance=step.attempts_allowed_from)

    @classmethod
    def stall(cls, run_id: int, n: int, waiting_for: WaitingFor, waited_seconds: int, at: datetime,
              console_url: str | None) -> Notice:
        """A run that has waited too long for a person: paused (a resume) or held (an advance)."""
        what = "to be resumed" if waiting_for is WaitingFor.RESUME else "for a person to advance its phase"
        text = f"Escalation: run {run_id} has waited {waited(waited_seconds)} {what}"
        return cls("stall", text, run_id, None, f"{run_id}:stall:{n}", at, console_link(console_url, run_id))

    @classmethod
    def of_hold(cls, run_id: int, phase: int, name: str, at: datetime, console_url: str | None) -> Notice:
        """A run's manual phase is done and holds until a person advances it."""
        text = f"Run {run_id} waits for a person to advance phase {phase} ({name})"
        return cls("advance", text, run_id, None, f"run-{run_id}-phase-{phase}-held", at, console_link(console_url, run_id))

    def message(self, limit: Limit | None = None) -> str:
        """What a person reads. A cue names its run and step and links to the run, so the
        game master who reads it knows where to confirm it; the engine's own sentences about a wait
        link to the run; an announcement is its text. With `limit`, the text is shortened (never the
        run, step or link) to fit. A dry run's begins with REHEARSAL_PREFIX, whatever it is."""
        if self.rehearsal:
            # guard: a-dry-runs-message-is-not-marked-rehearsal
            return REHEARSAL_PREFIX + replace(self, rehearsal=False).message(
                None if limit is None else limit.after(REHEARSAL_PREFIX))
        head, tail = "", ""
        if self.kind == "cue":
            head, tail = "Cue: ", f"\n{self.step_named}: confirm it once done, or skip it."
        if self.link and self.kind != "announce":
            # guard: cue-notice-without-its-link
            tail += f"\n{self.link}"
        # guard: notice-shortened-past-its-run-step-and-link
        return head + shorten(self.text, None if limit is None else limit.after(head + tail)) + tail

    @property
    def subject(self) -> str:
        if self.rehearsal:
            # guard: a-dry-runs-subject-is-not-marked-rehearsal
            return REHEARSAL_PREFIX + replace(self, rehearsal=False).subject
        if self.kind == "advance":
            return f"Run {self.run_id} waits to advance"
        if self.kind in ABOUT_A_WAIT:
            return f"{self.kind.capitalize()} for run {self.run_id}"
        return f"Cue for run {self.run_id}" if self.kind == "cue" else f"Announcement from run {self.run_id}"


REHEARSAL_PREFIX = "[REHEARSAL] "

# The engine's own sentences about a wait (a phase held, a cue reminded or escalated, a run stalled).
ABOUT_A_WAIT = ("advance", "reminder", "escalation", "stall")


def _round_key(step: Step) -> str:
    """The key a parked cue's notices start from: its own, and after the n-th hold released or lapsed `:h{n}`,
    so each round of reminders and escalation has keys of its own."""
    return f"{step.idempotency_key}:h{step.holds_ended}" if step.holds_ended else step.idempotency_key


def _nobody(step: Step, yet: str = "") -> str:
    """Who does not have the cue, as a reminder or an escalation says it: whose hold lapsed unanswered, or that
    nobody has acknowledged it (`yet`, in its first round) or has it now (after a release)."""
    if step.lapse_words is not None:
        return step.lapse_words
    if step.holds_ended:
        return "nobody has it now"
    return f"nobody has acknowledged it {yet}".rstrip()


def waited(seconds: int) -> str:
    """A wait as a person says it: "45 s", "12 min", "3 h 5 min"."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def console_link(console_url: str | None, run_id: int) -> str | None:
    """The run's page: the console reads the run from the fragment."""
    return f"{console_url.rstrip('/')}#/runs/{run_id}" if console_url else None


@dataclass(frozen=True)
class Limit:
    """The most of one text a channel carries, as that channel counts it (characters, or bytes of UTF-8)."""

    most: int
    measure: Callable[[str], int] = len

    def after(self, fixed: str) -> Limit:
        """What is left for the rest of a text once `fixed` (kept whole) is in it."""
        return Limit(self.most - self.measure(fixed), self.measure)


ELLIPSIS = "…"


def shorten(text: str, limit: Limit | None) -> str:
    """`text` as it is if it fits `limit`, else its longest beginning that fits with ELLIPSIS after it."""
    if limit is None or limit.measure(text) <= limit.most:
        return text
    # Every channel's measure grows with the text, so the longest fitting beginning is found by halving.
    fits, too_long = 0, len(text)
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if limit.measure(text[:middle] + ELLIPSIS) <= limit.most:
            fits = middle
        else:
            too_long = middle
    return text[:fits] + ELLIPSIS if limit.measure(ELLIPSIS) <= limit.most else ""
