"""What a chat message says and which buttons it carries, and what a button's identifier names.

Invariant: a button's identifier (`ev:<run>:<step>:<control>[:<choice index>]`, at most 100 characters as
Discord allows) names the run, the step and the control it presses, and for a cue that asks the index of
the answer among the step's choices (so an answer's value, up to 100 characters itself, never has to fit);
`parse` gives back exactly that or None (an answer's index on a Confirm alone, and no number written with a
leading zero: one button, one identifier), and a press is made only of a button its step's message shows while
it waits (`ever_shown`). A message carries the buttons of what its readers may do now: a
parked cue's Confirm (or a button per answer), Skip and I have it (not once someone has it); a decision's
Confirm, Skip and Resend; each only where a role the deployment maps to the platform's people (its
`mapped_roles`: DISCORD_ROLES, SLACK_ROLES) passes that control's roles (`Control.passes`, as a press is judged),
so nobody is shown a button no reader could press; a message about a step whose wait ended says how it ended, who did it and when,
and carries none. Skip and Resend, which cannot be taken back, ask the console's question first (Slack's
confirm; on Discord a modal, `asked`, whose submission is the press). Authored words are `written` for their
platform in every message, the first post and each edit: on Slack as written (`&`, `<` and `>` escaped: the
only markup is the engine's own mention of a person), on Discord as the author's Markdown, with no broadcast.
A dry run's step keeps its rehearsal mark in each edit (`current`: REHEARSAL_PREFIX, as its first post has it,
`Notice.message`), so no press or edit makes it read as a live cue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...config import Settings
from .. import journal
from ..actions.notice import REHEARSAL_PREFIX
from ..adapters.webhook_channel import discord_text, slack_text
from ..commands import CONTROLS, Acknowledge, Confirm, Resend, Skip
from ..commands.rules import UNDECIDED
from ..lifecycle import ParkReason, RunMode, StepStatus
from ..model import Step
from ..store.chat_messages import Ended
from .platforms import Button, Message

PREFIX = "ev"
CUE_CONTROLS = (Confirm.name, Skip.name, Acknowledge.name)
DECISION_CONTROLS = (Confirm.name, Skip.name, Resend.name)
CHAT_CONTROLS = frozenset((*CUE_CONTROLS, *DECISION_CONTROLS))
# What a press cannot take back beyond what it is for: a skip passes the step over for good, a resend may apply it
# twice. The console's question is asked first (Slack's confirm; Discord's modal, with the console's optional
# reason); Confirm and a cue's answer stay one tap, being what the message asks for, and so does I have it, which
# changes nothing in the game.
ASKED = frozenset((Skip.name, Resend.name))
NOBODY_HERE = "nobody here holds a role that may press its controls: open it on the console"
# A number as `button_id` writes it: no leading zero, so one button has one identifier.
_NUMBER = r"(0|[1-9]\d{0,18})"
_ID = re.compile(rf"{PREFIX}:{_NUMBER}:{_NUMBER}:([a-z_]{{1,30}})(?::(0|[1-9]\d?))?")


@dataclass(frozen=True)
class Pressed:
    """What a button's identifier names."""

    run_id: int
    step_id: int
    control: str
    choice: int | None = None  # the index of the answer among the step's choices


def button_id(run_id: int, step_id: int, control: str, choice: int | None = None) -> str:
    return f"{PREFIX}:{run_id}:{step_id}:{control}" + ("" if choice is None else f":{choice}")


def parse(custom_id: object) -> Pressed | None:
    """The run, step, control (and answer) a button names; None for anything else (or a control chat lacks)."""
    found = _ID.fullmatch(custom_id) if isinstance(custom_id, str) else None
    if found is None or found[3] not in CHAT_CONTROLS:
        return None
    if found[4] is not None and found[3] != Confirm.name:  # only a cue's answer carries one: `buttons`
        return None
    return Pressed(int(found[1]), int(found[2]), found[3], None if found[4] is None else int(found[4]))


def mapped_roles(settings: Settings, platform: str) -> frozenset[str]:
    """The engine roles the deployment maps to people on `platform` (the roles a press from there can carry)."""
    mapping = settings.discord_roles if platform == "discord" else settings.slack_roles if platform == "slack" else ()
    return frozenset(role for _, role in mapping)


def for_readers(controls: tuple[str, ...], mapped: frozenset[str], *, cue: bool) -> tuple[str, ...]:
    """The `controls` some `mapped` role may press on a parked cue (`cue`) or a step parked for a decision."""
    # guard: a-chat-button-nobody-here-may-press-is-shown
    return tuple(c for c in controls if CONTROLS[c].passes(mapped, on_parked_cue=cue))


def buttons(run_id: int, step_id: int, controls: tuple[str, ...], choices: tuple[str, ...] = ()) -> tuple[Button, ...]:
    """The buttons of `controls` (their console labels); a cue that asks has a Confirm per answer instead."""
    made: list[Button] = []
    for control in controls:
        if control == Confirm.name and choices:
            made += [Button(label, button_id(run_id, step_id, control, i), primary=True) for i, label in enumerate(choices)]
        else:
            # guard: a-chat-skip-is-one-tap
            asks = CONTROLS[control].question if control in ASKED else None
            note = CONTROLS[control].note_field if control in ASKED else None
            made.append(Button(CONTROLS[control].label, button_id(run_id, step_id, control), primary=control == Confirm.name,
                               asks=asks, note=note))
    return tuple(made)


