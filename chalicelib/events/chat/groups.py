"""The engine roles a Slack user group gives: the SLACK_ROLES entries that name a group (`S…`).

Invariant: a Slack press carries its user's roles (SLACK_ROLES' entries for their user id) and those of every
mapped user group they are in, each group read with the bot's token (`usergroups.users.list`, scope
usergroups:read) and kept in this container at most GROUP_CACHE_SECONDS (Slack allows about 20 reads a
minute; someone taken out of a group loses its role within that). A group that cannot be read gives its role
to nobody — a failure never grants — and is named in the refusal a press without a role gets. Read in the
press's asynchronous half, never within Slack's 3 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from ... import outbound
from ..errors import ChannelError
from .platforms import SlackApi

logger = logging.getLogger(__name__)

GROUP_CACHE_SECONDS = 60.0
_members: dict[tuple[outbound.Endpoint, str], tuple[float, frozenset[str]]] = {}
_lock = threading.Lock()


def is_group(chat_id: str) -> bool:
    """Whether a SLACK_ROLES id names a user group (Slack's group ids begin with S; a user's with U or W)."""
    return chat_id.startswith("S")


def roles_from_groups(
    api: SlackApi, mapping: Iterable[tuple[str, str]], user_id: str, held: frozenset[str]
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The roles beyond `held` that the mapped groups `user_id` is in give, and the groups that could not be read."""
    gained: set[str] = set()
    unread: list[str] = []
    for group_id, role in mapping:
        if not is_group(group_id) or role in held or role in gained:
            continue
        members = _read(api, group_id)
        if members is None:
            unread.append(group_id)
        elif user_id in members:
            gained.add(role)
    return frozenset(gained), tuple(unread)


def _read(api: SlackApi, group_id: str) -> frozenset[str] | None:
    key = (api.endpoint, group_id)
    with _lock:
        kept = _members.get(key)
    if kept is not None and time.monotonic() - kept[0] < GROUP_CACHE_SECONDS:
        return kept[1]
    try:
        members = api.group_members(group_id)
    except ChannelError as error:
        logger.warning("the members of the Slack user group %s could not be read: %s", group_id, error)
        return None
    with _lock:
        _members[key] = (time.monotonic(), members)
    return members
