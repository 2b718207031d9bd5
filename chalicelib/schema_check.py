"""JSON Schema checks with fastjsonschema, each schema compiled once per process."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable

import fastjsonschema


@lru_cache(maxsize=None)
def _compiled(schema_json: str) -> Callable[..., Any]:
    return fastjsonschema.compile(json.loads(schema_json))


def first_error(schema: dict, value: Any, name: str) -> str | None:
    """The first way `value` breaks `schema`, as a message starting with `name`; None if it fits."""
    try:
        _compiled(json.dumps(schema, sort_keys=True))(value, name_prefix=name)
    except fastjsonschema.JsonSchemaValueException as error:
        return error.message
    return None