def asked(pressed: Pressed) -> Button | None:
    """The button pressed, if its control asks first (Skip, Resend): what Discord's modal asks; None otherwise."""
    if pressed.control not in ASKED or pressed.choice is not None:
        return None
    return buttons(pressed.run_id, pressed.step_id, (pressed.control,))[0]


def ever_shown(step: Step, mapped: frozenset[str]) -> tuple[Button, ...]:
    """Every button a message of `step` carries while it waits, for the `mapped` roles, whoever has it: a cue's
    (a Confirm per answer of a cue that asks, Skip, I have it), a decision's (Confirm, Skip, Resend). A press of
    anything else is no button its message showed (an identifier edited to another control or answer)."""
    if step.park_reason is ParkReason.DOUBT:
        return buttons(step.run_id, step.id, for_readers(DECISION_CONTROLS, mapped, cue=False))
    if step.park_reason is ParkReason.CUE:
        return buttons(step.run_id, step.id, for_readers(CUE_CONTROLS, mapped, cue=True),
                       tuple(str(c["label"]) for c in step.choices))
    return ()


def now_buttons(step: Step, mapped: frozenset[str]) -> tuple[Button, ...]:
    """The buttons of a step's message as it stands, for the `mapped` roles: a parked cue's (I have it only
    while nobody has it), a decision's, none once its wait ended."""
    if step.parked_in_doubt:
        return buttons(step.run_id, step.id, for_readers(DECISION_CONTROLS, mapped, cue=False))
    if step.parked_cue:
        controls = CUE_CONTROLS if step.acknowledged_by is None else CUE_CONTROLS[:2]
        return buttons(step.run_id, step.id, for_readers(controls, mapped, cue=True), tuple(str(c["label"]) for c in step.choices))
    return ()


def written(text: str, platform: str) -> str:
    """Words that are not the engine's own markup, as `platform` shows them: Slack's `&`, `<` and `>` escaped (an
    authored `<!channel>` or `<https://…|link>` is no broadcast or disguised link there); Discord's `@everyone`
    and `@here` broken (its Markdown is the author's to use: bold, a masked link)."""
    # guard: authored-markup-reaches-slack-unescaped
    return slack_text(text) if platform == "slack" else discord_text(text)


def who(actor: str, platform: str) -> str:
    """A person as the platform shows them: a chat identity of that platform as its mention (Discord renders
    `<@id>` as the member's name, Slack `<@U…>`; neither pings: mentions are off), anyone else as named."""
    chat, _, user = actor.partition(":")
    return f"<@{user}>" if chat == platform and user else written(actor, platform)


def ended_words(step: Step, ended: Ended | None, platform: str) -> str:
    """How a step's wait ended, for its message: "Confirmed by <@123> at 02:14 UTC (answer: Yes)"."""
    at = "" if ended is None else f" at {ended.at:%H:%M} UTC"
    by = "" if ended is None else f" by {who(ended.actor, platform)}"
    cause = None if ended is None else ended.detail.get("cause")
    if cause is not None and ended is not None and ended.actor in (journal.RUNNER, journal.REHEARSAL):
        by = f" by the engine ({written(str(cause), platform)})"
    chosen = next((written(str(c["label"]), platform) for c in step.choices if str(c["value"]) == step.choice), None)
    words = {StepStatus.DONE: "Confirmed", StepStatus.SKIPPED: "Skipped", StepStatus.CANCELLED: "Cancelled",
             StepStatus.FAILED: "Failed", StepStatus.REFUSED: "Refused", StepStatus.PENDING: "Sent to the game again",
             StepStatus.RUNNING: "Taken up again"}
    return f"{words.get(step.status, step.status.value.capitalize())}{by}{at}" + (f" (answer: {chosen})" if chosen else "")


def instruction(step: Step) -> str:
    """What the step asked, as its message heads it after its name: a cue's instruction, else the decision."""
    return str(step.params.get("instruction") or UNDECIDED)  # a step parked in doubt has no instruction


def current(step: Step, mode: RunMode, ended: Ended | None, platform: str, mapped: frozenset[str]) -> Message:
    """The step's message as it stands now: what it asks and its buttons (for the `mapped` roles) while it
    waits (who has it, if someone does), else how its wait ended; that last line is kept whole when the
    message is fitted to its platform (only the instruction is shortened). Every authored word is `written` as
    the platform shows it as written: only the engine's own mentions are markup. A step of a dry run (its run's
    `mode`) begins with REHEARSAL_PREFIX, as the message's first post (`Notice.message`) does."""
    # guard: a-dry-runs-edited-message-is-not-marked-rehearsal
    mark = REHEARSAL_PREFIX if mode is RunMode.REHEARSAL else ""
    shown = Message(mark + written(f"{step.named}: {instruction(step)}", platform),
                    now_buttons(step, mapped) if step.parked else ())
    if not step.parked:
        return shown.noted(ended_words(step, ended, platform))
    return shown.noted(f"{who(step.acknowledged_by, platform)} has it") if step.acknowledged_by else shown
