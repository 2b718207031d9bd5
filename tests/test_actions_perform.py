"""Actions on their own: SPEC §6's classification table, the signature, the handlers, the channels."""

import dataclasses
import hashlib
import hmac
from datetime import datetime, timedelta

import pytest

from chalicelib.events.actions.context import ActionContext
from chalicelib.events.actions.outcome import Verdict
from chalicelib.events.actions.perform import Actions
from chalicelib.events.actions.registry import CORE_ACTIONS
from chalicelib.events.adapters.bridge import classify
from chalicelib.events.adapters.channels import LogChannel, channel_for
from chalicelib.events.errors import ChannelError, ConfigError
from chalicelib.events.lifecycle import OnFailure, StepStatus
from chalicelib.events.model import Step
from chalicelib.outbound import MAX_ANSWER_BYTES, Answer, signed_headers

NOW = datetime(2026, 12, 4, 20, 0, 0)


@pytest.mark.parametrize(
    "status, body, verdict",
    [
        (200, b'{"outcome": "done"}', Verdict.DONE),
        (201, b"{}", Verdict.DONE),
        (200, b'{"outcome": "refused", "reason": "closed"}', Verdict.REFUSED),
        (200, b'{"outcome": "maybe"}', Verdict.FAILED),
        (200, b"not json", Verdict.FAILED),
        (200, b"[1, 2]", Verdict.FAILED),
        (204, b"", Verdict.FAILED),
        (302, b"", Verdict.FAILED),
        (400, b"bad", Verdict.FAILED),
        (401, b"", Verdict.FAILED),
        (404, b"", Verdict.FAILED),
        (409, b'{"reason": "dup"}', Verdict.REFUSED),
        (422, b"", Verdict.REFUSED),
        (429, b"", Verdict.RETRY),
        (500, b"", Verdict.RETRY),
        (503, b"", Verdict.RETRY),
    ],
)
def test_answers_are_classified_as_spec_section_6_says(status, body, verdict):
    outcome = classify(Answer(status, body, truncated=False))
    assert outcome.verdict is verdict and outcome.http_status == status


def test_a_reason_is_kept_short():
    assert len(classify(Answer(422, b"x" * 5000, truncated=False)).error) < 400


def test_a_games_5xx_keeps_its_reason_for_the_person_reading_why_the_step_is_retried():
    """A game's JSON 5xx is "not applied, try later": the person reading the step's error (and, at the ceiling,
    "gave up after 3 attempts: …") sees the game's own reason, not only the status."""
    told = classify(Answer(500, b'{"reason": "the world.spawn handler failed: KeyError: npc"}', truncated=False))
    assert (told.verdict, told.error) == (Verdict.RETRY, "HTTP 500: the world.spawn handler failed: KeyError: npc")
    assert classify(Answer(503, b'{"busy": true}', truncated=False)).error == "HTTP 503"  # no reason: the status alone
    assert classify(Answer(502, b"<html>bad gateway</html>", truncated=False)).error == "HTTP 502"


def test_a_games_429_keeps_its_reason_as_a_5xx_does():
    """docs/game-bridge.md: "A 429 or a 5xx with a JSON body ... its `reason` shows in the step's error": the
    person sees why the game said "later" (the kits' "a delivery of this key is being applied now"), not a bare
    HTTP 429; a 429 is an answer, never in doubt."""
    told = classify(Answer(429, b'{"reason": "a delivery of this key is being applied now"}', truncated=False))
    assert (told.verdict, told.error, told.in_doubt) == (
        Verdict.RETRY, "HTTP 429: a delivery of this key is being applied now", False)
    assert classify(Answer(429, b"slow down", truncated=False)).error == "HTTP 429"  # no JSON reason: the status


def test_a_status_endpoints_refusal_keeps_its_reason():
    from chalicelib.events.adapters.bridge import read_status

    probe = read_status(Answer(401, b'{"reason": "the signature does not match the bridge key"}', truncated=False))
    assert probe.detail == "unknown: HTTP 401: the signature does not match the bridge key"


def test_a_2xx_past_the_answer_cap_is_failed_with_the_cap_named():
    outcome = classify(Answer(200, b'{"outcome": "done", "pad": "' + b"x" * 100, truncated=True))
    assert outcome.verdict is Verdict.FAILED
    assert outcome.error == f"malformed answer: larger than the {MAX_ANSWER_BYTES:,}-byte answer cap"


def test_a_retry_class_status_stays_a_retry_past_the_answer_cap():
    assert classify(Answer(503, b"", truncated=True)).verdict is Verdict.RETRY


def test_json_nested_past_the_recursion_limit_is_failed_not_raised():
    outcome = classify(Answer(200, b"[" * 100_000 + b"]" * 100_000, truncated=False))
    assert outcome.verdict is Verdict.FAILED and outcome.error == "malformed answer: JSON nested too deeply"


def test_an_odd_outcome_value_is_named_by_its_type_not_printed():
    nested = b'{"outcome": ' + b"[" * 900 + b"]" * 900 + b"}"
    assert classify(Answer(200, nested, truncated=False)).error == "malformed answer: unknown outcome of type list"


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body():
    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    at = datetime(2023, 11, 14, 22, 13, 20)  # 1,700,000,000 s after the epoch, UTC
    assert signed_headers("k", at, b"{}") == {"X-Event-Timestamp": "1700000000", "X-Event-Signature": f"sha256={expected}"}


