"""Waking a sleeping deployment once work was created: the state row asleep -> waking, the minute rule on, the tick
invoked.

Called after the work's own transaction has committed (a run scheduled, a
definition with a schedule saved, a confirm, skip, resume, retry or signal), so
the tick it wakes sees the work. Only the caller whose compare-and-set moved the
row nudges: an awake deployment already has an invocation running or due, which
sees the new wake time at its next one-second read. Overlapping invocations stay
harmless (run leases and fenced writes). See `runner/sleep.py` for why no work
is stranded.

The invariant: **a nudge never rests on one invocation.** An asynchronous invoke
is accepted, never confirmed: it can fail on both attempts, be dropped at the
tick's 60 s maximum event age, or start an invocation that fails before it
wakes. So the nudge first turns the tick's minute rule on: from then a tick
comes every minute, whatever becomes of the invocation, until one wakes the
deployment (it sleeps again behind wake-ups aimed at the new work). The rule on
while the row is not awake is the safe side of the row's invariant
(`store/engine_state.py`), and the nudged tick turns it on first anyway, so it
costs nothing. Only then is the tick invoked, so work due now starts within
seconds rather than at the minute's end.

What a failure leaves:

- the rule refused: the invocation wakes the deployment, and failing that the
  sleep's wake-up, a day away at most (`runner/sleep.LONGEST_SLEEP`);
- an invoke that fails puts the row back to asleep (compare-and-set on the
  nudge's epoch), so the next work created nudges again at once; the rule's
  tick wakes the deployment meanwhile;
- a row left `waking` longer than `WAKING_STALE` (its invocation was lost after
  it was accepted) counts as asleep: the next work created nudges again.

Either failure publishes `NudgeFailed` (its alarm is in `infra/app.yaml`). The
calls are `adapters/aws.turn_rule_on` and `invoke_tick`, clients with a
deadline: two calls, so at most `2 * AWS_CALL_SECONDS` of the API's 29 s.

A nudge that finds the row already `waking` (not long since: another caller's
nudge) turns the rule on too: that caller may have died or frozen between its
compare-and-set and its own call (a Lambda killed there, or frozen after its
answer), which left the row waking with the rule off and nothing coming but the
sleep's wake-up. Turning the rule on is idempotent and never unsafe (nobody
turns it off without committing a state other than awake first). An awake row
costs a nudge one read and nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from ..config import Settings
from ..db import Database
from ..observability import NUDGE_FAILED, publish_now
from .adapters.aws import invoke_tick, turn_rule_on
from .store import engine_state

logger = logging.getLogger(__name__)

# A nudged invocation reaches the database within its minute (the tick waits that long for it).
WAKING_STALE = timedelta(minutes=2)


def after_work_created(
    db: Database, settings: Settings, now: datetime, invoke: Callable[[str], None] | None = None,
    rule_on: Callable[[str], None] | None = None,
) -> bool:
    """Wake the deployment if it sleeps: its minute rule on, then the tick invoked; True if this call woke it
    (its invoke was accepted). A row found waking has the rule turned on again (the module's last paragraph)."""
    if not settings.sleep:
        return False
    rule, function = settings.tick_rule_name, settings.tick_function_arn
    if not (rule and function):
        logger.error("EVENTS_SLEEP=on without EVENTS_TICK_RULE_NAME and EVENTS_TICK_FUNCTION_ARN:"
                     " a sleeping deployment cannot be woken")
        return False
    if db.autocommit(engine_state.state) is engine_state.SleepState.AWAKE:
        return False  # an invocation is running or due, and sees the work at its next read
    nudge = db.transaction(lambda tx: engine_state.wake(tx, now, now - WAKING_STALE))
    if nudge is None:  # waking: another caller moved the row, and may never have turned the rule on
        # guard: a-nudge-finding-the-row-waking-leaves-the-rule-off
        _rule_on(rule, rule_on or turn_rule_on)
        return False
    ruled = _rule_on(rule, rule_on or turn_rule_on)
    try:
        (invoke or invoke_tick)(function)
    except Exception:
        # Put the row back so the next work created nudges again; the rule (or the sleep's wake-up) still stands.
        # guard: failed-nudge-leaves-the-row-waking
        db.autocommit(lambda tx: engine_state.back_to_sleep(tx, now, nudge))
        publish_now(NUDGE_FAILED)
        logger.exception("could not invoke the tick %s to wake the deployment: %s", function,
                         "its minute rule is on, so the next minute's tick wakes it" if ruled else
                         "only the sleep's wake-up (a day away at most) or the next work created wakes it")
        return False
    if not ruled:
        publish_now(NUDGE_FAILED)
    logger.info("woke the deployment: invoked %s", function)
    return True


def _rule_on(rule: str, turn_on: Callable[[str], None]) -> bool:
    """The minute rule turned on before the invoke; False (logged) if EventBridge refused."""
    try:
        # guard: nudge-rests-on-the-invocation-alone
        turn_on(rule)
    except Exception:
        logger.exception("could not turn the tick's minute rule %s on: only the invocation wakes the deployment now", rule)
        return False
    return True
