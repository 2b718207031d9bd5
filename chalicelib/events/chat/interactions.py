"""A press of a chat message's button: who pressed it, whether they may, and the control, as the console's.

Invariant: a press is read only once its platform's signature is checked (`signatures.py`, by the route),
and a signed payload whose parts are not of the platform's shape is 400 (Invalid); then, before the database
is asked anything, a press that is not one of the engine's buttons, from a DM or
another guild or workspace, by someone the deployment maps to no engine role (DISCORD_ROLES, SLACK_ROLES),
or of a control none of their roles may press, is refused privately naming why, and nothing changes. On Discord
a control that asks first (`render.ASKED`: skip, resend) is pressed by the submission of the modal its button
opened (MODAL_SUBMIT, which carries the message the button was on and the reason typed), read and held exactly
as a button's press; a submission of any other control is no form of the engine's. A press that may be made
is the control's command on the one template (`protocol.within`): in one transaction the message is checked
to be the one recorded for the run and step its button names (an identifier edited to name another run or step
matches nothing) and the button one that message shows while its step waits (`render.ever_shown`: no Skip
carrying an answer, no I have it on a decision), then the command's guard, its log row and, when the press took,
the `chat.pressed` row saying who and from where (a press that changed nothing, the same person's I have it
again, writes none); the platform's interaction id (Discord's `id`, Slack's `trigger_id`: a payload without
one is 400) is the press's Idempotency-Key, so a re-delivered press changes nothing and shows what the first
left. A press never settles its message: its own edit (a type 7 answer, `@original`, Slack's
`response_url`) is made after the commit and may not land, so the tick's chore edits the message once its step no longer
waits (`settle.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from ...config import Settings
from ...db import Clock, Database, Tx, must_exist
from ...errors import Forbidden
from ...roles import named
from .. import journal
from ..commands import CONTROLS, Acknowledge, Context, Press, within
from ..commands.rules import had_by
from ..errors import AnsweredBefore, Clash, Conflict, Invalid, KeyReused, NewerRow, NotFound, Refused, Stale, TooLate
from ..model import Step
from ..store import chat_messages, log, runs, steps
from .platforms import Message
from .render import asked, button_id, current, ended_words, ever_shown, parse, who, written

COMPONENT, MODAL_SUBMIT = 3, 5  # the Discord interactions a press comes as: a button's, an asking modal's submission
REFUSED_BY_THE_RULES = (Conflict, Stale, NotFound, Forbidden, Invalid, KeyReused, Clash, NewerRow)


@dataclass(frozen=True)
class ChatPress:
    """A signed press, read: who (their chat identity, name and engine roles), what, from where, and how to
    edit its message later (Discord's application id and interaction token; Slack's response_url)."""

    platform: str
    user_id: str
    name: str
    roles: list[str]
    run_id: int
    step_id: int
    control: str
    choice: int | None
    interaction_id: str
    channel_id: str
    message_id: str
    place: str  # the guild or workspace
    reply: dict[str, str] = field(default_factory=dict)
    note: str | None = None  # the reason typed in the modal a Discord press was asked in

    @property
    def actor(self) -> str:
        return f"{self.platform}:{self.user_id}"

    @property
    def key(self) -> str:
        """The Idempotency-Key the press is made with: the platform's id of this interaction."""
        return f"{self.platform}:{self.interaction_id}"[:64]

    def event(self) -> dict[str, Any]:
        """What the asynchronous half is handed (`finish`): the press, whole."""
        return asdict(self)


@dataclass(frozen=True)
class Pressing:
    """What a press came to: the message as it now stands, and the why of a press that did not take."""

    message: Message | None  # None: nothing to show (the step is gone)
    refused: str | None = None  # as the platform shows it (Slack's escaped: `render.written`)
    made_work_at: datetime | None = None  # the press's time, when it took and its control wakes the tick


