"""Run store functions against EXPLAIN instead of the data, to see their plans."""

from __future__ import annotations

from chalicelib.db import Tx


class ExplainTx(Tx):
    """A Tx that explains every statement it is given instead of running it."""

    def __init__(self, connection):
        super().__init__(connection)
        self.plans: list[tuple[str, list[dict]]] = []

    def _explain(self, sql, args):
        self._cursor.execute("EXPLAIN " + sql, args)
        self.plans.append((" ".join(sql.split()), list(self._cursor.fetchall())))

    def execute(self, sql, args=None):
        self._explain(sql, args)
        return 0

    def one(self, sql, args=None):
        self._explain(sql, args)
        return None

    def all(self, sql, args=None):
        self._explain(sql, args)
        return []

    def scalar(self, sql, args=None):
        self._explain(sql, args)
        return None


def unindexed(plan: list[dict]) -> list[dict]:
    """Plan rows that read a stored table without an index (a full scan).

    A derived table (`<derivedN>`) is the one-row result of an indexed subquery,
    not stored data, so scanning it is free.
    """
    return [
        row
        for row in plan
        if row.get("table") and not row["table"].startswith("<") and (row.get("type") == "ALL" or row.get("key") is None)
    ]


def plan_problems(plan: list[dict]) -> list[str]:
    """What is wrong with a plan for a statement the tick runs: a full scan, a sort of stored rows.

    A `UNION … ORDER BY … LIMIT` sorts its branches' results (`<unionN,M>`), which
    their own indexed reads found: that sort grows with what the statement answers
    (the escalate chore's due waits), not with any table, so it is no problem.
    """
    problems = ["full scan"] * bool(unindexed(plan))
    if any("filesort" in (row.get("Extra") or "") and not (row.get("table") or "").startswith("<union") for row in plan):
        problems.append("filesort")
    return problems
