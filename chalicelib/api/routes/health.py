"""GET /health: liveness and the secrets' health, without a database query (a paused database stays asleep)."""

from __future__ import annotations

from ... import runtime
from .. import schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/health", "Liveness, and whether every secret this function uses can be read (no database query,"
                  " so it never wakes a paused database; answered within a second, a failure remembered for ten).", None,
                  {**ok("alive, and every secret readable", schemas.HEALTH),
                   503: ("a secret cannot be read: each such one named by its setting", schemas.ERRORS)})
def health(call: Call) -> Body:
    runtime.secrets_health().check()
    return {"ok": True}
