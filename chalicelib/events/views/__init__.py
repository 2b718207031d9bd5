"""The read side: what the API answers about runs, their steps, log and resources, definitions, the calendar
and the projected timeline. Each view takes the database and the request's ids and query, reads (in one
transaction where its parts must agree, autocommitted where a page always was) and answers the body. A view
writes nothing: state changes only through the engine's use cases (commands, authoring, occurrences, calendar,
dry_runs). A list whose items may be large (steps, resources, a cleanup's reverts) is answered a page at a
time under one byte budget (`fitted`), so no answer comes near Lambda's 6 MB whatever the rows hold."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

Body = dict[str, Any]  # a JSON object, as a view answers it

# A page of a list ends before the item that would take its JSON past PAGE_BYTES (it always holds one): with
# the largest item the engine stores (a step's 16 KB params, a resource's 16 KiB revert and 191-character
# id, each escaped as JSON writes it) one answer stays under 1.25 MB, far below Lambda's 6 MB.
PAGE_BYTES = 1024 * 1024


class Answered(Protocol):
    def public(self) -> dict[str, Any]: ...


Item = TypeVar("Item", bound=Answered)


def fitted(page: Sequence[Item], next_cursor: int | None, cursor_of: Callable[[Item], int],
           shown: Callable[[Item], Body] = lambda item: item.public()) -> tuple[list[Item], list[Body], int | None]:
    """A keyset page cut to PAGE_BYTES of its items' JSON as the API answers it (always at least one): the items
    kept, each as the API answers it (`shown`, made once: measured and answered), and the cursor of what is left:
    the last item kept when the cut left some, else the page's own `next_cursor`."""
    kept: list[Item] = []
    bodies: list[Body] = []
    size = 0
    for item in page:
        body = shown(item)
        size += len(json.dumps(body, separators=(",", ":")))
        if kept and size > PAGE_BYTES:
            return kept, bodies, cursor_of(kept[-1])
        kept.append(item)
        bodies.append(body)
    return kept, bodies, next_cursor
