"""Presses from a loopback Discord and Slack: signed, mapped to roles, the console's control, idempotent, edited."""

import json
import time

import pytest

from chalicelib import runtime
from chalicelib.events.lifecycle import StepStatus
from tests.support.api import MODERATOR
from tests.support.chat import (
    GM_ROLE,
    MOD_ROLE,
    OTHER_ROLE,
    SLACK_CHANNEL,
    SLACK_GM,
    chat_settings,
    every_discord_body_valid,
    valid_for_discord,
)
from tests.support.chat_world import ChatWorld, opened
from tests.support.factory import document
from tests.support.interleaved import until
from tests.support.runner_kit import log_of, schedule, step

DISCORD = "/integrations/discord/interactions"
SLACK = "/integrations/slack/interactions"


@pytest.fixture
def world(db, clock, db_params, chat):
    with opened(World, db, clock, db_params, chat) as opened_world:
        yield opened_world


class World(ChatWorld):
    cue_steps = (step("core.cue", instruction="Light the bonfire"), step("core.announce", message="Lit"))

    def press(self, payload, raw=None, **signing):
        headers, body = self.chat.discord_signed(payload if raw is None else raw, **signing)
        return self.api.call("POST", DISCORD, raw=body, headers=headers)


def _payload(world, cue, control="confirm", **who):
    [message] = world.chat.messages("discord")[:1]
    return world.chat.discord_interaction(message, f"ev:{cue.run_id}:{cue.id}:{control}", **who)


def test_a_body_of_a_type_the_route_does_not_take_is_told_what_it_takes(world):
    """Slack posts a form: a JSON body there is told so (it was told to send JSON, which it had)."""
    answer = world.api.call("POST", SLACK, raw=b'{"type": "block_actions"}', headers={"Content-Type": "application/json"})
    assert (answer.status, answer.body) == (415, {"errors": [
        "send the body as application/x-www-form-urlencoded, not application/json"]})


def test_a_ping_is_answered_and_a_bad_signature_is_401_before_anything_is_read(world):
    headers, body = world.chat.discord_signed({"type": 1, "id": "1", "application_id": "2"})
    answer = world.api.call("POST", DISCORD, raw=body, headers=headers)
    assert (answer.status, answer.body) == (200, {"type": 1})
    valid_for_discord("interaction_callback", answer.body)
    forged = {**headers, "X-Signature-Ed25519": "00" * 64}
    assert world.api.call("POST", DISCORD, raw=body, headers=forged).status == 401
    unsigned = {"Content-Type": "application/json"}
    assert world.api.call("POST", DISCORD, raw=b"not json at all", headers=unsigned).status == 401


def test_a_gms_press_confirms_the_step_the_run_goes_on_and_the_message_names_them(world):
    run, cue = world.cue_posted()
    answer = world.press(_payload(world, cue, roles=[GM_ROLE], user="4242", name="mira"))
    assert answer.status == 200 and answer.body["type"] == 7
    valid_for_discord("interaction_callback", answer.body)
    assert "Confirmed by <@4242>" in answer.body["data"]["content"] and answer.body["data"]["components"] == []
    assert world.steps(run.id)[0].status is StepStatus.DONE
    pressed = [e for e in log_of(world.db, run.id) if e.kind in ("step.status", "chat.pressed") and e.actor == "discord:4242"]
    assert [e.kind for e in pressed] == ["step.status", "chat.pressed"]
    assert pressed[1].detail["name"] == "Mira" and pressed[1].detail["platform"] == "discord"
    world.tick()  # the run goes on: its announcement is made, and the tick's edit makes sure the message says so
    assert world.steps(run.id)[1].status is StepStatus.DONE
    [edit] = world.chat.received("PATCH")
    assert "Confirmed by <@4242>" in edit.json["content"] and edit.json["components"] == []
    world.tick()
    assert len(world.chat.received("PATCH")) == 1  # settled by that edit: never edited again
    every_discord_body_valid(world.chat)


def test_an_unmapped_user_is_refused_privately_and_nothing_changes(world):
    run, cue = world.cue_posted()
    before = log_of(world.db, run.id)
    for who in ({"roles": [OTHER_ROLE]}, {"roles": [GM_ROLE], "guild": None}, {"roles": [GM_ROLE], "guild": "123"}):
        answer = world.press(_payload(world, cue, **who))
        assert answer.body["type"] == 4 and answer.body["data"]["flags"] == 64
        valid_for_discord("interaction_callback", answer.body)
    assert "no role the event engine knows" in world.press(_payload(world, cue, roles=[OTHER_ROLE])).body["data"]["content"]
    assert world.steps(run.id)[0].parked and log_of(world.db, run.id) == before


