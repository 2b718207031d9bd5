"""The roles a token may carry, and which of them may do what: read by the API's checks and the engine's control declarations."""

from __future__ import annotations

ADMIN, MODERATOR, GM = "admin", "moderator", "gm"
ROLES = (ADMIN, MODERATOR, GM)
STAFF = frozenset(ROLES)
CONTROLLERS = frozenset({ADMIN, MODERATOR})  # stopping a run is incident response: the widest gate that acts
ADMINS = frozenset({ADMIN})
