"""event_run_steps created: a phase's steps inserted in authored order, each keyed from its own id.

The invariant: a phase is materialised at most once (`INSERT IGNORE` against
UNIQUE (run_id, phase, seq)), and a step's idempotency key, once stamped, is
never written again: a key a dispatch has already sent stays the step's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ....db import Tx, placeholders
from ...lifecycle import STAMP_KEY, OnDoubt, OnFailure
from ...model import Step, StepSpec
from .reads import list_for_phase
from .write import statement


def materialise_phase(tx: Tx, run_id: int, phase: int, specs: Sequence[StepSpec]) -> list[Step]:
    """Insert a phase's steps in authored order; return the phase as it stands.

    Three statements whatever the number of steps: one multi-row INSERT IGNORE
    against UNIQUE (run_id, phase, seq), so a tick that overran into the next
    cannot double-materialise; one UPDATE that stamps the idempotency key of
    every new row from its own id, computed in SQL (sent ahead of the SELECT:
    no round trip of its own); one SELECT. The key is
    stamped only where it is still empty, so a key a dispatch has already sent
    is never overwritten. When the INSERT wrote every row, each row is as it
    wrote it and the SELECT reads back only the ids and keys the server chose
    (`Step.new`); otherwise it reads the phase whole.
    """
    if not specs:
        raise ValueError("a phase needs at least one step")
    rows = []
    for seq, spec in enumerate(specs):
        if not isinstance(spec.params, dict):
            raise ValueError(f"step {seq}: params must be an object, got {type(spec.params).__name__}")
        on_failure, on_doubt = OnFailure(spec.on_failure).value, OnDoubt(spec.on_doubt).value
        rows.append(
            (run_id, phase, seq, spec.action_id, json.dumps(spec.params), int(spec.action_version), on_failure,
             on_doubt, spec.name)
        )
    values = placeholders(len(rows), "(%s, %s, %s, %s, %s, %s, %s, %s, %s)")
    inserted = tx.execute(
        # guard: materialise-twice-inserts-twice
        f"""INSERT IGNORE INTO event_run_steps
              (run_id, phase, seq, action_id, params, action_version, on_failure, on_doubt, name)
            VALUES {values}""",  # noqa: S608 — only %s placeholders, counted from len(rows); every value is a parameter
        [value for row in rows for value in row],
    )
    tx.send_ahead(*keys_stamped(run_id, phase))
    if inserted != len(specs):
        return list_for_phase(tx, run_id, phase)
    keys = tx.all(
        "SELECT id, idempotency_key FROM event_run_steps WHERE run_id = %s AND phase = %s ORDER BY seq",
        (run_id, phase),
    )
    return [
        Step.new(key["id"], run_id, phase, seq, spec, key["idempotency_key"])
        for seq, (spec, key) in enumerate(zip(specs, keys, strict=True))
    ]


def keys_stamped(run_id: int, phase: int) -> tuple[str, tuple[object, ...]]:
    """The UPDATE (and its arguments) that stamps the idempotency key of each step of the phase, where it is still
    empty (a phase's steps, or a cleanup's reverts, just inserted): from its run, its id and a random value drawn
    then (UUID()), so no other deployment's database, nor this one restored from a backup (which hands the same ids
    out again), ever gives a game the key of another step: a game keeping one store for every engine it serves would
    answer that step's first answer, its action never applied."""
    # guard: materialise-restamps-keys
    return statement(STAMP_KEY, """run_id = %s AND phase = %s AND idempotency_key = ''""", (run_id, phase),
                     sets="idempotency_key = LEFT(SHA2(CONCAT(run_id, '|', id, '|', UUID()), 256), 40)")
