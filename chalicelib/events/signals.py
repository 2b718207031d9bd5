"""Receiving a signal: the first receipt of each (run, name) and all it changes commit in one transaction
(`store/signals.py` keeps the rules); a repeat writes nothing and answers the first receipt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..db import Database
from .store import signals as receipts
from .store.signals import Receipt


def receive(db: Database, run_id: int, name: str, actor: str, payload: dict[str, Any] | None, now: datetime) -> Receipt:
    """The receipt of `name` sent to the run by `actor` (a token's sub, or `game`), with its payload (None: none)."""
    return db.transaction(lambda tx: receipts.receive(tx, run_id, name, actor, payload, now))
