"""A cue posted to a loopback Discord and Slack by the bot: its buttons, its recorded id, 429s and a revoked token."""

import pytest

from chalicelib.config import Settings
from chalicelib.errors import ConfigError
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import chat_messages, steps
from devtools.kit.fake_chat import Scripted
from tests.support.chat import CUE_CHANNEL, SLACK_CHANNEL, chat_settings, every_discord_body_valid
from tests.support.factory import document
from tests.support.runner_kit import schedule, step, tick


def _cue(db, clock, **params):
    run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire", **params)]]))
    return run


def _tick(db, clock, settings):
    runner = build_runner(settings, db, clock)
    try:
        return tick(runner)
    finally:
        runner.close()


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def test_a_cue_is_posted_by_the_bot_with_its_buttons_and_its_message_recorded(db, clock, chat):
    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat))
    cue = _the_step(db, run.id)
    assert cue.parked
    [message] = chat.messages("discord")
    assert message.channel_id == CUE_CHANNEL and "Light the bonfire" in message.text
    assert message.custom_ids == [f"ev:{run.id}:{cue.id}:confirm", f"ev:{run.id}:{cue.id}:skip",
                                  f"ev:{run.id}:{cue.id}:acknowledge"]
    [request] = chat.received("POST")
    assert request.headers["authorization"] == f"Bot {chat.token}"
    assert request.json["allowed_mentions"] == {"parse": []}
    [recorded] = db.autocommit(lambda tx: chat_messages.of_step(tx, cue.id))
    assert (recorded.platform, recorded.channel_id, recorded.message_id) == ("discord", CUE_CHANNEL, message.id)
    assert every_discord_body_valid(chat) == 1


def test_a_cue_that_asks_has_a_button_per_answer(db, clock, chat):
    run = _cue(db, clock, choices=[{"value": "north", "label": "North gate"}, {"value": "south", "label": "South gate"}])
    _tick(db, clock, chat_settings(chat))
    cue = _the_step(db, run.id)
    [message] = chat.messages()
    labels = [b["label"] for row in message.body["components"] for b in row["components"]]
    assert labels == ["North gate", "South gate", "Skip", "I have it"]
    assert message.custom_ids[:2] == [f"ev:{run.id}:{cue.id}:confirm:0", f"ev:{run.id}:{cue.id}:confirm:1"]
    every_discord_body_valid(chat)


def test_a_cue_is_posted_to_slack_with_its_buttons(db, clock, chat):
    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat, cue_channel=f"slack:{SLACK_CHANNEL}"))
    cue = _the_step(db, run.id)
    [message] = chat.messages("slack")
    assert message.channel_id == SLACK_CHANNEL and "Light the bonfire" in message.text
    assert message.custom_ids == [f"ev:{run.id}:{cue.id}:confirm", f"ev:{run.id}:{cue.id}:skip",
                                  f"ev:{run.id}:{cue.id}:acknowledge"]
    assert chat.received("POST")[0].headers["authorization"] == f"Bearer {chat.token}"


def test_a_rate_limit_is_waited_out_within_the_deadline_and_the_post_taken(db, clock, chat):
    chat.script(Scripted(429, {"message": "You are being rate limited.", "retry_after": 0.05, "global": False}))
    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat))
    assert _the_step(db, run.id).parked
    assert len(chat.received("POST")) == 2 and len(chat.messages()) == 1


def test_a_rate_limit_longer_than_the_deadline_makes_the_step_a_retry_with_its_row(db, clock, chat):
    chat.script(Scripted(429, {"message": "You are being rate limited.", "retry_after": 3600, "global": True}))
    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat))
    cue = _the_step(db, run.id)
    assert not cue.parked and "rate limiting the bot: retry after 3600" in cue.last_error
    assert chat.messages() == []


def test_a_token_revoked_mid_event_is_read_again_and_a_failed_post_retried(db, clock, chat):
    settings = chat_settings(chat)
    chat.revoke("bot-token-2")  # the fixed token is now refused: a 401, read again, the same: a retry
    run = _cue(db, clock)
    _tick(db, clock, settings)
    cue = _the_step(db, run.id)
    assert cue.status.value == "pending" and "refused the bot's token (401)" in cue.last_error
    assert chat.messages() == []


