"""event_chat_messages: the Discord and Slack messages that carry a step's buttons (`events/chat/`).

Invariant: each message is recorded, one row, once its platform has accepted it (a post answered with a
message recorded before, as Discord answers a nonce it saw, finds that row); the newest row of a step and
channel is its live message, and an older one is superseded: a press on it is no press (`pressed_on`), and the
tick edits it once to say it was asked again below. Every row is edited until it says what its message should:
while its step waits, the hold the step now has (who has its cue: `shown_holder` is the holder the message
last named, '' nobody, NULL not known), and once it no longer waits (or the message is superseded), how its
wait ended exactly once: `settle` is a compare-and-set on `settled_at` still NULL, made only by the tick's
chore once its edit was taken and the step no longer waits (its status is not running: a step being
dispatched is running under a lease, so a cue being posted is never settled before it parks), or once the
message is superseded or given up. A press from the chat never settles it or records what it shows, as its
own edit of the message may not land; a press's edit that did land unsettles it and forgets what it shows
(`edited_by_a_press`), as it may have put back an older state of the step after the tick's edit; one that
landed while the tick's chore was between its edit and its settle (or its record of the holder shown) is
counted (`press_edits`), and the settle, held to the count it read, does not take, nor is the holder taken
as shown: the next tick edits the message again. A failed edit is tried again at `edit_at` (`settle.py` says
when, and when it gives up), each try counted (`edit_tries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...db import Tx
from .. import journal
from ..lifecycle import StepSQL
from . import log

COLUMNS = ("m.id, m.run_id, m.step_id, m.platform, m.channel_id, m.message_id, m.edit_tries, m.posted_at, m.press_edits,"
           " m.shown_holder")
# The step's message posted again in the same channel after `m`: `m` is superseded, its buttons no longer the step's.
_NEWER = ("SELECT 1 FROM event_chat_messages n WHERE n.step_id = m.step_id AND n.platform = m.platform"
          " AND n.channel_id = m.channel_id AND n.id > m.id")
NOBODY = ""  # the holder a message names that offers I have it (`shown_holder`)


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
    shown_holder: str | None = None  # who it last named as having its cue (NOBODY: nobody), None: not known
    superseded_at: datetime | None = None  # when the step's message was posted again in its channel (`unsettled`'s)

    @property
    def superseded(self) -> bool:
        """The step's message was posted again in its channel since: this one's buttons are no longer the step's."""
        return self.superseded_at is not None


def record(tx: Tx, run_id: int, step_id: int, platform: str, channel_id: str, message_id: str, now: datetime) -> None:
    """A message the platform took, naming nobody as having its cue (a cue's post offers I have it): a row of its
    own, so one posted before it for the step keeps its row, superseded, to be edited. A message recorded
    before (a post answered with it again) is its row again, as edited since it is not known."""
    tx.execute(
        "INSERT INTO event_chat_messages (run_id, step_id, platform, channel_id, message_id, posted_at, shown_holder)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE posted_at = VALUES(posted_at),"
        " settled_at = NULL, settled_as = NULL, edit_tries = 0, edit_at = NULL, shown_holder = NULL",
        (run_id, step_id, platform, channel_id, message_id, now, NOBODY))


def of_step(tx: Tx, step_id: int, platform: str | None = None) -> list[ChatMessage]:
    """The step's messages (on one platform), oldest first."""
    where = "" if platform is None else " AND m.platform = %s"
    rows = tx.all(f"SELECT {COLUMNS} FROM event_chat_messages m WHERE m.step_id = %s{where} ORDER BY m.id",  # noqa: S608
                  (step_id,) if platform is None else (step_id, platform))
    return [ChatMessage(**row) for row in rows]


def pressed_on(tx: Tx, platform: str, message_id: str, run_id: int, step_id: int) -> ChatMessage | None:
    """The message a press came from, when it is the one recorded for that run and step (a button's identifier
    edited to name another run or step matches nothing) and the step's message was not posted again in its
    channel since (a superseded message's buttons press nothing, as its edit saying so may not have landed yet).
    An exclusive locking read: a second press of the message waits here until the first has committed (a shared
    lock would not wait, as a press writes nothing to the row), and it takes no snapshot, so the command's reads
    after it (the step's, its Idempotency-Key's) see that press; a plain read here would pin the snapshot before
    it (its anti-join, of the step's newer messages, is read under the same lock: no snapshot either)."""
    # guard: a-press-reads-its-message-before-another-press-commits
    # guard: a-press-on-a-message-asked-again-is-made
    row = tx.one(f"""SELECT {COLUMNS} FROM event_chat_messages m
                       LEFT JOIN event_chat_messages n ON n.step_id = m.step_id AND n.platform = m.platform
                                                      AND n.channel_id = m.channel_id AND n.id > m.id
                      WHERE m.platform = %s AND m.message_id = %s AND m.run_id = %s AND m.step_id = %s
                        AND n.id IS NULL FOR UPDATE""",  # noqa: S608 — COLUMNS is a constant
                 (platform, message_id, run_id, step_id))
    return None if row is None else ChatMessage(**row)


