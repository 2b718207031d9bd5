"""The `webhook:` channel against a loopback receiver: signed, Discord/Slack-shaped, retried on 5xx, one deadline."""

import time

from chalicelib.config import Settings
from chalicelib.events.lifecycle import StepStatus
from chalicelib.events.runner.compose import build_runner
from chalicelib.events.store import steps
from devtools.kit.game_bridge import Answer, dripping
from tests.support.factory import document
from tests.support.runner_kit import RULES, log_of, schedule, step, tick, to_post_again

SECRET = "webhook-secret"
CONSOLE = "https://events.example.com/api/console"


def _runner(db, clock, receiver, **settings):
    return build_runner(Settings(
        cue_channel=f"webhook:{receiver.url}/hooks/cue", announce_channel=f"webhook:{receiver.url}/hooks/news",
        webhook_secret=SECRET, console_url=CONSOLE, **settings), db, clock)


def _cue_run(db, clock, instruction="Light the bonfire"):
    return schedule(db, clock.now(), document([[step("core.cue", instruction=instruction)]]))


def _the_step(db, run_id):
    return db.autocommit(lambda tx: steps.list_for_run(tx, run_id))[0]


def test_a_cue_is_posted_signed_in_the_shape_discord_and_slack_accept(db, clock, game_bridge):
    game_bridge.script("cue", Answer(204, ""))  # Discord's answer
    runner = _runner(db, clock, game_bridge)
    try:
        run = _cue_run(db, clock)
        tick(runner)
    finally:
        runner.close()
    cue = _the_step(db, run.id)
    assert cue.parked
    [request] = game_bridge.received("cue")
    message = f"Cue: Light the bonfire\n{cue.named}: confirm it once done, or skip it.\n{CONSOLE}#/runs/{run.id}"
    assert request.json == {"content": message, "text": message, "allowed_mentions": {"parse": []},
                            "event": {"kind": "cue", "run_id": run.id, "step_id": cue.id, "step_named": cue.named,
                                      "idempotency_key": cue.idempotency_key}}
    assert request.signature_valid(SECRET) and not request.signature_valid("another secret")
    assert request.headers["content-type"] == "application/json"
    assert request.headers["idempotency-key"] == cue.idempotency_key
    assert (request.headers["x-event-run"], request.headers["x-event-step"], request.headers["x-event-kind"]) == (
        str(run.id), str(cue.id), "cue")


def test_a_long_instruction_is_shortened_for_discord_but_keeps_the_run_step_and_link(db, clock, game_bridge):
    runner = _runner(db, clock, game_bridge)
    try:
        run = _cue_run(db, clock, "Light the bonfire. " * 105)  # 1,995 characters
        tick(runner)
    finally:
        runner.close()
    body = game_bridge.received("cue")[0].json
    assert len(body["content"]) == 2000 and body["content"].endswith(f"{CONSOLE}#/runs/{run.id}")
    assert "…\nRun " in body["content"]
    assert "Light the bonfire. " * 105 in body["text"]


def test_a_5xx_makes_the_step_a_retry_that_posts_again_with_the_same_key(db, clock, game_bridge):
    game_bridge.script("news", Answer(503, "try later"), Answer(200, "ok"))  # Slack answers 200 "ok"
    runner = _runner(db, clock, game_bridge)
    try:
        run = schedule(db, clock.now(), document([[step("core.announce", message="The harvest begins")]]))
        tick(runner)
        announce = _the_step(db, run.id)
        assert announce.status is StepStatus.PENDING and announce.attempts == 1
        assert announce.last_error == "announce channel: webhook answered HTTP 503: try later"
        clock.advance(RULES.retry_seconds)
        tick(runner)
    finally:
        runner.close()
    announce = _the_step(db, run.id)
    assert announce.status is StepStatus.DONE and announce.attempts == 2
    posts = game_bridge.received("news")
    assert [p.headers["idempotency-key"] for p in posts] == [announce.idempotency_key] * 2
    assert posts[0].json["content"] == "The harvest begins"