def test_a_signed_press_of_another_shape_is_400_and_changes_nothing(world):
    """Each of these answered 500 (a part read as an object or array without a look at its type)."""
    run, cue = world.cue_posted()
    before = log_of(world.db, run.id)
    press = _payload(world, cue, roles=[GM_ROLE])
    for part, value in (("data", []), ("message", "x"), ("member", [1]), ("member", {"user": "mira", "roles": []}),
                        ("member", {"user": {"id": "4242"}, "roles": 7})):
        answer = world.press({**press, part: value})
        assert answer.status == 400 and answer.body["errors"], (part, value, answer.body)
    [message] = world.chat.messages("discord")
    slack = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM)
    for part, value in (("actions", {"action_id": "x"}), ("actions", [1]), ("team", "T0"), ("user", ["U0MIRA"]),
                        ("channel", "C0"), ("container", 3)):
        headers, body = world.chat.slack_signed({**slack, part: value})
        answer = world.api.call("POST", SLACK, raw=body, headers=headers)
        assert answer.status == 400 and answer.body["errors"], (part, value, answer.body)
    nested = '{"actions": ' + "[" * 5000 + "]" * 5000 + "}"  # deeper than Python's stack: it answered 500
    headers, body = world.chat.slack_signed(nested)
    answer = world.api.call("POST", SLACK, raw=body, headers=headers)
    assert answer.status == 400 and answer.body["errors"], answer.body
    assert world.steps(run.id)[0].parked and log_of(world.db, run.id) == before


def test_a_refused_slack_press_whose_response_url_fails_is_logged_not_raised(world, caplog):
    """It raised: the chat function's invocation failed and was retried, off AWS the worker's error went unseen."""
    from chalicelib.events.chat.answers import finish

    for url in ("", f"{world.chat.url}/slack/respond/rtoken-never-given"):
        finish({"refusal": "Presses count only in the event's own workspace.", "response_url": url})
    assert caplog.text.count("a refused Slack press could not be told why") == 2


def test_a_role_that_may_not_press_a_control_is_refused_naming_it(world):
    run, cue = world.cue_posted()
    answer = world.press(_payload(world, cue, "resend", roles=[GM_ROLE]))
    assert answer.body["type"] == 4 and "Resend needs the role admin or moderator" in answer.body["data"]["content"]
    assert world.steps(run.id)[0].parked


def test_a_redelivered_press_changes_nothing_and_answers_as_the_first(world):
    run, cue = world.cue_posted()
    payload = _payload(world, cue, roles=[GM_ROLE])
    first = world.press(payload)
    rows = log_of(world.db, run.id)
    again = world.press(payload)
    assert again.body == first.body and log_of(world.db, run.id) == rows


def test_a_button_edited_to_another_step_a_step_gone_and_a_replay_are_refused(world):
    run, cue = world.cue_posted()
    other, other_cue = world.cue_posted()
    [message, _] = world.chat.messages("discord")
    forged = world.chat.discord_interaction(message, f"ev:{other.id}:{other_cue.id}:confirm", roles=[GM_ROLE])
    assert world.press(forged).body["type"] == 4
    gone = world.chat.discord_interaction(message, f"ev:{run.id}:999999:confirm", roles=[GM_ROLE])
    assert world.press(gone).body["type"] == 4
    stale = world.press(_payload(world, cue, roles=[GM_ROLE]), at=time.time() - 3600)
    assert stale.status == 401
    for odd in ("²", "1" * 5000):  # signed, but no time: a digit int() refuses, or past any clock's length
        assert world.press(_payload(world, cue, roles=[GM_ROLE]), timestamp=odd).status == 401
    enormous = world.press(None, raw=b'{"type": 3, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}')
    assert enormous.status == 400
    assert world.steps(run.id)[0].parked and world.steps(other.id)[0].parked


def test_a_confirm_on_the_console_edits_the_chat_message(world):
    run, cue = world.cue_posted()
    answer = world.api.post(f"/runs/{run.id}/steps/{cue.id}/confirm", {}, auth=MODERATOR)
    assert answer.status == 200
    world.tick()
    [edit] = world.chat.received("PATCH")
    assert edit.path.endswith(f"/messages/{world.chat.messages()[0].id}")
    assert "Confirmed by mod-mia" in edit.json["content"] and edit.json["components"] == []
    every_discord_body_valid(world.chat)