def read_discord(payload: dict[str, Any], settings: Settings) -> ChatPress:
    """A Discord MESSAGE_COMPONENT interaction (type 3), or the MODAL_SUBMIT (type 5) of the modal an asking
    button opened, read and held to who may press (Refused otherwise)."""
    data, message = _shaped(payload.get("data"), "data"), _shaped(payload.get("message"), "message")
    pressed = parse(data.get("custom_id"))
    if pressed is None:
        raise Refused("This button is not one of the event engine's: nothing was changed.")
    submitted = payload.get("type") == MODAL_SUBMIT
    if submitted and asked(pressed) is None:
        raise Refused("This form is not one of the event engine's: nothing was changed.")
    note_field = CONTROLS[pressed.control].note_field
    note = _typed(data).get(note_field) if submitted and note_field else None
    guild = payload.get("guild_id")
    if settings.discord_guild_id is None:  # refused at start (config.py); said plainly if it comes to that anyway
        raise Refused("This deployment names no Discord server (DISCORD_GUILD_ID), so no press counts: tell an organiser.")
    # guard: a-press-from-another-guild-is-taken
    if guild is None or guild != settings.discord_guild_id:
        raise Refused("Presses count only in the event's own server, not in a direct message or another server.")
    interaction_id = _interaction_id(payload.get("id"), "id")
    member = _shaped(payload.get("member"), "member")
    user, roles = _shaped(member.get("user"), "user"), _shaped(member.get("roles"), "roles", list)
    held = {role for chat_id, role in settings.discord_roles if chat_id in roles}
    name = member.get("nick") or user.get("global_name") or user.get("username") or str(user.get("id"))
    return allowed(ChatPress(
        "discord", str(user.get("id")), str(name), sorted(held), pressed.run_id, pressed.step_id, pressed.control,
        pressed.choice, interaction_id, str(payload.get("channel_id")), str(message.get("id")), str(guild),
        {"application_id": str(payload.get("application_id")), "token": str(payload.get("token"))}, note))


def _typed(data: dict[str, Any]) -> dict[str, str]:
    """What a modal's submission says its text inputs hold, by their custom_id (each in a label, or in an action
    row as Discord's older modals put it)."""
    typed: dict[str, str] = {}
    for row in _shaped(data.get("components"), "data.components", list):
        row = _shaped(row, "submitted component")
        parts = [row["component"]] if "component" in row else _shaped(row.get("components"), "row's components", list)
        for part in parts:
            part = _shaped(part, "submitted component")
            value = part.get("value")
            if part.get("type") == 4 and isinstance(part.get("custom_id"), str):
                if not isinstance(value, str | None):
                    raise Invalid("a submitted text input's value is a string")
                typed[part["custom_id"]] = value or ""
    return typed


def read_slack(body: bytes, settings: Settings) -> ChatPress:
    """A Slack `block_actions` payload (form-encoded `payload`), read, with its user's own roles: who may press
    is judged in the asynchronous half (`allowed`), once the user groups are read (`groups.py`)."""
    try:
        payload = json.loads(parse_qs(body.decode())["payload"][0])
    except (KeyError, ValueError, UnicodeDecodeError, RecursionError):  # JSON nested past Python's stack: no press
        raise Invalid("a Slack interaction carries its JSON in the form field payload") from None
    if not isinstance(payload, dict):
        raise Invalid("a Slack interaction's payload is a JSON object")
    url = str(payload.get("response_url") or "")
    actions = _shaped(payload.get("actions"), "actions", list) or [{}]
    pressed = parse(_shaped(actions[0], "actions[0]").get("action_id"))
    if pressed is None:
        raise Refused("This button is not one of the event engine's: nothing was changed.", url)
    team = _shaped(payload.get("team"), "team").get("id")
    if settings.slack_team_id is None:  # refused at start (config.py), as DISCORD_GUILD_ID is
        raise Refused("This deployment names no Slack workspace (SLACK_TEAM_ID), so no press counts: tell an organiser.", url)
    if team is None or team != settings.slack_team_id:
        raise Refused("Presses count only in the event's own workspace.", url)
    user = _shaped(payload.get("user"), "user")
    channel, container = _shaped(payload.get("channel"), "channel"), _shaped(payload.get("container"), "container")
    trigger = _interaction_id(payload.get("trigger_id"), "trigger_id")
    held = {role for chat_id, role in settings.slack_roles if chat_id == user.get("id")}
    return ChatPress(
        "slack", str(user.get("id")), str(user.get("name") or user.get("username") or user.get("id")), sorted(held),
        pressed.run_id, pressed.step_id, pressed.control, pressed.choice, trigger,
        str(channel.get("id")), str(container.get("message_ts")), str(team), {"response_url": str(payload.get("response_url"))})


