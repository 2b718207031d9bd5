"""event_chat_messages: the Discord and Slack messages that carry a step's buttons (`events/chat/`).

Invariant: a message is recorded once its platform has accepted it (one per step and channel: a cue posted
again replaces the row), and it is edited to say how its step's wait ended exactly once: `settle` is a
compare-and-set on `settled_at` still NULL, made only by the tick's chore once its edit was taken and the
step no longer waits (its status is not running: a step being dispatched is running under a lease, so a cue
being posted is never settled before it parks); a press from the chat never settles it, as its own edit of
the message may not land, and a press's edit that did land unsettles it (`edited_by_a_press`), as it may
have put back an older state of the step after the tick's edit; one that landed while the tick's chore was
between its edit and its settle is counted (`press_edits`), and the settle, held to the count it read, does not
take: the next tick edits the message again. A failed edit is tried
again at `edit_at` (`settle.py` says when, and when it gives up), each try counted (`edit_tries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Tx
from .. import journal
from ..lifecycle import StepSQL
from . import log

COLUMNS = "m.id, m.run_id, m.step_id, m.platform, m.channel_id, m.message_id, m.edit_tries, m.posted_at, m.press_edits"


@dataclass(frozen=True)
class ChatMessage:
    id: int
    run_id: int
    step_id: int
    platform: str  # discord | slack
    channel_id: str
    message_id: str  # Discord's message id, Slack's ts
    edit_tries: int = 0
    posted_at: datetime | None = None
    press_edits: int = 0  # how many presses' own edits of it landed (`edited_by_a_press`)


def record(tx: Tx, run_id: int, step_id: int, platform: str, channel_id: str, message_id: str, now: datetime) -> None:
    tx.execute(
        "INSERT INTO event_chat_messages (run_id, step_id, platform, channel_id, message_id, posted_at)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE message_id = VALUES(message_id),"
        " posted_at = VALUES(posted_at), settled_at = NULL, settled_as = NULL, edit_tries = 0, edit_at = NULL",
        (run_id, step_id, platform, channel_id, message_id, now))


def of_step(tx: Tx, step_id: int, platform: str | None = None) -> list[ChatMessage]:
    """The step's messages (on one platform), oldest first."""
    where = "" if platform is None else " AND m.platform = %s"
    rows = tx.all(f"SELECT {COLUMNS} FROM event_chat_messages m WHERE m.step_id = %s{where} ORDER BY m.id",  # noqa: S608
                  (step_id,) if platform is None else (step_id, platform))
    return [ChatMessage(**row) for row in rows]


def pressed_on(tx: Tx, platform: str, message_id: str, run_id: int, step_id: int) -> ChatMessage | None:
    """The message a press came from, when it is the one recorded for that run and step (a button's identifier
    edited to name another run or step matches nothing). An exclusive locking read: a second press of the
    message waits here until the first has committed (a shared lock would not wait, as a press writes nothing
    to the row), and it takes no snapshot, so the command's reads after it (the step's, its Idempotency-Key's)
    see that press; a plain read here would pin the snapshot before it."""
    # guard: a-press-reads-its-message-before-another-press-commits
    row = tx.one(f"SELECT {COLUMNS} FROM event_chat_messages m WHERE m.platform = %s AND m.message_id = %s"  # noqa: S608
                 " AND m.run_id = %s AND m.step_id = %s FOR UPDATE", (platform, message_id, run_id, step_id))
    return None if row is None else ChatMessage(**row)


def unsettled(tx: Tx, now: datetime, limit: int, platforms: frozenset[str]) -> list[ChatMessage]:
    """Messages on `platforms` whose step no longer waits and that do not say so yet, whose next edit try has
    come. Only the platforms the tick has a bot for: a batch of another's would fill `limit` for ever."""
    if not platforms:
        return []
    # guard: a-chat-message-is-settled-while-its-step-waits
    rows = tx.all(
        f"""SELECT {COLUMNS} FROM event_chat_messages m JOIN event_run_steps s ON s.id = m.step_id
             WHERE m.settled_at IS NULL AND (m.edit_at IS NULL OR m.edit_at <= %s)
               AND s.status <> {StepSQL.RUNNING} AND m.platform IN ({_places(platforms)})
             ORDER BY m.id LIMIT %s""", (now, *sorted(platforms), limit))  # noqa: S608 — the renderings are constants
    return [ChatMessage(**row) for row in rows]


