"""Actions on their own: SPEC §6's classification table, the signature, the handlers, the channels."""

import hashlib
import hmac
from datetime import datetime, timedelta

import pytest

from chalicelib.config import ConfigError
from chalicelib.events.actions.bridge import classify, signature
from chalicelib.events.actions.channels import ChannelError, LogChannel, channel_for
from chalicelib.events.actions.outcome import Verdict
from chalicelib.events.actions.perform import Actions
from chalicelib.events.actions.registry import CORE_ACTIONS
from chalicelib.events.model import OnFailure, Step, StepStatus

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
    outcome = classify(status, body)
    assert outcome.verdict is verdict and outcome.http_status == status


def test_a_reason_is_kept_short():
    assert len(classify(422, b"x" * 5000).error) < 400


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body():
    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature("k", "1700000000", b"{}") == f"sha256={expected}"


class Recording:
    def __init__(self, fail: ChannelError | None = None):
        self.name, self.posts, self.fail = "test", [], fail

    def post(self, text, context):
        if self.fail:
            raise self.fail
        self.posts.append((text, context["step_id"]))


def _step(action_id, params, *, started_at=None, version=1):
    return Step(
        id=7, run_id=3, phase=1, seq=0, action_id=action_id, params=params, action_version=version,
        on_failure=OnFailure.PAUSE, idempotency_key="k" * 40, status=StepStatus.RUNNING, attempts=1,
        claimed_by="t", claim_expires_at=None, due_at=None, started_at=started_at, finished_at=None, last_error=None,
    )


def _actions(cue=None, announce=None):
    return Actions(bridge=None, cue_channel=cue or Recording(), announce_channel=announce or Recording())


def test_every_core_action_of_the_registry_has_a_handler():
    assert set(_actions().core_handlers()) == set(CORE_ACTIONS)


def test_wait_holds_from_the_first_start_not_from_now():
    first_start = NOW - timedelta(seconds=45)
    outcome = _actions().perform(_step("core.wait", {"seconds": 60}, started_at=first_start), 2, NOW)
    assert outcome.verdict is Verdict.DONE and outcome.hold_until == first_start + timedelta(seconds=60)
    fresh = _actions().perform(_step("core.wait", {"seconds": 60}), 1, NOW)
    assert fresh.hold_until == NOW + timedelta(seconds=60)


@pytest.mark.parametrize("params", [{}, {"seconds": -1}, {"seconds": "60"}, {"seconds": True}])
def test_wait_with_bad_seconds_fails(params):
    assert _actions().perform(_step("core.wait", params), 1, NOW).verdict is Verdict.FAILED


def test_cue_posts_then_parks_and_announce_posts_then_is_done():
    cue, announce = Recording(), Recording()
    actions = _actions(cue, announce)
    assert actions.perform(_step("core.cue", {"instruction": "Light it"}), 1, NOW).verdict is Verdict.PARKED
    assert actions.perform(_step("core.announce", {"message": "Hi"}), 1, NOW).verdict is Verdict.DONE
    assert cue.posts == [("Light it", 7)] and announce.posts == [("Hi", 7)]


def test_a_channel_failure_is_a_retry_or_a_failure_as_the_channel_says():
    down = _actions(announce=Recording(ChannelError("throttled", retryable=True)))
    assert down.perform(_step("core.announce", {"message": "Hi"}), 1, NOW).verdict is Verdict.RETRY
    refused = _actions(announce=Recording(ChannelError("no such topic", retryable=False)))
    assert refused.perform(_step("core.announce", {"message": "Hi"}), 1, NOW).verdict is Verdict.FAILED


def test_unknown_actions_and_versions_fail_and_a_raising_handler_is_a_retry():
    actions = _actions(cue=Recording(RuntimeError("bug")))  # not a ChannelError: an unexpected error
    assert actions.perform(_step("core.nope", {}), 1, NOW).verdict is Verdict.FAILED
    assert actions.perform(_step("core.announce", {"message": "Hi"}, version=9), 1, NOW).verdict is Verdict.FAILED
    raised = actions.perform(_step("core.cue", {"instruction": "x"}), 1, NOW)
    assert raised.verdict is Verdict.RETRY and "RuntimeError: bug" in raised.error


def test_channels_log_now_and_refuse_what_is_not_built_yet():
    assert isinstance(channel_for("log", "cue"), LogChannel)
    for setting in ("sns:arn:aws:sns:eu-west-1:1:t", "webhook:https://example.com/h"):
        with pytest.raises(ConfigError, match="only 'log'"):
            channel_for(setting, "announce")