def _interaction_id(value: Any, what: str) -> str:
    """The platform's id of an interaction (Discord's `id`, Slack's `trigger_id`): the press's Idempotency-Key,
    so one without it is no press the platforms send (Invalid), never a key that every such press would share."""
    # guard: a-press-without-its-id-shares-a-key
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"an interaction carries its {what}, a string")
    return value


def _shaped(value: Any, what: str, kind: type[dict[str, Any]] | type[list[Any]] = dict) -> Any:
    """A part of a payload, an object (or with `kind` list, an array); empty when absent. A signed payload whose
    part is of another type is no press the platforms send: Invalid (400), nothing read further."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise Invalid(f"an interaction's {what} is a JSON {'object' if kind is dict else 'array'}")
    return value


def allowed(press: ChatPress, response_url: str = "", unread: tuple[str, ...] = ()) -> ChatPress:
    """The press, if its roles may press its control (Refused otherwise, naming why; `unread`: the user groups
    whose members could not be read, `groups.py`)."""
    control = CONTROLS[press.control]
    if not press.roles:
        unknown = f" (the user groups {', '.join(unread)} could not be read just now)" if unread else ""
        raise Refused(f"You have no role the event engine knows ({press.platform.upper()}_ROLES maps its roles{unknown}),"
                      " so your presses change nothing. Ask an organiser.", response_url)
    # guard: a-chat-press-skips-the-controls-roles
    if not control.gate & set(press.roles):
        raise Refused(f"{control.label} needs the role {named(control.gate)}; you have"
                      f" {', '.join(press.roles)}. Nothing was changed.", response_url)
    return press


def perform(db: Database, clock: Clock, press: ChatPress, mapped: frozenset[str],
            in_time: Callable[[], bool] | None = None) -> Pressing:
    """The press as the control it names, in one transaction; what the message shows after it, its buttons
    those some `mapped` role (the platform's, `render.mapped_roles`) may press. With `in_time`, the transaction
    is begun only while it says so (TooLate otherwise, nothing done): the API's worker, whose answer may have
    gone (`answers.py`)."""
    try:
        return db.transaction(lambda tx: _perform(tx, clock, press, mapped, in_time))
    except AnsweredBefore:  # the same interaction again: nothing written, the message as the first left it
        # and the wake again: the half that made the press may have been frozen (a Lambda after its answer)
        # between its commit and its nudge; a deployment already woken is not nudged twice
        again = clock.now() if CONTROLS[press.control].wakes else None
        return db.autocommit(lambda tx: Pressing(_shown(tx, press, mapped), made_work_at=again))
    except REFUSED_BY_THE_RULES as refusal:
        words = refusal.messages[0] if hasattr(refusal, "messages") else str(refusal)
        return db.autocommit(lambda tx: _refused(tx, press, mapped, words))


def _not_pressable(tx: Tx, press: ChatPress) -> str:
    """Why a press's message is not the one its step's buttons press: asked again below (the step's message was
    posted anew in its channel), or it carries no button of that run's step at all (an identifier edited)."""
    recorded = chat_messages.of_step(tx, press.step_id, press.platform)
    if any(m.message_id == press.message_id and m.run_id == press.run_id for m in recorded):
        return "this message was asked again below: press the newer one. Nothing was changed"
    return f"this message carries no button of run {press.run_id}'s step {press.step_id}: nothing was changed"


def _perform(tx: Tx, clock: Clock, press: ChatPress, mapped: frozenset[str], in_time: Callable[[], bool] | None) -> Pressing:
    # before the transaction's first statement (which begins it): no row read, none locked
    # guard: a-press-worker-acts-after-its-answer
    if in_time is not None and not in_time():
        raise TooLate(f"run {press.run_id}: a {press.platform} press of step {press.step_id} was answered before it began")
    now = clock.now()
    # guard: a-button-edited-to-another-step-is-pressed
    message = chat_messages.pressed_on(tx, press.platform, press.message_id, press.run_id, press.step_id)
    if message is None:
        raise NotFound(_not_pressable(tx, press))
    control = CONTROLS[press.control]
    step = steps.get_on_run(tx, press.run_id, press.step_id)
    if step is None:
        raise NotFound(f"run {press.run_id} has no step {press.step_id} any more")
    # guard: a-chat-press-of-a-button-its-message-never-showed
    if button_id(press.run_id, press.step_id, press.control, press.choice) not in {b.custom_id for b in ever_shown(step, mapped)}:
        return Pressing(_message_of(tx, step, press.platform, mapped), written(
            f"{step.named}: its message carries no such button: nothing was changed.",
            press.platform))
    body: dict[str, Any] = {} if press.choice is None else {"choice": _choice(step, press)}
    if press.note is not None and control.note_field:
        body[control.note_field] = press.note  # kept as the console's is (`clean_note`: trimmed, empty is none)
    command = control.pressed({"run_id": press.run_id, "step_id": press.step_id}, body)
    roles = frozenset(press.roles)
    within(tx, command, Context(press.actor, now, Press(key=press.key), roles if control.cue_only(roles) else None,
                                parked_only=True))
    after = steps.get_on_run(tx, press.run_id, press.step_id)
    # A press that took keeps its key (`protocol.within`); one that changed nothing (the same person's I have it
    # again) wrote nothing, and no row says it took.
    # guard: a-chat-press-that-changed-nothing-is-logged
    if log.remembered(tx, press.run_id, press.key) is None:
        return Pressing(None if after is None else _message_of(tx, after, press.platform, mapped))
    log.append(tx, journal.chat_pressed(step, press.actor, press.control, platform=press.platform, user_id=press.user_id,
                                        name=press.name, place=press.place, channel_id=press.channel_id,
                                        message_id=press.message_id, interaction_id=press.interaction_id), now)
    made_work_at = now if control.wakes else None
    if after is None:
        return Pressing(None, made_work_at=made_work_at)
    return Pressing(_message_of(tx, after, press.platform, mapped), made_work_at=made_work_at)


def _choice(step: Step, press: ChatPress) -> str:
    if press.choice is None or press.choice >= len(step.choices):
        raise Invalid(f"{step.named} offers no answer number {press.choice}")
    return str(step.choices[press.choice]["value"])


def _shown(tx: Tx, press: ChatPress, mapped: frozenset[str]) -> Message | None:
    step = steps.get_on_run(tx, press.run_id, press.step_id)
    return None if step is None else _message_of(tx, step, press.platform, mapped)


def _refused(tx: Tx, press: ChatPress, mapped: frozenset[str], words: str) -> Pressing:
    """A press the rules refused, with the message as it stands; when the step's wait had ended (another press
    or the console came first), the why says who ended it and when, as the message will."""
    words = written(words, press.platform)  # the rules' words name the step, authored words among them
    step = steps.get_on_run(tx, press.run_id, press.step_id)
    if step is None:
        return Pressing(None, words)
    if press.control == Acknowledge.name and step.parked_cue and step.acknowledged_by not in (None, press.actor):
        # someone else has it: named as the chat names people, and the control that takes it is the console's
        words = (written(f"{step.named}: ", press.platform) + had_by(step, lambda actor: who(actor, press.platform))
                 + "; to have it yourself, take it over on the console.")
    if not step.parked:
        ended = chat_messages.how_it_ended(tx, step.run_id, step.id)
        words = f"{words}: {ended_words(step, ended, press.platform)}. Your press changed nothing."
    return Pressing(_message_of(tx, step, press.platform, mapped), words)


def _message_of(tx: Tx, step: Step, platform: str, mapped: frozenset[str]) -> Message:
    """The step's message as it stands (how its wait ended read only once it ended), marked as its run's mode."""
    ended = None if step.parked else chat_messages.how_it_ended(tx, step.run_id, step.id)
    return current(step, must_exist(runs.get(tx, step.run_id)).mode, ended, platform, mapped)