# The rows the tick's chore has an edit for: a message superseded, one whose step no longer waits (running is
# waiting, parked or being dispatched under a lease), or one whose step is parked with a holder the message does
# not name (or not known to).
_DUE = (f"(EXISTS ({_NEWER}) OR s.status <> {StepSQL.RUNNING}"
        # guard: a-waiting-message-is-edited-though-it-shows-its-hold
        " OR (s.claim_expires_at IS NULL AND NOT (m.shown_holder <=> COALESCE(s.acknowledged_by, '') COLLATE utf8mb4_bin)))")


def unsettled(tx: Tx, now: datetime, limit: int, platforms: frozenset[str]) -> list[ChatMessage]:
    """Messages on `platforms` that do not say what they should (`_DUE`) and whose next edit try has come, each
    with when it was superseded (None: it was not). Only the platforms the tick has a bot for: a batch of
    another's would fill `limit` for ever."""
    if not platforms:
        return []
    rows = tx.all(
        f"""SELECT {COLUMNS}, ({_NEWER.replace("SELECT 1", "SELECT MIN(n.posted_at)")}) AS superseded_at
              FROM event_chat_messages m
              JOIN event_run_steps s ON s.id = m.step_id
             WHERE m.settled_at IS NULL AND (m.edit_at IS NULL OR m.edit_at <= %s)
               AND m.platform IN ({_places(platforms)}) AND {_DUE}
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
             WHERE m.settled_at IS NULL AND m.platform IN ({_places(platforms)}) AND {_DUE}""",  # noqa: S608
        tuple(sorted(platforms)))
    return None if row is None else row["due"]


def settle(tx: Tx, message: ChatMessage, words: str | None, now: datetime) -> bool:
    """The message says how its step's wait ended, or that it was asked again below (None: its edits were given
    up); False if it already did, if its step waits again (or is being dispatched) and the message is neither
    superseded nor given up, or if a press's own edit landed since `message` was read (its older picture may
    stand over the edit this settles)."""
    final = message.superseded or words is None
    # guard: a-settle-lands-over-a-press-edit-it-did-not-read
    # guard: a-chat-message-is-settled-while-its-step-waits
    return tx.execute("UPDATE event_chat_messages m JOIN event_run_steps s ON s.id = m.step_id"  # noqa: S608
                      " SET m.settled_at = %s, m.settled_as = %s WHERE m.id = %s AND m.settled_at IS NULL"
                      f" AND m.press_edits = %s AND (%s OR s.status <> {StepSQL.RUNNING})",
                      (now, None if words is None else words[:400], message.id, message.press_edits, final)) == 1


def shown(tx: Tx, message: ChatMessage, holder: str | None) -> None:
    """The tick's edit of the message, its step waiting, was taken naming `holder` (None: nobody) as having its
    cue: so it shows, and its next failure is its first. Not known instead if a press's own edit landed or
    another edit was recorded since `message` was read (either may have landed after this one): the next tick
    edits it again."""
    # guard: a-hold-edit-overtaken-is-taken-as-shown
    tx.execute("UPDATE event_chat_messages SET shown_holder = IF(press_edits = %s AND shown_holder <=> %s, %s, NULL),"
               " edit_tries = 0, edit_at = NULL WHERE id = %s AND settled_at IS NULL",
               (message.press_edits, message.shown_holder, holder or NOBODY, message.id))


def edited_by_a_press(tx: Tx, platform: str, message_id: str, run_id: int, step_id: int) -> bool:
    """A press's own edit of the message landed (Discord's `@original`, Slack's `response_url`): it shows the
    step as the press left it, which may be older than what the tick's edit said since (a press made while the
    step waited, finished after someone else ended the wait or took its cue over). It is counted, so a settle by
    a chore that read the message before it does not take, and what the message shows is no longer known; a
    settled message is the chore's again, so the tick says how the wait ended once more (its tries begun
    afresh). False when the message is no longer recorded for that run and step."""
    # MySQL assigns left to right, each seeing the ones before: the tries are read before settled_at is cleared.
    # guard: a-late-press-edit-leaves-the-message-stale
    return tx.execute("UPDATE event_chat_messages SET edit_tries = IF(settled_at IS NULL, edit_tries, 0),"
                      " edit_at = IF(settled_at IS NULL, edit_at, NULL), press_edits = press_edits + 1,"
                      " settled_at = NULL, settled_as = NULL, shown_holder = NULL"
                      " WHERE platform = %s AND message_id = %s AND run_id = %s AND step_id = %s",
                      (platform, message_id, run_id, step_id)) == 1


def edit_failed(tx: Tx, message: ChatMessage, again_at: datetime) -> bool:
    """One more edit try failed: the next is due at `again_at`; False if the message was settled meanwhile, or
    another try of it was counted since it was read."""
    return tx.execute("UPDATE event_chat_messages SET edit_tries = edit_tries + 1, edit_at = %s WHERE id = %s"
                      " AND settled_at IS NULL AND edit_tries = %s", (again_at, message.id, message.edit_tries)) == 1


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