def test_a_cue_a_person_had_posted_again_carries_a_key_of_its_own_a_receiver_takes(db, clock, game_bridge):
    """A receiver deduplicates on the key (the docs ask it to): a cue a moderator retried came with the same key
    as its first post and was dropped as a repeat. After a person grants new attempts, the key carries their
    marker, in the header and in the signed event alike."""
    runner = _runner(db, clock, game_bridge)
    try:
        run = _cue_run(db, clock)
        tick(runner)
        cue = _the_step(db, run.id)
        to_post_again(db, clock.now(), run.id, cue.id, by_a_person=True)
        tick(runner)
    finally:
        runner.close()
    first, again = game_bridge.received("cue")
    assert first.headers["idempotency-key"] == first.json["event"]["idempotency_key"] == cue.idempotency_key
    assert again.headers["idempotency-key"] == again.json["event"]["idempotency_key"] == f"{cue.idempotency_key}:a1"


def test_a_reminder_after_a_persons_resend_is_logged_under_the_key_it_was_posted_with(db, clock, game_bridge):
    """The run log wrote a reminder's key without the `:a<n>` its post carried: an operator holding a receiver's
    key found no row of it."""
    runner = _runner(db, clock, game_bridge)
    try:
        run = schedule(db, clock.now(), document([[step("core.cue", instruction="Light the bonfire", remind_after_seconds=60)]]))
        tick(runner)
        cue = _the_step(db, run.id)
        db.autocommit(lambda tx: tx.execute(  # as a person's earlier retry of the step left it
            "UPDATE event_run_steps SET attempts_allowed_from = 1 WHERE id = %s", (cue.id,)))
        clock.advance(61)
        tick(runner)
    finally:
        runner.close()
    reminder = game_bridge.received("cue")[-1]
    [row] = [e for e in log_of(db, run.id) if e.kind == "step.reminder"]
    assert reminder.json["event"]["kind"] == "reminder"
    assert row.detail["idempotency_key"] == reminder.headers["idempotency-key"] == f"{cue.idempotency_key}:r1:a1"


def test_a_receiver_that_drips_is_cut_at_the_deadline_and_the_step_retried(db, clock, game_bridge):
    drip = dripping(every=0.3)  # its headers at once, then its body a byte every 0.3 s: about 27 s in all
    game_bridge.script("cue", drip)
    runner = _runner(db, clock, game_bridge, step_lease_seconds=4)  # a 1 s deadline
    try:
        run = _cue_run(db, clock)
        started = time.monotonic()
        tick(runner)
        took = time.monotonic() - started
    finally:
        runner.close()
    cue = _the_step(db, run.id)
    assert cue.status is StepStatus.PENDING
    assert cue.last_error == "cue channel: webhook: no complete answer within 1s"  # the deadline cut it
    # Cut at the deadline, not when the drip ends: the bounds leave a loaded machine (CI shares two cores) room for
    # the tick's own database work, yet a client that waited out the drip, each byte inside a read timeout, is far
    # past them.
    cut = 1.0 + 4.0
    assert cut < len(drip.payload()) * 0.3 / 4
    assert took < cut, took
    request = game_bridge.received("cue")[0]
    assert request.closed_at is not None and request.closed_at - request.at < cut, request


def test_a_receiver_that_is_down_is_a_retry_not_a_drop(db, clock, game_bridge):
    game_bridge.stop()
    runner = _runner(db, clock, game_bridge)
    try:
        run = _cue_run(db, clock)
        tick(runner)
    finally:
        runner.close()
    cue = _the_step(db, run.id)
    assert cue.status is StepStatus.PENDING and cue.last_error.startswith("cue channel: webhook: ConnectionRefusedError")


def test_a_3xx_is_not_a_delivery_the_step_is_retried_and_the_redirect_never_followed(db, clock, game_bridge):
    """Only a 2xx delivers (issue 23, item 8): a moved receiver must not swallow cues."""
    game_bridge.script("cue", Answer(302, "moved"), Answer(200, "ok"))
    runner = _runner(db, clock, game_bridge)
    try:
        run = _cue_run(db, clock)
        tick(runner)
        cue = _the_step(db, run.id)
        assert (cue.status, cue.attempts) == (StepStatus.PENDING, 1)
        assert cue.last_error == "cue channel: webhook answered HTTP 302: moved"
        assert len(game_bridge.received("cue")) == 1
        clock.advance(RULES.retry_seconds)
        tick(runner)
    finally:
        runner.close()
    assert _the_step(db, run.id).parked
    assert len(game_bridge.received("cue")) == 2