def test_an_edit_refused_by_a_revoked_token_is_tried_again_with_its_row(world):
    run, cue = world.cue_posted()
    world.api.post(f"/runs/{run.id}/steps/{cue.id}/skip", {}, auth=MODERATOR)
    world.chat.revoke("another-token")
    world.tick()
    failed = [e for e in log_of(world.db, run.id) if e.kind == "chat.edit_failed"]
    assert len(failed) == 1 and "401" in failed[0].detail["error"] and failed[0].detail["again_at"]


def test_a_slack_press_is_answered_empty_and_finished_through_its_response_url(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM)
    headers, body = world.chat.slack_signed(payload)
    answer = world.api.call("POST", SLACK, raw=body, headers=headers)
    assert answer.status == 200
    deadline = time.monotonic() + 10
    while "Confirmed by" not in world.chat.message(message.id).text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "Confirmed by <@U0MIRA>" in world.chat.message(message.id).text
    assert world.steps(run.id)[0].status is StepStatus.DONE
    headers["X-Slack-Signature"] = "v0=" + "0" * 64
    assert world.api.call("POST", SLACK, raw=body, headers=headers).status == 401
    old_headers, old_body = world.chat.slack_signed(payload, at=time.time() - 600)
    assert world.api.call("POST", SLACK, raw=old_body, headers=old_headers).status == 401
    json.dumps(payload)


def test_a_slack_user_group_gives_its_role_and_a_group_that_cannot_be_read_gives_none(world):
    """SLACK_ROLES may name a user group: its members (read with the bot's token) press with its role, anyone else
    is told privately why, and a group Slack will not list gives nobody its role, the refusal naming it."""
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}",
                             slack_roles=(("S0GMS", "gm"), ("S0GONE", "moderator")))
    world.chat.groups["S0GMS"] = ["U0NOOR", "U0MIRA"]
    with runtime.override(settings=settings):  # the press's asynchronous half reads them too
        _pressed_through_groups(world, settings)


def _pressed_through_groups(world, settings):
    def press(user):
        run, cue = world.cue_posted(settings)
        message = world.chat.messages("slack")[-1]
        headers, body = world.chat.slack_signed(world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=user))
        assert world.api.call("POST", SLACK, raw=body, headers=headers).status == 200
        return run, message

    run, message = press("U0MIRA")
    deadline = time.monotonic() + 10  # the message is edited after the step's change commits: wait for the edit
    while "Confirmed by" not in world.chat.message(message.id).text and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "Confirmed by <@U0MIRA>" in world.chat.message(message.id).text
    assert world.steps(run.id)[0].status is StepStatus.DONE
    [listed] = world.chat.received("POST", "/usergroups.users.list")[:1]
    assert listed.json == {"usergroup": "S0GMS"} and listed.headers["authorization"] == f"Bearer {world.chat.token}"

    run, message = press("U0STRANGER")

    def private():
        return [r.json for r in world.chat.received("POST", "/slack/respond/") if r.json.get("response_type") == "ephemeral"]

    deadline = time.monotonic() + 10
    while not private() and time.monotonic() < deadline:
        time.sleep(0.02)
    [said] = private()
    assert "You have no role" in said["text"] and "S0GONE could not be read" in said["text"]
    assert world.steps(run.id)[0].parked, "nothing changed"


def _decision_escalated(world, game_bridge, **more):
    """A step parked in doubt (its answer lost after sending), escalated: the settings and the step."""
    from dataclasses import replace

    from devtools.kit.game_bridge import SECRET, Answer

    settings = replace(world.settings, game_bridge_url=game_bridge.url, game_bridge_secret=SECRET, escalate_after_seconds=60,
                       **more)
    game_bridge.script("world.spawn", Answer(504, ""))
    run = schedule(world.db, world.clock.now(), document([[{**step("world.spawn", npc="scarecrow"), "on_doubt": "park"}]]))
    world.tick(settings)
    world.clock.advance(settings.step_retry_seconds)
    world.tick(settings)  # parked for a decision
    world.clock.advance(60)
    world.tick(settings)  # escalated
    spawn = world.steps(run.id)[0]
    assert spawn.parked_in_doubt
    return settings, spawn


