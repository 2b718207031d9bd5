"""A chat message always ends up saying how its step's wait ended, whatever became of the press's own edit,
and whatever the platform says for a while.

Before, a press settled its message in its own transaction, before its edit (Slack's `response_url`, Discord's
`@original`, a type 7 answer) had reached the platform: an edit that then failed left the message's buttons live
for good, as the tick's chore passes over a settled message. And the tick's edit was given up after three tries
30 s apart, a rate limit's `retry_after` ignored: a minute of 429s left the buttons live for good too.
"""

from datetime import datetime, timedelta

import pytest

from chalicelib.events.chat.answers import finish
from chalicelib.events.chat.interactions import read_discord, read_slack
from chalicelib.events.chat.platforms import DiscordApi
from chalicelib.events.chat.settle import EDIT_PATIENCE
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.sleep import next_work
from devtools.kit.fake_chat import Scripted
from tests.support.api import MODERATOR
from tests.support.chat import CUE_CHANNEL, GM_ROLE, SLACK_CHANNEL, SLACK_GM, chat_settings
from tests.support.chat_world import ChatWorld, opened
from tests.support.runner_kit import log_of
from tests.support.sleep_world import HORIZON

DISCORD = "/integrations/discord/interactions"
RATE_LIMITED = Scripted(429, {"message": "You are being rate limited.", "retry_after": 64.0, "global": False})


@pytest.fixture
def world(db, clock, db_params, chat):
    with opened(World, db, clock, db_params, chat) as opened_world:
        yield opened_world


class World(ChatWorld):
    def status(self, run_id):
        return self.steps(run_id)[0].status

    def confirmed_on_the_console(self):
        run, cue = self.cue_posted()
        assert self.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
        return run, cue, self.chat.messages("discord")[0]

    def edits(self):
        return len(self.chat.received("PATCH", "/channels/"))

    def failed_edits(self, run_id):
        return [e.detail for e in log_of(self.db, run_id) if e.kind == "chat.edit_failed"]


def test_a_deferred_discord_press_whose_original_edit_fails_is_edited_by_the_tick(world):
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    press = read_discord(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE]),
                         world.settings)
    world.chat.script(Scripted(500, {"message": "Internal Server Error"}))  # the @original PATCH
    finish({"press": press.event()})
    assert world.status(run.id) is StepStatus.DONE
    assert world.chat.message(message.id).custom_ids  # the press's own edit did not land
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by <@4242>" in shown.text and shown.custom_ids == []


