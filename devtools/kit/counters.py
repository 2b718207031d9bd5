"""Statement and commit counts from the server's own session counters."""

from __future__ import annotations

from chalicelib.db import Database

STATEMENTS = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_update_multi", "Com_insert_select", "Com_replace")


def session_counters(db: Database) -> dict[str, int]:
    rows = db.autocommit(lambda tx: tx.all("SHOW SESSION STATUS LIKE 'Com\\_%%'"))
    return {r["Variable_name"]: int(r["Value"]) for r in rows}


class StatementMeter:
    """Counts what a block of code sends on this thread's connection."""

    def __init__(self, db: Database):
        self.db = db

    def __enter__(self) -> StatementMeter:
        self._before = session_counters(self.db)
        return self

    def __exit__(self, *exc) -> None:
        after = session_counters(self.db)
        # The SHOW that read `before` is counted in `after`; it is not the code's.
        delta = {k: after.get(k, 0) - self._before.get(k, 0) for k in after}
        delta["Com_show_status"] -= 1
        self.delta = delta
        self.statements = sum(delta.get(k, 0) for k in STATEMENTS)
        self.commits = delta.get("Com_commit", 0)
