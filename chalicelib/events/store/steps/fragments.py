"""SQL that the guards of several step statements share (`s` the step, `r` its run), each named once.

The invariant: a rule several statements hold is written here once, so a
statement that holds it cannot hold a variant of it.
"""

from __future__ import annotations

from ...lifecycle import StepSQL

COLUMNS = (
    "id, run_id, phase, seq, action_id, params, action_version, on_failure, idempotency_key,"
    " status, attempts, claimed_by, claim_expires_at, due_at, started_at, finished_at, last_error,"
    " acknowledged_by, acknowledged_at, remind_at, reminders_sent, escalate_at, escalation_tries, times_out_at, retries, resource_id,"
    " in_doubt, on_doubt, park_reason, hold_seconds, held_until, lapsed_by, lapsed_acknowledged_at, holds_ended, choice,"
    " attempts_allowed_from, name"
)
# A run under a cleanup (its cleanup_target set) works its revert steps only: any other step of it is
# over once its answer is in, never claimed, re-queued or parked again.
NOT_LEFT_BEHIND = "(r.cleanup_target IS NULL OR s.resource_id IS NOT NULL)"
# Held by no lease: with its status running (its move's source), a parked step.
# guard: skip-a-leased-step
UNLEASED = "s.claim_expires_at IS NULL"


def holder_is(op: str = "=") -> str:
    """SQL: the step's holder (`s.acknowledged_by`) compared (`op`: = or <>) with the identity the parameter names,
    exactly, as the code compares it: a token's sub or a chat id is another person's for one letter's case or
    accent, which the column's collation (utf8mb4_unicode_ci) would take for the same."""
    # guard: a-holder-is-compared-blind-to-case-and-accents
    return f"s.acknowledged_by {op} %s COLLATE utf8mb4_bin"


def reached(alias: str) -> str:
    """SQL: the runner got to this step. A step a person skipped before it ever
    started was not reached: the runner's cursor stays where it was."""
    # guard: cursor-moved-by-a-step-skipped-before-it-started
    return f"{alias}.status <> {StepSQL.PENDING} AND NOT ({alias}.status = {StepSQL.SKIPPED} AND {alias}.started_at IS NULL)"
