"""The read side: what the API answers about runs, their steps, log and resources, definitions, the calendar
and the projected timeline. Each view takes the database and the request's ids and query, reads (in one
transaction where its parts must agree, autocommitted where a page always was) and answers the body. A view
writes nothing: state changes only through the engine's use cases (commands, authoring, occurrences, calendar,
dry_runs)."""

from typing import Any

Body = dict[str, Any]  # a JSON object, as a view answers it