def test_a_decisions_escalation_carries_confirm_skip_resend_and_resend_pressed_in_chat_sends_it_again(world, game_bridge):
    """A step parked in doubt is escalated with Confirm, Skip and Resend; a moderator's Resend from the chat sends it
    to the game once more, through the console's command, and the message says so."""
    from tests.support.chat import MOD_ROLE

    settings, spawn = _decision_escalated(world, game_bridge)
    run_id = spawn.run_id
    [message] = world.chat.messages("discord")
    assert message.custom_ids == [f"ev:{run_id}:{spawn.id}:{c}" for c in ("confirm", "skip", "resend")]
    refused = world.press(world.chat.discord_interaction(message, f"ev:{run_id}:{spawn.id}:resend", roles=[GM_ROLE]))
    assert refused.body["type"] == 4 and world.steps(run_id)[0].parked_in_doubt  # a gm decides no game step
    modal = _asked(world, message, run_id, spawn.id, "resend", roles=[MOD_ROLE])  # the console's question first
    assert modal["title"] == "Resend?" and modal["components"][0] == {
        "type": 10, "content": "Send this step to the game again? If the game did apply it, it may be applied twice."}
    assert world.steps(run_id)[0].parked_in_doubt
    answer = world.press(world.chat.discord_modal_submit(message, modal, roles=[MOD_ROLE]))
    assert answer.body["type"] == 7 and "Sent to the game again by <@4242>" in answer.body["data"]["content"]
    heading = answer.body["data"]["content"].split("\n")[0]  # said once, what was asked of a decision after it
    assert heading == f"{spawn.named}: the game may or may not have applied it; confirm, skip or resend it", heading
    assert answer.body["data"]["components"] == []
    world.tick(settings)
    assert world.steps(run_id)[0].status is StepStatus.DONE and len(game_bridge.received("world.spawn")) == 2
    every_discord_body_valid(world.chat)


def test_a_chat_skip_submitted_after_someone_resent_the_step_is_refused_and_the_resend_goes_out(world, game_bridge):
    """A chat button carries no tag of what its presser saw (the console's If-Match): a press from a message
    about a parked step acts on it only while it is parked. A Skip asked before a moderator's Resend on the console
    and submitted after it changes nothing, says who ended the wait, and the resend reaches the game."""
    settings, spawn = _decision_escalated(world, game_bridge)
    run_id = spawn.run_id
    [message] = world.chat.messages("discord")
    modal = _asked(world, message, run_id, spawn.id, "skip", roles=[MOD_ROLE], user="5555", name="bo")
    assert world.api.post(f"/runs/{run_id}/steps/{spawn.id}/resend", {}, auth=MODERATOR).status == 200
    answer = world.press(world.chat.discord_modal_submit(message, modal, {"reason": "not needed"}, roles=[MOD_ROLE],
                                                         user="5555", name="bo"))
    assert answer.body["type"] == 4 and answer.body["data"]["flags"] == 64, answer.body  # said to the presser alone
    said = answer.body["data"]["content"]
    assert "Your press changed nothing" in said and "Skipped" not in said, said
    assert world.steps(run_id)[0].status is StepStatus.PENDING
    assert not [e for e in log_of(world.db, run_id) if e.actor == "discord:5555"]  # neither a skip nor a press logged
    world.tick(settings)
    assert world.steps(run_id)[0].status is StepStatus.DONE and len(game_bridge.received("world.spawn")) == 2
    every_discord_body_valid(world.chat)


def test_a_button_no_mapped_role_may_press_is_not_shown(world, game_bridge):
    """Where the server maps only its game masters, who decide no game step, a decision's escalation carries no
    button (it links to the console) and a cue's message still carries all of its own; the edit a press leaves
    follows the same rule."""
    settings, spawn = _decision_escalated(world, game_bridge, discord_roles=((GM_ROLE, "gm"),),
                                          console_url="https://events.example/console")
    [decision] = world.chat.messages("discord")
    assert decision.custom_ids == []
    assert "nobody here holds a role that may press its controls: open it on the console" in decision.text
    assert f"https://events.example/console#/runs/{spawn.run_id}" in decision.text
    run, cue = world.cue_posted(settings)
    message = world.chat.messages("discord")[-1]
    assert message.custom_ids == [f"ev:{run.id}:{cue.id}:{c}" for c in ("confirm", "skip", "acknowledge")]
    with runtime.override(settings=settings):
        held = world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE]))
    assert [b["custom_id"] for row in held.body["data"]["components"] for b in row["components"]] == [
        f"ev:{run.id}:{cue.id}:confirm", f"ev:{run.id}:{cue.id}:skip"]
    every_discord_body_valid(world.chat)


