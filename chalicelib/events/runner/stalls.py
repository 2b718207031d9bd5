"""The tick's escalate chore: a run that has waited too long for a person is escalated, once per wait.

A paused run, or a run held at a phase a person must advance, that has waited
EVENT_ESCALATE_AFTER_SECONDS is posted to the escalation channel with the key
`{run id}:stall:{n}` (its n-th escalation). At least once, as a cue's escalation
(`attention.py`): each try is claimed, with its `run.escalated` row, before it is
posted (`store/escalations.py`); a failed try adds a `notice.failed` row and is
tried again after the retry backoff, and a post, or the last of `max_attempts`
tries failing, ends the escalation. A parked cue is escalated as a step, not
here: its run is working, not stalled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

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
    rehearsals: int = 0  # tries of dry runs' escalations: never counted with the production figures
    out_of_budget: bool = False


def escalate_stalls(db: Database, actions: Actions, rules: Rules, now: datetime, budget: Budget,
                    rehearsing: Actions) -> Escalated:
    """Every due escalation try of a stalled run, while the budget admits the channel's deadline. A dry run's
    goes to `rehearsing`'s channel, after the interval divided by its speed, and is counted apart."""
    done = Escalated()
    if not actions.escalate_after_seconds:
        return done  # EVENT_ESCALATE_AFTER_SECONDS=0: nobody is escalated
    after = timedelta(seconds=actions.escalate_after_seconds)
    for wait in db.autocommit(lambda tx: escalations.due(tx, now, after, WAITS_PER_TICK)):
        # guard: a-stalled-dry-run-is-escalated-to-the-live-channel
        channel = rehearsing.escalations if wait.rehearsal else actions.escalations
        if not budget.allows(channel.timeout):
            done.out_of_budget = True
            break
        retry_at = now + timedelta(seconds=rules.retry_seconds)
        tried = _claim(db, wait, retry_at, now, channel.name, rules.max_attempts, actions.console_url)
        if tried is None:
            continue  # another tick has it, or the wait ended
        notice, entry, tries = tried
        if wait.rehearsal:
            done.rehearsals += 1
        else:
            done.tries += 1
        try:
            channel.post(notice)
            error = None
        except ChannelError as failure:
            error = f"{channel.name} channel: {failure}"
        last = tries >= rules.max_attempts
        if error is not None and not last:
            logger.warning("run %s: escalation %s failed (try %d of %d), tried again at %s: %s", wait.run_id,
                           notice.delivery_key, tries, rules.max_attempts, retry_at.isoformat(), error,
                           extra={"run_id": wait.run_id})
            db.transaction(partial(log.append, entry=journal.notice_failed(entry, error, retry_at), now=now))
            continue

        def end_try(tx: Tx, wait: escalations.Wait = wait, tries: int = tries, entry: journal.Entry = entry,
                    error: str | None = error) -> None:
            if escalations.over(tx, wait, tries, now, sent=error is None) and error is not None:
                log.append(tx, journal.notice_failed(entry, error, None), now)

        db.transaction(end_try)
        done.failed += error is not None and not wait.rehearsal
    return done


def _claim(db: Database, wait: escalations.Wait, retry_at: datetime, now: datetime, channel: str,
           max_attempts: int, console_url: str | None) -> tuple[Notice, journal.Entry, int] | None:
    """This tick's try of `wait`, claimed with its `run.escalated` row in one transaction: (what to post, the
    row, the try's number), or None if another tick claimed it or the wait ended."""
    tries = wait.tries + 1
    waited = max(0, int((now - wait.since).total_seconds()))

    def claim(tx: Tx) -> tuple[Notice, journal.Entry, int] | None:
        if wait.n == 0:
            n = escalations.claim_first(tx, wait, retry_at)
        else:
            n = wait.n if escalations.claim_retry(tx, wait, retry_at, now) else None
        if n is None:
            return None
        notice = Notice.stall(wait.run_id, n, wait.waiting_for, waited, now, console_url)
        entry = journal.run_escalated(wait.run_id, wait.phase, wait.waiting_for, n, channel, tries, max_attempts,
                                      notice.delivery_key, waited)
        # guard: a-stalled-runs-try-without-its-row
        log.append(tx, entry, now)
        return notice, entry, tries

    return db.transaction(claim)