def test_a_reminder_and_an_escalation_reply_to_the_cues_message_without_buttons(db, clock, chat):
    settings = chat_settings(chat, escalate_after_seconds=60)
    run = _cue(db, clock, remind_after_seconds=30, remind_limit=1)
    _tick(db, clock, settings)
    clock.advance(30)
    _tick(db, clock, settings)  # the reminder
    clock.advance(30)
    _tick(db, clock, settings)  # the escalation, on the same channel
    cue, reminder, escalation = sorted(chat.messages("discord"), key=lambda m: m.id)
    assert "Light the bonfire" in cue.text and cue.custom_ids
    for reply in (reminder, escalation):
        assert reply.reply_to == cue.id and reply.custom_ids == []
    assert [r.json["message_reference"]["message_id"] for r in chat.received("POST")[1:]] == [cue.id, cue.id]
    assert "Escalation" in escalation.text and _the_step(db, run.id).parked
    assert every_discord_body_valid(chat) == 3


def test_a_reminder_on_slack_is_a_reply_in_the_cues_thread(db, clock, chat):
    settings = chat_settings(chat, cue_channel=f"slack:{SLACK_CHANNEL}")
    _cue(db, clock, remind_after_seconds=30, remind_limit=1)
    _tick(db, clock, settings)
    clock.advance(30)
    _tick(db, clock, settings)
    cue, reminder = chat.received("POST", "/chat.postMessage")
    assert "thread_ts" not in cue.json and reminder.json["thread_ts"] == chat.messages("slack")[0].id
    assert [b["type"] for b in reminder.json["blocks"]] == ["section"]  # no actions block: the cue's buttons are the cue's


def test_a_token_revoked_mid_event_loses_nothing_once_the_new_one_is_in(db, clock, chat):
    """A 401 mid-event: the cue's post is a retry with its cause, the edit of an earlier message a `chat.edit_failed`
    row; once the operator puts the new token in its secret (here: the fake takes the configured one again), the
    cue is posted and the message edited, nothing lost."""
    from chalicelib.events import commands
    from tests.support.runner_kit import log_of

    settings = chat_settings(chat)
    first = _cue(db, clock)
    _tick(db, clock, settings)
    first_cue = _the_step(db, first.id)
    commands.confirm(db, first.id, first_cue.id, actor="mod-mia", now=clock.now())
    chat.revoke("a-new-token")
    second = _cue(db, clock)
    _tick(db, clock, settings)
    [failed] = [e for e in log_of(db, first.id) if e.kind == "chat.edit_failed"]
    assert "401" in failed.detail["error"] and failed.detail["again_at"]
    assert "refused the bot's token (401)" in _the_step(db, second.id).last_error
    chat.revoke(settings.discord_bot_token)  # the new token is in
    clock.advance(settings.step_retry_seconds)
    _tick(db, clock, settings)
    [message, later] = sorted(chat.messages("discord"), key=lambda m: m.id)
    assert "Confirmed by mod-mia" in message.text and message.custom_ids == []
    assert _the_step(db, second.id).parked and later.custom_ids[0] == f"ev:{second.id}:{_the_step(db, second.id).id}:confirm"


def test_a_settle_or_a_failed_edit_lands_on_its_own_message_not_on_the_one_posted_after_it(db, clock, chat):
    """A tick's chore read message X as unsettled; the step's cue was then posted again (Y). Y was recorded on X's
    row, so the chore's settle and failed edit of X took Y (marked settled, its live buttons kept for good), and X
    was never edited again. Each message is a row of its own now: X's failure and give-up land on X alone."""
    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat))
    cue = _the_step(db, run.id)
    [read] = db.autocommit(lambda tx: chat_messages.of_step(tx, cue.id))
    db.autocommit(lambda tx: chat_messages.record(tx, run.id, cue.id, read.platform, read.channel_id, "y-posted-after",
                                                  clock.now()))
    assert db.autocommit(lambda tx: chat_messages.edit_failed(tx, read, clock.now()))
    assert db.autocommit(lambda tx: chat_messages.settle(tx, read, None, clock.now()))  # given up: X is gone
    rows = db.autocommit(lambda tx: tx.all("SELECT message_id, settled_at, edit_tries FROM event_chat_messages"
                                           " WHERE step_id = %s ORDER BY id", (cue.id,)))
    assert rows == [{"message_id": read.message_id, "settled_at": clock.now(), "edit_tries": 1},
                    {"message_id": "y-posted-after", "settled_at": None, "edit_tries": 0}]