def test_a_press_whose_edit_lands_after_the_ticks_leaves_the_message_to_the_tick_again(world, monkeypatch):
    """A press made while the cue waited (I have it), finished late: its @original edit puts back the cue with
    its buttons after a moderator's confirm and the tick's edit had said how the wait ended, and the message
    was settled, so nothing corrected it again."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    press = read_discord(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE]),
                         world.settings)
    real_edit = DiscordApi.edit_original

    def after_the_confirm_and_the_ticks_edit(self, *args):
        assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
        world.tick()
        assert world.chat.message(message.id).custom_ids == []  # the tick said how it ended
        return real_edit(self, *args)

    monkeypatch.setattr(DiscordApi, "edit_original", after_the_confirm_and_the_ticks_edit)
    finish({"press": press.event()})
    assert world.chat.message(message.id).custom_ids  # the press's late edit: the cue as it left it
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []


def test_a_press_whose_edit_lands_between_the_ticks_edit_and_its_settle_leaves_the_message_to_the_tick_again(
        world, monkeypatch):
    """The same late edit, landing while the tick's chore was between its own edit and the settle: the press found
    the message not yet settled, so it unsettled nothing, and the chore then settled it over the older picture."""
    from chalicelib.events.errors import ChannelError
    from chalicelib.events.store import chat_messages

    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    press = read_discord(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE]),
                         world.settings)
    real_edit_original, real_edit, held = DiscordApi.edit_original, DiscordApi.edit, []

    def on_its_way(self, *args):
        held.append((self, args))
        raise ChannelError("discord: still on its way")  # the press is made; its edit lands later, below

    def the_ticks_edit_then_the_press_lands(self, *args):
        real_edit(self, *args)
        api, pressed = held.pop()
        real_edit_original(api, *pressed)
        world.db.autocommit(lambda tx: chat_messages.edited_by_a_press(tx, "discord", message.id, run.id, cue.id))

    monkeypatch.setattr(DiscordApi, "edit_original", on_its_way)
    finish({"press": press.event()})
    assert world.steps(run.id)[0].acknowledged_by == "discord:4242"
    assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
    monkeypatch.setattr(DiscordApi, "edit", the_ticks_edit_then_the_press_lands)
    world.tick()
    assert world.chat.message(message.id).custom_ids  # the press's older picture stands over the tick's edit
    monkeypatch.setattr(DiscordApi, "edit", real_edit)
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []


def test_a_slack_press_whose_response_url_fails_is_edited_by_the_tick(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM)
    payload["response_url"] = f"{world.chat.url}/slack/respond/lapsed"  # Slack answers 404 expired_url
    press = read_slack(world.chat.slack_signed(payload)[1], settings)
    finish({"press": press.event()})
    assert world.status(run.id) is StepStatus.DONE
    assert world.chat.message(message.id).custom_ids
    world.tick(settings)
    shown = world.chat.message(message.id)
    assert "Confirmed by <@U0MIRA>" in shown.text and shown.custom_ids == []


def test_a_rate_limited_edit_waits_what_discord_asks_and_outlives_a_minute_of_it(world):
    run, _, message = world.confirmed_on_the_console()
    world.chat.script(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    for _ in range(3):
        tried = world.edits()
        world.tick()
        assert world.edits() == tried + 1
        world.clock.advance(30)
        world.tick()  # 30 s on, the retry backoff's: Discord asked for 64
        assert world.edits() == tried + 1
        world.clock.advance(34)
    assert [f["attempt"] for f in world.failed_edits(run.id)] == [1, 2, 3]
    assert all(f["again_at"] for f in world.failed_edits(run.id))
    world.clock.advance(60)  # the third try's wait is the backoff doubled twice, 120 s, more than Discord asked
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []


def test_a_rate_limited_channels_other_edits_wait_for_the_next_tick_rather_than_each_meet_a_429(world):
    posted = [world.cue_posted() for _ in range(3)]
    for run, cue in posted:  # three messages due in the one channel
        assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
    runs = [run for run, _ in posted]
    world.chat.script(RATE_LIMITED)
    tried = world.edits()
    world.tick()
    assert world.edits() == tried + 1 and [len(world.failed_edits(run.id)) for run in runs].count(1) == 1
    world.clock.advance(1)
    world.tick()  # the two the limit held back, tried now; the limited one waits what Discord asked
    assert world.edits() == tried + 3
    assert sum("Confirmed by mod-mia" in world.chat.message(m.id).text for m in world.chat.messages("discord")) == 2


def test_an_edit_failing_for_hours_is_tried_until_six_hours_after_the_wait_ended(world):
    run, _, message = world.confirmed_on_the_console()
    ended = world.clock.now()
    world.chat.script(*[Scripted(503, {"message": "upstream connect error"})] * 100)
    while not world.failed_edits(run.id) or world.failed_edits(run.id)[-1]["again_at"] is not None:
        world.tick()
        world.clock.advance(60)
        assert world.clock.now() - ended < EDIT_PATIENCE + timedelta(hours=1)
    assert world.clock.now() - ended > EDIT_PATIENCE - timedelta(minutes=31)  # the last try's wait was at most 30 min
    assert 10 < len(world.failed_edits(run.id)) < 25  # doubling up to 30 min apart, not a try a tick
    assert world.chat.message(message.id).custom_ids  # given up: still the live buttons (nothing more to do)


def test_an_edit_to_try_again_is_the_sleeping_deployments_next_work_while_its_bot_is_configured(world):
    """An edit is tried for hours, and the deployment sleeps when idle: the sleep's wake-up took no account of the
    next try, so a failed edit waited for whatever woke the deployment next (the daily backstop, the next event)."""
    run, _, _ = world.confirmed_on_the_console()
    world.chat.script(RATE_LIMITED)
    world.tick()
    [failed] = world.failed_edits(run.id)
    again_at = datetime.fromisoformat(failed["again_at"]).replace(tzinfo=None)
    now = world.clock.now()
    assert next_work(world.db, now, HORIZON, chat_platforms=frozenset({"discord"})) == again_at
    # a bot no longer configured: its messages are never edited, so they must not keep the deployment awake
    assert next_work(world.db, now, HORIZON, chat_platforms=frozenset({"slack"})) > again_at + timedelta(days=1)
    world.clock.advance((again_at - now).total_seconds())
    world.tick()
    assert world.edits() == 2 and next_work(world.db, world.clock.now(), HORIZON, chat_platforms=frozenset({"discord"})) > (
        world.clock.now() + timedelta(days=1))  # edited: nothing left to wake for


def test_messages_of_a_platform_without_a_bot_do_not_crowd_out_the_ones_the_tick_can_edit(world):
    """The chore read the first 50 unsettled messages of any platform and passed over those it had no bot for: a
    deployment that dropped its Slack bot with 50 Slack messages left unsettled never edited a Discord one again."""
    run, cue, message = world.confirmed_on_the_console()
    for n in range(60):  # rows of a platform the deployment has no bot for
        world.db.autocommit(lambda tx, n=n: tx.execute(
            "INSERT INTO event_chat_messages (run_id, step_id, platform, channel_id, message_id, posted_at)"
            " VALUES (%s, %s, 'slack', %s, %s, %s)", (run.id, cue.id, f"C{n}", f"{n}.0001", world.clock.now())))
    world.db.autocommit(lambda tx: tx.execute(  # the Discord one after them all in the chore's order
        "UPDATE event_chat_messages m JOIN (SELECT MAX(id) + 1 AS after FROM event_chat_messages) last"
        " SET m.id = last.after WHERE m.step_id = %s AND m.platform = 'discord'", (cue.id,)))
    world.tick()
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []


def test_an_edit_of_a_deleted_message_is_given_up_at_once(world):
    run, _, _ = world.confirmed_on_the_console()
    world.chat.script(Scripted(404, {"message": "Unknown Message", "code": 10008}))
    world.tick()
    [failed] = world.failed_edits(run.id)
    assert failed["again_at"] is None
    world.clock.advance(3600)
    world.tick()
    assert world.edits() == 1


def test_a_chat_press_after_the_console_confirmed_is_told_who_ended_the_wait_and_when(world):
    run, cue, message = world.confirmed_on_the_console()
    at = world.clock.now()
    world.clock.advance(120)
    for control in ("confirm", "skip", "acknowledge"):
        payload = world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:{control}", roles=[GM_ROLE])
        headers, body = world.chat.discord_signed(payload)
        answer = world.api.call("POST", DISCORD, raw=body, headers=headers).body
        if answer["type"] == 9:  # Skip asks first (a modal: no database asked); its submission is the press
            headers, body = world.chat.discord_signed(world.chat.discord_modal_submit(message, answer["data"], roles=[GM_ROLE]))
            answer = world.api.call("POST", DISCORD, raw=body, headers=headers).body
        assert answer["type"] == 4 and answer["data"]["flags"] == 64
        assert f"Confirmed by mod-mia at {at:%H:%M} UTC. Your press changed nothing." in answer["data"]["content"]


def test_a_slack_press_after_the_console_confirmed_is_answered_privately_and_leaves_the_message_as_it_was(world):
    """The fake Slack takes a response_url's body as Slack does (an ephemeral one is not the message): a refusal
    that replaced the message would show here."""
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
    at = world.clock.now()
    world.tick(settings)
    edited = world.chat.message(message.id).text
    assert "Confirmed by mod-mia" in edited
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM, name="mira")
    finish({"press": read_slack(world.chat.slack_signed(payload)[1], settings).event()})
    assert world.chat.message(message.id).text == edited and world.chat.message(message.id).custom_ids == []
    [(who, said)] = world.chat.private(message.id)
    assert who == "mira" and f"Confirmed by mod-mia at {at:%H:%M} UTC. Your press changed nothing." in said


@pytest.mark.parametrize(("platform", "limited"), [
    ("discord", Scripted(429, {"message": "You are being rate limited.", "retry_after": 1e12, "global": True})),
    ("discord", Scripted(429, {"message": "You are being rate limited.", "retry_after": float("inf"), "global": True})),
    ("slack", Scripted(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1e400"})),
], ids=["discord-1e12", "discord-Infinity", "slack-1e400"])
def test_a_rate_limit_asking_an_endless_wait_neither_stops_the_tick_nor_loses_the_edit(world, platform, limited):
    """A 429 whose retry_after was 1e12 or infinite (JSON's Infinity, a Retry-After of 1e400) raised OverflowError
    in the tick's chat chore: the failure was never recorded, so the same message came first again and the chore
    failed on every tick. A wait that is no finite number is none; a longer one than the edit's patience is that."""
    channel = CUE_CHANNEL if platform == "discord" else SLACK_CHANNEL
    settings = chat_settings(world.chat, world.settings, cue_channel=f"{platform}:{channel}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages(platform)
    assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR).status == 200
    ended = world.clock.now()
    world.chat.script(limited)
    world.tick(settings)  # raised OverflowError
    [failed] = world.failed_edits(run.id)
    assert "rate limiting the bot" in failed["error"] and failed["again_at"]
    again_at = datetime.fromisoformat(failed["again_at"]).replace(tzinfo=None)
    assert ended < again_at <= ended + EDIT_PATIENCE
    world.clock.advance((again_at - world.clock.now()).total_seconds())
    world.tick(settings)
    shown = world.chat.message(message.id)
    assert "Confirmed by mod-mia" in shown.text and shown.custom_ids == []
