"""The roles a token may carry, and which of them may do what: read by the API's checks and the engine's control declarations."""

from __future__ import annotations

ADMIN, MODERATOR, GM = "admin", "moderator", "gm"
ROLES = (ADMIN, MODERATOR, GM)
STAFF = frozenset(ROLES)
CONTROLLERS = frozenset({ADMIN, MODERATOR})  # stopping a run is incident response: the widest gate that acts
ADMINS = frozenset({ADMIN})


def named(roles: frozenset[str] | set[str]) -> str:
    """Roles as a sentence names them: "admin or moderator" (a message is read by people, not parsed)."""
    listed = sorted(roles)
    return " or ".join(listed) if len(listed) < 3 else f"{', '.join(listed[:-1])} or {listed[-1]}"