def test_a_bot_escalation_pings_escalation_mentions_role_alone_and_a_channel_that_cannot_is_refused(db, clock, chat):
    """ESCALATION_MENTION was dropped on a discord: escalation channel (every bot body named no one), so a GM
    whose Discord notifies only on mentions was never told a cue had waited too long."""
    role, elsewhere = "910000000000000007", "100000000000000009"
    settings = chat_settings(chat, escalation_channel=f"discord:{elsewhere}", escalation_mention=role,
                             escalate_after_seconds=60)
    run = schedule(db, clock.now(), document([[step("core.cue", instruction=f"Light the bonfire <@&{role}> @everyone")]]))
    _tick(db, clock, settings)
    clock.advance(120)
    _tick(db, clock, settings)
    cue_post, escalation = chat.received("POST", "/channels/")
    assert cue_post.json["allowed_mentions"] == {"parse": []}  # the cue itself pings nobody, its words even less
    assert escalation.path.endswith(f"/channels/{elsewhere}/messages")
    assert escalation.json["content"].startswith(f"<@&{role}> Escalation: Run {run.id} · Phase 1 · step 1")
    assert escalation.json["allowed_mentions"] == {"parse": [], "roles": [role]}
    every_discord_body_valid(chat)
    for channel in (f"slack:{SLACK_CHANNEL}", "log"):
        with pytest.raises(ConfigError, match="ESCALATION_MENTION pings a Discord role"):
            Settings.from_env({"ESCALATION_CHANNEL": channel, "ESCALATION_MENTION": role})
    with pytest.raises(ConfigError, match=r"\(CUE_CHANNEL\)"):
        Settings.from_env({"CUE_CHANNEL": f"slack:{SLACK_CHANNEL}", "ESCALATION_MENTION": role})
    assert Settings.from_env({"ESCALATION_CHANNEL": f"discord:{elsewhere}", "ESCALATION_MENTION": role}).escalation_mention == role


def test_a_slack_skip_or_resend_asks_first_as_the_console_does(db, clock, chat):
    """Skip sat beside Confirm as one tap: a mis-tap on a phone skipped the step for good, while the console asks
    "Skip this step?" first. Slack asks natively (Block Kit's confirm); Confirm stays the one tap the cue asks for."""
    from chalicelib.events.chat.platforms import Message, slack_blocks
    from chalicelib.events.chat.render import DECISION_CONTROLS, buttons

    run = _cue(db, clock)
    _tick(db, clock, chat_settings(chat, cue_channel=f"slack:{SLACK_CHANNEL}"))
    [message] = chat.messages("slack")
    [actions] = [block for block in message.body["blocks"] if block["type"] == "actions"]
    asked = {e["action_id"].rsplit(":", 1)[-1]: e.get("confirm") for e in actions["elements"]}
    assert asked["confirm"] is None and asked["acknowledge"] is None
    assert asked["skip"] == {"title": {"type": "plain_text", "text": "Skip?"}, "text": {"type": "plain_text", "text": "Skip this step?"},
                             "confirm": {"type": "plain_text", "text": "Skip"}, "deny": {"type": "plain_text", "text": "Go back"}}
    [decision] = [b for b in slack_blocks(Message("A decision", buttons(run.id, 1, DECISION_CONTROLS))) if b["type"] == "actions"]
    resend = decision["elements"][2]
    assert resend["confirm"]["text"]["text"].startswith("Send this step to the game again? If the game did apply it")