class Recording:
    timeout = 0.0

    def __init__(self, fail: Exception | None = None):
        self.name, self.fail = "test", fail
        self.posts: list[tuple[str, int]] = []

    def post(self, notice):
        if self.fail:
            raise self.fail
        self.posts.append((notice.text, notice.step_id))


def _step(action_id, params, *, started_at=None, version=1):
    return Step(
        id=7, run_id=3, phase=1, seq=0, action_id=action_id, params=params, action_version=version,
        on_failure=OnFailure.PAUSE, idempotency_key="k" * 40, status=StepStatus.RUNNING, attempts=1,
        claimed_by="t", claim_expires_at=None, due_at=None, started_at=started_at, finished_at=None, last_error=None,
    )


def _actions(cue=None, announce=None):
    return Actions(bridge=None, cue_channel=cue or Recording(), announce_channel=announce or Recording())


def test_every_core_action_of_the_registry_has_a_handler():
    assert set(_actions().core_handlers) == set(CORE_ACTIONS)


def test_wait_holds_from_the_first_start_not_from_now():
    first_start = NOW - timedelta(seconds=45)
    outcome = _actions().perform(ActionContext.of(_step("core.wait", {"seconds": 60}, started_at=first_start), 2, NOW))
    assert outcome.verdict is Verdict.DONE and outcome.hold_until == first_start + timedelta(seconds=60)
    fresh = _actions().perform(ActionContext.of(_step("core.wait", {"seconds": 60}), 1, NOW))
    assert fresh.hold_until == NOW + timedelta(seconds=60)


@pytest.mark.parametrize("params", [{}, {"seconds": -1}, {"seconds": "60"}, {"seconds": True}])
def test_wait_with_bad_seconds_fails(params):
    assert _actions().perform(ActionContext.of(_step("core.wait", params), 1, NOW)).verdict is Verdict.FAILED


def test_cue_posts_then_parks_and_announce_posts_then_is_done():
    cue, announce = Recording(), Recording()
    actions = _actions(cue, announce)
    assert actions.perform(ActionContext.of(_step("core.cue", {"instruction": "Light it"}), 1, NOW)).verdict is Verdict.PARKED
    assert actions.perform(ActionContext.of(_step("core.announce", {"message": "Hi"}), 1, NOW)).verdict is Verdict.DONE
    assert cue.posts == [("Light it", 7)] and announce.posts == [("Hi", 7)]


def test_a_channel_that_cannot_deliver_makes_the_step_a_retry():
    for action, params in (("core.announce", {"message": "Hi"}), ("core.cue", {"instruction": "Light it"})):
        down = _actions(cue=Recording(ChannelError("no such topic")), announce=Recording(ChannelError("no such topic")))
        outcome = down.perform(ActionContext.of(_step(action, params), 1, NOW))
        assert outcome.verdict is Verdict.RETRY and outcome.error == "test channel: no such topic"


def test_unknown_actions_and_versions_fail_and_a_raising_handler_is_a_retry():
    actions = _actions(cue=Recording(RuntimeError("bug")))  # not a ChannelError: an unexpected error
    assert actions.perform(ActionContext.of(_step("core.nope", {}), 1, NOW)).verdict is Verdict.FAILED
    assert actions.perform(ActionContext.of(_step("core.announce", {"message": "Hi"}, version=9), 1, NOW)).verdict is Verdict.FAILED
    raised = actions.perform(ActionContext.of(_step("core.cue", {"instruction": "x"}), 1, NOW))
    assert raised.verdict is Verdict.RETRY and "RuntimeError: bug" in raised.error


def test_a_channel_setting_builds_its_channel_and_a_webhook_needs_a_secret():
    assert isinstance(channel_for("log", "cue", timeout=1), LogChannel)
    assert type(channel_for("webhook:https://example.com/h", "cue", timeout=1, webhook_secret="s")).__name__ == "WebhookChannel"
    with pytest.raises(ConfigError, match="set WEBHOOK_SECRET or WEBHOOK_SECRET_ARN"):
        channel_for("webhook:https://example.com/h", "announce", timeout=1)


def test_an_action_is_told_its_run_mode_attempt_and_what_the_previous_attempt_came_to():
    first = ActionContext.of(_step("core.announce", {"message": "Hi"}), 1, NOW)
    assert (first.run_id, first.mode.value, first.attempt, first.previous, first.time_scale) == (3, "live", 1, None, 1.0)
    lost = dataclasses.replace(_step("world.spawn", {}), last_error="HTTP 503")
    assert ActionContext.of(lost, 2, NOW).previous == "HTTP 503"


def test_a_wait_holds_its_seconds_on_the_runs_time_scale():
    context = ActionContext(_step("core.wait", {"seconds": 60}), 1, NOW, time_scale=0.5)
    assert _actions().perform(context).hold_until == NOW + timedelta(seconds=30)


def test_the_outcome_carries_the_answer_body_parsed():
    done = classify(Answer(200, b'{"outcome": "done", "spawned": ["scarecrow"]}', truncated=False))
    assert done.result == {"outcome": "done", "spawned": ["scarecrow"]}
    refused = classify(Answer(409, b'{"reason": "already there"}', truncated=False))
    assert refused.verdict is Verdict.REFUSED and refused.result == {"reason": "already there"}
    assert classify(Answer(200, b"[1]", truncated=False)).result is None
    assert classify(Answer(503, b'{"busy": true}', truncated=False)).result is None