def _asked(world, message, run_id, step_id, control, **who):
    """The modal a press of an asking button opens: the answer, checked against Discord's schema."""
    answer = world.press(world.chat.discord_interaction(message, f"ev:{run_id}:{step_id}:{control}", **who))
    assert answer.status == 200 and answer.body["type"] == 9, answer.body
    valid_for_discord("ModalInteractionCallbackRequest", answer.body)
    valid_for_discord("interaction_callback", answer.body)
    return answer.body["data"]


def test_a_discord_skip_asks_the_consoles_question_first_and_only_the_modals_submission_skips(world):
    """Skip was one tap with no undo on Discord, while the console asks "Skip this step?" first: its button now
    opens a modal asking that, with the console's optional reason; a modal cancelled sends nothing, so the step
    still waits; its submission is the press, the reason kept, the submission's id its Idempotency-Key."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    before = log_of(world.db, run.id)
    modal = _asked(world, message, run.id, cue.id, "skip", roles=[GM_ROLE])
    assert (modal["custom_id"], modal["title"]) == (f"ev:{run.id}:{cue.id}:skip", "Skip this step?")
    [reason] = modal["components"]
    assert (reason["type"], reason["label"]) == (18, "Reason (optional)")
    assert reason["component"] == {"type": 4, "custom_id": "reason", "style": 2, "required": False, "max_length": 500}
    assert world.steps(run.id)[0].parked and log_of(world.db, run.id) == before  # asked, or cancelled: nothing changed
    submit = world.chat.discord_modal_submit(message, modal, {"reason": "  the bonfire is soaked  "}, roles=[GM_ROLE])
    answer = world.press(submit)
    assert answer.body["type"] == 7 and "Skipped by <@4242>" in answer.body["data"]["content"], answer.body
    valid_for_discord("interaction_callback", answer.body)
    assert answer.body["data"]["components"] == []
    assert world.steps(run.id)[0].status is StepStatus.SKIPPED
    rows = log_of(world.db, run.id)
    [skipped] = [e for e in rows if e.kind == "step.status" and e.actor == "discord:4242"]
    [pressed] = [e for e in rows if e.kind == "chat.pressed"]
    assert skipped.detail["reason"] == "the bonfire is soaked" and pressed.detail["control"] == "skip"
    assert pressed.detail["interaction_id"] == submit["id"] and pressed.detail["message_id"] == message.id
    assert world.press(submit).body == answer.body and log_of(world.db, run.id) == rows  # delivered again: once
    every_discord_body_valid(world.chat)


def test_a_modals_submission_is_held_to_roles_server_message_and_form_as_a_press_is(world):
    """The submission is checked as a button's press: the roles of who submits it, the server, that it comes from
    the message recorded for its run and step, and that it is a form the engine opened; nothing changes."""
    run, cue = world.cue_posted()
    other, _ = world.cue_posted()
    message, other_message = world.chat.messages("discord")
    modal = _asked(world, message, run.id, cue.id, "skip", roles=[GM_ROLE])
    assert world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:skip", roles=[OTHER_ROLE])
                       ).body["type"] == 4  # no role: refused at the button, no modal
    before = log_of(world.db, run.id), log_of(world.db, other.id)
    confirm = {**modal, "custom_id": f"ev:{run.id}:{cue.id}:confirm"}
    for submit, why in (
            (world.chat.discord_modal_submit(message, modal, roles=[OTHER_ROLE]), "no role the event engine knows"),
            (world.chat.discord_modal_submit(message, modal, roles=[GM_ROLE], guild="123"), "event's own server"),
            (world.chat.discord_modal_submit(other_message, modal, roles=[GM_ROLE]), "carries no button of run"),
            (world.chat.discord_modal_submit(message, confirm, roles=[GM_ROLE]), "not one of the event engine's")):
        answer = world.press(submit)
        assert answer.body["type"] == 4 and answer.body["data"]["flags"] == 64 and why in answer.body["data"]["content"]
        valid_for_discord("interaction_callback", answer.body)
    garbled = world.chat.discord_modal_submit(message, modal, roles=[GM_ROLE])
    for components in ({"type": 18}, [7], [{"type": 18, "component": "reason"}],
                       [{"type": 18, "component": {"type": 4, "custom_id": "reason", "value": 5}}]):
        answer = world.press({**garbled, "data": {**garbled["data"], "components": components}})
        assert answer.status == 400 and answer.body["errors"], (components, answer.body)
    assert world.steps(run.id)[0].parked and world.steps(other.id)[0].parked
    assert (log_of(world.db, run.id), log_of(world.db, other.id)) == before


@pytest.mark.realtime  # the post's answer comes after the engine's real deadline (a second)
def test_a_cue_discord_took_but_answered_after_the_deadline_is_one_message_recorded_whose_buttons_press(world):
    """Discord took the cue's post but answered after the deadline: the step's retry posted a second copy, and a
    press on the first was refused ("this message carries no button…") while nothing ever edited it. Every try
    of the post carries the same nonce, enforced: Discord answers the retry with the message it took."""
    from dataclasses import replace

    settings = replace(world.settings, step_lease_seconds=4)  # the post's deadline: a quarter of the lease
    world.chat.answer_late(2)
    run, cue = world.cue_posted(settings)
    assert not cue.parked and "no complete answer within" in cue.last_error  # the engine never heard of it
    [taken] = world.chat.messages("discord")
    world.clock.advance(settings.step_retry_seconds)
    world.tick(settings)
    assert world.steps(run.id)[0].parked
    assert [m.id for m in world.chat.messages("discord")] == [taken.id]
    first, again = world.chat.received("POST", "/channels/")
    assert first.json["nonce"] == again.json["nonce"] and again.json["enforce_nonce"] is True
    answer = world.press(world.chat.discord_interaction(taken, f"ev:{run.id}:{cue.id}:confirm", roles=[GM_ROLE]))
    assert answer.body["type"] == 7 and "Confirmed by <@4242>" in answer.body["data"]["content"]
    assert world.steps(run.id)[0].status is StepStatus.DONE
    every_discord_body_valid(world.chat)


def test_a_decision_escalated_again_after_a_resend_is_a_new_message_with_live_buttons(world, game_bridge):
    """A moderator's Resend grants the step new attempts; lost again and parked for a decision again, it is
    escalated again within Discord's few minutes under the same key. Its post has a nonce of its own, so Discord
    makes a new message with the decision's buttons instead of answering with the first one, edited since to say
    it was resent, with none."""
    from devtools.kit.game_bridge import Answer

    settings, spawn = _decision_escalated(world, game_bridge)
    [first] = world.chat.messages("discord")
    assert world.api.post(f"/runs/{spawn.run_id}/steps/{spawn.id}/resend", {}, auth=MODERATOR).status == 200
    game_bridge.script("world.spawn", Answer(504, ""), Answer(504, ""))
    world.tick(settings)  # sent again, its answer lost; the first message edited: no buttons
    world.clock.advance(settings.step_retry_seconds)
    world.tick(settings)  # parked for a decision again
    world.clock.advance(60)
    world.tick(settings)  # escalated again
    assert world.steps(spawn.run_id)[0].parked_in_doubt
    assert world.chat.message(first.id).custom_ids == []
    _, second = world.chat.messages("discord")
    assert second.custom_ids == [f"ev:{spawn.run_id}:{spawn.id}:{c}" for c in ("confirm", "skip", "resend")]
    answer = world.press(world.chat.discord_interaction(second, f"ev:{spawn.run_id}:{spawn.id}:confirm",
                                                        roles=[MOD_ROLE]))
    assert answer.body["type"] == 7 and world.steps(spawn.run_id)[0].status is StepStatus.DONE
    every_discord_body_valid(world.chat)


def test_a_cue_retried_after_it_ended_is_posted_anew_with_live_buttons(world, game_bridge):
    """A by-hand revert's cue nobody answered failed, its message edited to say so; a moderator's Retry a minute
    later asks again. Its post has a nonce of its own (the Retry granted new attempts), so Discord makes a new
    message with live buttons instead of answering with the ended one."""
    from dataclasses import replace

    from chalicelib.events import commands
    from devtools.kit.game_bridge import SECRET, Answer

    settings = replace(world.settings, game_bridge_url=game_bridge.url, game_bridge_secret=SECRET)
    by_hand = {"action": "core.cue", "params": {"instruction": "Take the scarecrow down by hand", "timeout_seconds": 60}}
    game_bridge.script("world.spawn", Answer(200, {"outcome": "done", "resources": [
        {"kind": "npc", "id": "scarecrow", "revert": by_hand}]}))
    run = schedule(world.db, world.clock.now(), document([[step("world.spawn"), step("core.cue", instruction="wait here")]]))
    world.tick(settings)
    commands.cancel(world.db, run.id, actor="mod-mia", now=world.clock.now(), reason="storm", cleanup=True)
    world.tick(settings)  # the cleanup parks on the by-hand revert: its cue posted
    [revert] = [s for s in world.steps(run.id) if s.resource_id is not None]

    def status():
        return next(s for s in world.steps(run.id) if s.id == revert.id).status

    [ended] = [m for m in world.chat.messages("discord") if "scarecrow" in m.text]
    world.clock.advance(60)
    world.tick(settings)  # nobody answered: failed, and its message edited
    assert status() is StepStatus.FAILED and world.chat.message(ended.id).custom_ids == []
    assert world.api.post(f"/runs/{run.id}/steps/{revert.id}/retry", {}, auth=MODERATOR).status == 200
    world.tick(settings)
    [_, again] = [m for m in world.chat.messages("discord") if "scarecrow" in m.text]
    assert again.custom_ids == [f"ev:{run.id}:{revert.id}:{c}" for c in ("confirm", "skip", "acknowledge")]
    answer = world.press(world.chat.discord_interaction(again, f"ev:{run.id}:{revert.id}:confirm", roles=[GM_ROLE]))
    assert answer.body["type"] == 7 and status() is StepStatus.DONE
    every_discord_body_valid(world.chat)


def test_a_button_its_message_never_showed_is_refused_privately_and_changes_nothing(world, game_bridge):
    """A custom_id is the presser's to send: `ev:R:S:skip:0` skipped the cue in one tap, with no modal and no reason
    asked, and `acknowledge:0` or `ev:01:…` were taken as the buttons they are not. Only a button the step's
    message shows is pressed (an answer's number on a Confirm alone, no number written with a leading zero)."""
    asks = step("core.cue", instruction="Pick a gate", choices=[{"value": "north", "label": "North gate"},
                                                               {"value": "south", "label": "South gate"}])
    run, cue = world.cue_posted(None, asks)
    [message] = world.chat.messages("discord")
    before = log_of(world.db, run.id)
    ids = f"{run.id}:{cue.id}"
    for forged, why in ((f"ev:{ids}:skip:0", "not one of the event engine's"),
                        (f"ev:{ids}:acknowledge:0", "not one of the event engine's"),
                        (f"ev:0{run.id}:{cue.id}:confirm:0", "not one of the event engine's"),
                        (f"ev:{ids}:confirm:01", "not one of the event engine's"),
                        (f"ev:{ids}:confirm", "its message carries no such button"),  # a cue that asks has no bare Confirm
                        (f"ev:{ids}:confirm:2", "its message carries no such button")):
        answer = world.press(world.chat.discord_interaction(message, forged, roles=[MOD_ROLE]))
        assert answer.body["type"] == 4 and answer.body["data"]["flags"] == 64, (forged, answer.body)
        assert why in answer.body["data"]["content"] and "nothing was changed" in answer.body["data"]["content"], forged
    resend = _asked(world, message, run.id, cue.id, "resend", roles=[MOD_ROLE])  # a decision's, asked (no database)
    answer = world.press(world.chat.discord_modal_submit(message, resend, roles=[MOD_ROLE]))
    assert answer.body["type"] == 4 and "its message carries no such button" in answer.body["data"]["content"]
    assert world.steps(run.id)[0].parked and log_of(world.db, run.id) == before
    assert world.chat.message(message.id).edits == 0
    _, spawn = _decision_escalated(world, game_bridge)
    decision = world.chat.messages("discord")[-1]
    answer = world.press(world.chat.discord_interaction(decision, f"ev:{spawn.run_id}:{spawn.id}:acknowledge", roles=[MOD_ROLE]))
    assert answer.body["type"] == 4 and "its message carries no such button" in answer.body["data"]["content"]
    assert world.steps(spawn.run_id)[0].parked_in_doubt
    chosen = world.press(world.chat.discord_interaction(message, f"ev:{ids}:confirm:1", roles=[GM_ROLE]))
    assert chosen.body["type"] == 7 and "(answer: South gate)" in chosen.body["data"]["content"]


def test_a_second_claimer_is_told_who_has_it_as_the_chat_names_them_and_where_to_take_it_over(world):
    """The second to press I have it read "discord:4242 has it since 20:00 UTC; to have it yourself, take it over
    with a note": an id for a person, and a take-over no chat message carries."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    held = world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE],
                                                      user="4242", name="mira"))
    assert held.body["type"] == 7 and "<@4242> has it" in held.body["data"]["content"]
    second = world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE],
                                                        user="5555", name="bo"))
    assert second.body["type"] == 4 and second.body["data"]["flags"] == 64
    said = second.body["data"]["content"]
    assert said.endswith(f"{cue.named}: <@4242> has it since {world.clock.now():%H:%M} UTC; to have it yourself,"
                         " take it over on the console."), said
    assert "discord:4242" not in said and world.steps(run.id)[0].acknowledged_by == "discord:4242"

    run, cue = world.cue_posted()  # held on the console: named as the console names its people
    assert world.api.post(f"/runs/{run.id}/steps/{cue.id}/acknowledge", {}, auth=MODERATOR).status == 200
    message = world.chat.messages("discord")[-1]
    said = world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE],
                                                      user="5555", name="bo")).body["data"]["content"]
    assert "mod-mia has it since" in said and said.endswith("take it over on the console."), said


def test_a_slack_second_claimer_is_told_who_has_it_by_their_mention(world):
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}",
                             slack_roles=((SLACK_GM, "gm"), ("U0BO", "gm")))
    with runtime.override(settings=settings):
        run, cue = world.cue_posted(settings)
        [message] = world.chat.messages("slack")
        for user in (SLACK_GM, "U0BO"):
            headers, body = world.chat.slack_signed(world.chat.slack_interaction(
                message, f"ev:{run.id}:{cue.id}:acknowledge", user=user, name=user.lower()))
            assert world.api.call("POST", SLACK, raw=body, headers=headers).status == 200
            until(lambda: world.chat.received("POST", "/slack/respond/"), "the first press's answer")
        until(lambda: world.chat.private(message.id), "the second claimer told why")
    [(who, said)] = world.chat.private(message.id)
    assert who == "u0bo" and "<@U0MIRA> has it since" in said and said.endswith("take it over on the console."), said


def test_the_same_gm_pressing_i_have_it_twice_is_one_press_in_the_log(world):
    """Each press wrote a chat.pressed row, the one that changed nothing too: the log held one acknowledge and two
    presses "that took"."""
    run, cue = world.cue_posted()
    [message] = world.chat.messages("discord")
    for _ in range(2):  # two interactions, as two taps are
        answer = world.press(world.chat.discord_interaction(message, f"ev:{run.id}:{cue.id}:acknowledge", roles=[GM_ROLE]))
        assert answer.body["type"] == 7 and answer.body["data"]["content"].endswith("\n<@4242> has it")
    kinds = [e.kind for e in log_of(world.db, run.id) if e.actor == "discord:4242"]
    assert kinds == ["step.acknowledged", "chat.pressed"], kinds


def test_a_press_without_the_platforms_interaction_id_is_400_and_changes_nothing(world):
    """A Slack payload without trigger_id was made with the Idempotency-Key `slack:None`, which every such payload
    shared (Discord's without id: `discord:None`)."""
    settings = chat_settings(world.chat, world.settings, cue_channel=f"slack:{SLACK_CHANNEL}")
    run, cue = world.cue_posted(settings)
    [message] = world.chat.messages("slack")
    before = log_of(world.db, run.id)
    payload = world.chat.slack_interaction(message, f"ev:{run.id}:{cue.id}:confirm", user=SLACK_GM)
    for trigger in (None, "", 7):
        headers, body = world.chat.slack_signed({**payload, "trigger_id": trigger})
        answer = world.api.call("POST", SLACK, raw=body, headers=headers)
        assert answer.status == 400 and "trigger_id" in answer.body["errors"][0], answer.body
    del payload["trigger_id"]
    headers, body = world.chat.slack_signed(payload)
    assert world.api.call("POST", SLACK, raw=body, headers=headers).status == 400
    run_d, cue_d = world.cue_posted()
    press = world.chat.discord_interaction(world.chat.messages("discord")[-1], f"ev:{run_d.id}:{cue_d.id}:confirm",
                                           roles=[GM_ROLE])
    del press["id"]
    answer = world.press(press)
    assert answer.status == 400 and "its id" in answer.body["errors"][0], answer.body
    assert world.steps(run.id)[0].parked and world.steps(run_d.id)[0].parked and log_of(world.db, run.id) == before
