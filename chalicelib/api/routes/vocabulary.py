"""GET /vocabulary: the statuses and the declared controls, in the words and marks the console shows."""

from __future__ import annotations

from ...events.views import vocabulary as words
from .. import auth, schemas
from ..operations import Body, Call, Router, ok

router = Router(__name__)


@router.operation("GET", "/vocabulary", "The statuses (label, mark, terminal) and the declared controls, as the console shows them.",
                  auth.STAFF, ok("the vocabulary", schemas.VOCABULARY))
def vocabulary(call: Call) -> Body:
    return words.vocabulary()