def _places(values: frozenset[str]) -> str:
    return ", ".join(["%s"] * len(values))


def next_edit_at(tx: Tx, platforms: frozenset[str]) -> datetime | None:
    """When the tick's chore next has a message on `platforms` to edit (`unsettled`'s rows: its next try, or at
    once when it has none yet, as its posting time); None when none has. A platform whose bot is no longer
    configured is left out: its messages would keep a sleeping deployment awake for ever."""
    if not platforms:
        return None
    row = tx.one(
        f"""SELECT MIN(COALESCE(m.edit_at, m.posted_at)) AS due FROM event_chat_messages m
              JOIN event_run_steps s ON s.id = m.step_id
             WHERE m.settled_at IS NULL AND s.status <> {StepSQL.RUNNING} AND m.platform IN ({_places(platforms)})""",  # noqa: S608
        tuple(sorted(platforms)))
    return None if row is None else row["due"]


def settle(tx: Tx, message: ChatMessage, words: str | None, now: datetime) -> bool:
    """The message says how its step's wait ended (None: its edits were given up); False if it already did, if
    its row now holds a message posted after it (`record`: the step's cue posted again), or if a press's own edit
    landed since `message` was read (its older picture may stand over the edit this settles)."""
    # guard: a-settle-lands-on-the-message-posted-after-it
    return tx.execute("UPDATE event_chat_messages SET settled_at = %s, settled_as = %s WHERE id = %s"
                      " AND message_id = %s AND settled_at IS NULL AND press_edits = %s",
                      (now, None if words is None else words[:400], message.id, message.message_id,
                       message.press_edits)) == 1


def edited_by_a_press(tx: Tx, platform: str, message_id: str, run_id: int, step_id: int) -> bool:
    """A press's own edit of the message landed (Discord's `@original`, Slack's `response_url`): it shows the
    step as the press left it, which may be older than what the tick's edit said since (a press made while the
    step waited, finished after someone else ended the wait). It is counted, so a settle by a chore that read the
    message before it does not take; a settled message is the chore's again, so the tick says how the wait ended
    once more (its tries begun afresh). False when the message is no longer the one recorded."""
    # MySQL assigns left to right, each seeing the ones before: the tries are read before settled_at is cleared.
    # guard: a-late-press-edit-leaves-the-message-stale
    return tx.execute("UPDATE event_chat_messages SET edit_tries = IF(settled_at IS NULL, edit_tries, 0),"
                      " edit_at = IF(settled_at IS NULL, edit_at, NULL), press_edits = press_edits + 1,"
                      " settled_at = NULL, settled_as = NULL"
                      " WHERE platform = %s AND message_id = %s AND run_id = %s AND step_id = %s",
                      (platform, message_id, run_id, step_id)) == 1


def edit_failed(tx: Tx, message: ChatMessage, again_at: datetime) -> bool:
    """One more edit try failed: the next is due at `again_at`; False if the message was settled meanwhile, or
    its row holds a message posted after it."""
    # guard: a-failed-edit-counts-against-the-message-posted-after-it
    return tx.execute("UPDATE event_chat_messages SET edit_tries = edit_tries + 1, edit_at = %s WHERE id = %s"
                      " AND message_id = %s AND settled_at IS NULL AND edit_tries = %s",
                      (again_at, message.id, message.message_id, message.edit_tries)) == 1


@dataclass(frozen=True)
class Ended:
    """How a step's wait ended, from its last step.status row: who, when, by which control or cause."""

    actor: str
    at: datetime
    detail: dict[str, Any]


def how_it_ended(tx: Tx, run_id: int, step_id: int) -> Ended | None:
    """The step's last step.status row."""
    row = log.latest_of_step(tx, run_id, step_id, journal.STEP_STATUS)
    return None if row is None else Ended(row.actor or journal.RUNNER, row.created_at, row.detail or {})
