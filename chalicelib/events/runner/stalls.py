"""The tick's escalate chore: a run that has waited too long for a person is escalated, once per wait.

A paused run, or a run held at a phase a person must advance, that has waited
EVENT_ESCALATE_AFTER_SECONDS is posted to the escalation channel with the key
`{run id}:stall:{n}` (its n-th escalation). At least once, as a cue's escalation
(`attention.py`): each try is claimed before it is posted (`store/escalations.py`),
a failed try is tried again after the retry backoff, and the last of
`max_attempts` tries, sent or failed, is the `run.escalated` row. A parked cue is
escalated as a step, not here: its run is working, not stalled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from ...db import Database, Tx
from .. import journal
from ..actions.notice import Notice
from ..actions.perform import Actions
from ..errors import ChannelError
from ..store import escalations, log
from .budget import Budget
from .outcomes import Rules

logger = logging.getLogger(__name__)

WAITS_PER_TICK = 100  # at most this many escalation tries per tick; the rest are due at the next


@dataclass
class Escalated:
    tries: int = 0
    failed: int = 0  # escalations whose last try failed
    out_of_budget: bool = False


def escalate_stalls(db: Database, actions: Actions, rules: Rules, now: datetime, budget: Budget) -> Escalated:
    """Every due escalation try of a stalled run, while the budget admits the channel's deadline."""
    done = Escalated()
    if not actions.escalate_after_seconds:
        return done  # EVENT_ESCALATE_AFTER_SECONDS=0: nobody is escalated
    after, channel = timedelta(seconds=actions.escalate_after_seconds), actions.escalations
    for wait in db.autocommit(lambda tx: escalations.due(tx, now, after, WAITS_PER_TICK)):
        if not budget.allows(channel.timeout):
            done.out_of_budget = True
            break
        retry_at = now + timedelta(seconds=rules.retry_seconds)
        if wait.n == 0:
            n, tries = db.autocommit(lambda tx: escalations.claim_first(tx, wait, retry_at)), 1
        else:
            claimed = db.autocommit(lambda tx: escalations.claim_retry(tx, wait, retry_at, now))
            n, tries = (wait.n if claimed else None), wait.tries + 1
        if n is None:
            continue  # another tick has it, or the wait ended
        done.tries += 1
        waited = max(0, int((now - wait.since).total_seconds()))
        notice = Notice.stall(wait.run_id, n, wait.waiting_for, waited, now, actions.console_url)
        try:
            channel.post(notice)
            error = None
        except ChannelError as failure:
            error = f"{channel.name} channel: {failure}"
        if error is not None and tries < rules.max_attempts:
            logger.warning("run %s: escalation %d failed (try %d of %d), tried again at %s: %s", wait.run_id, n,
                           tries, rules.max_attempts, retry_at.isoformat(), error, extra={"run_id": wait.run_id})
            continue
        entry = journal.run_escalated(wait.run_id, wait.phase, wait.waiting_for, n, channel.name, tries,
                                      notice.idempotency_key, waited, error)

        def settle(tx: Tx, wait: escalations.Wait = wait, tries: int = tries, entry: journal.Entry = entry,
                   sent: bool = error is None) -> None:
            if escalations.over(tx, wait, tries, now, sent=sent):
                log.append(tx, entry, now)

        db.transaction(settle)
        done.failed += error is not None
    return done
