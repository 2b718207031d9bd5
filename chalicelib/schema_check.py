"""JSON Schema checks with fastjsonschema, each schema compiled once per process.

Whole numbers are strict: `5.0` and `1e1` are not integers. Since draft 6 JSON
Schema counts a float without a fraction as an integer, but the engine uses
these fields as counts (seconds, versions) and stores documents as written, so
a `5.0` accepted here would reach an action as a float. Schemas are compiled
under draft 4's rules, which keep integers strict; the few keywords whose
meaning draft 4 does not share are refused at compile time, so none can be
silently ignored.

An unknown field is named with the nearest known one (`unknown_fields`): every
request body, query and definition document is refused in the same words. A
refusal the validator words as a rule ("must match pattern \\S") is said as
what to write instead (`_in_words`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

STRICT_INTEGERS = "http://json-schema.org/draft-04/schema#"
SOMETHING_SHOWN = r"\S"  # the pattern of text that must hold more than whitespace: refused in those words
NOT_IN_DRAFT_4 = ("const", "contains", "propertyNames", "if", "exclusiveMinimum", "exclusiveMaximum")


def _keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key
            if key not in ("properties", "enum"):  # property names and enum values are data, not keywords
                yield from _keys(value)
            elif key == "properties":
                for sub in value.values():
                    yield from _keys(sub)
    elif isinstance(schema, list):
        for item in schema:
            yield from _keys(item)


@cache
def _compiled(schema_json: str) -> Callable[..., Any]:
    schema = json.loads(schema_json)
    unsupported = sorted(set(NOT_IN_DRAFT_4) & set(_keys(schema)))
    if unsupported:
        raise ValueError(f"a checked schema may not use {unsupported}: draft 4 reads them differently")
    import fastjsonschema  # with the first check, not with the app

    return fastjsonschema.compile({**schema, "$schema": STRICT_INTEGERS})


def checker(schema: dict[str, Any]) -> Callable[[Any, str], str | None]:
    """`first_error` for one schema, compiled now: for a caller that checks against it many times."""
    check = _compiled(json.dumps(schema, sort_keys=True))
    from fastjsonschema import JsonSchemaValueException

    def first_error_of(value: Any, name: str) -> str | None:
        try:
            check(value, name_prefix=name)
        except JsonSchemaValueException as error:
            return _in_words(error.rule, error.definition or {}, error.value, error.name or name, error.message)
        return None

    return first_error_of


def _in_words(rule: str | None, definition: dict[str, Any], value: Any, name: str, message: str) -> str:
    """A schema's refusal as what to do about it, where the validator's own words would not say (a field left
    out, a value ruled out, a time without its zone); its own words otherwise ("body.seconds must be integer")."""
    if rule == "required" and isinstance(value, dict):
        missing = [field for field in definition.get("required", []) if field not in value]
        if missing:
            return f"{' and '.join(f'{name}.{field}' for field in missing)} {'is' if len(missing) == 1 else 'are'} required"
    if rule == "not" and list(definition.get("not", {})) == ["enum"]:
        ruled_out = " or ".join(json.dumps(v) for v in definition["not"]["enum"])
        return f"{name} must not be {ruled_out}"
    if rule == "format" and definition.get("format") == "date-time":
        return f"{name} must be a date and time with its zone, such as 2026-12-25T19:00:00Z"
    # Text a person reads, blank or empty ("" fails its minLength first).
    blank = isinstance(value, str) and not value.strip()
    if rule in ("pattern", "minLength") and definition.get("pattern") == SOMETHING_SHOWN and blank:
        return f"{name} must hold something besides whitespace"
    return message


def first_error(schema: dict[str, Any], value: Any, name: str) -> str | None:
    """The first way `value` breaks `schema`, as a message starting with `name`; None if it fits."""
    return checker(schema)(value, name)


def unknown_field(key: str, known: list[str], where: str, kind: str = "field") -> str:
    """`key` is not a field of `where`, with the nearest known name (or the known ones) to send instead."""
    import difflib  # with the first unknown field, not with the app

    shown = key if len(key) <= 60 else key[:59] + "…"
    text = f"`{shown}` is not a {kind} of {where}"
    nearest = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if nearest:
        return f"{text}; did you mean `{nearest[0]}`?"
    if known:
        return f"{text} (it has {', '.join(f'`{name}`' for name in known)})"
    return f"{text} (it takes none)"


def unknown_fields(schema: dict[str, Any], value: Any, where: str, kind: str = "field") -> list[str]:
    """One message per key of `value` that a closed object schema does not name; [] for anything else."""
    if not isinstance(value, dict) or schema.get("additionalProperties") is not False:
        return []
    known = list(schema.get("properties", {}))
    return [unknown_field(key, known, where, kind) for key in value if key not in known]
