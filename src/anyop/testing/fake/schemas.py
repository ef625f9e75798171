"""Structural schemas of custom resources: pruning of unknown fields, and type checks.

Pure. :func:`prune` drops what the schema does not know (unless a level says
``x-kubernetes-preserve-unknown-fields``) and nulls that are not ``nullable``, as the API server
does before storing; :func:`violations` lists the type and ``required`` errors it answers 422 for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.statuses import Cause

__all__ = ["prune", "violations"]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_ROOT_KEPT = ("apiVersion", "kind", "metadata")


def prune(body: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of a custom resource without the fields its schema prunes.

    ``apiVersion``, ``kind`` and ``metadata`` always stay.
    """
    if schema is None:
        return dict(body)
    kept = {key: body[key] for key in _ROOT_KEPT if key in body}
    rest = {key: value for key, value in body.items() if key not in _ROOT_KEPT}
    pruned = _prune(rest, schema)
    return kept | (pruned if isinstance(pruned, dict) else {})


def _prune(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, Mapping):
        return _prune_object(value, schema)
    if isinstance(value, list):
        items = schema.get("items")
        return [_prune(item, items) if isinstance(items, Mapping) else item for item in value]
    return value


def _prune_object(value: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get(_PRESERVE))
    result: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if item is None and not (sub or {}).get("nullable"):
            continue
        if sub is not None:
            result[key] = _prune(item, sub)
        elif preserve or additional is True:
            result[key] = item
    return result


_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _type_name(value: Any) -> str:
    match value:
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
    return "null"


def _has_type(value: Any, wanted: str) -> bool:
    if isinstance(value, bool):
        return wanted == "boolean"
    if wanted == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(wanted, (object,)))


def violations(
    body: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> list[tuple[str, Cause]]:
    """The schema errors of a (pruned) custom resource: ``(field path, cause)`` pairs."""
    if schema is None:
        return []
    rest = {key: value for key, value in body.items() if key not in _ROOT_KEPT}
    return list(_check(rest, schema, ""))


def _check(value: Any, schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    wanted = schema.get("type")
    if path and isinstance(wanted, str) and not _has_type(value, wanted):
        got = _type_name(value)
        message = f'Invalid value: "{got}": {path} in body must be of type {wanted}: "{got}"'
        yield path, {"reason": "FieldValueTypeInvalid", "message": message}
        return
    if path and "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(f'"{choice}"' for choice in schema["enum"])
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        message = f"Unsupported value: {shown}: supported values: {choices}"
        yield path, {"reason": "FieldValueNotSupported", "message": message}
    if isinstance(value, Mapping):
        yield from _check_object(value, schema, path)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _check(item, schema["items"], f"{path}[{index}]")


def _check_object(
    value: Mapping[str, Any], schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or ():
        if name not in value:
            yield f"{prefix}{name}", {"reason": "FieldValueRequired", "message": "Required value"}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if sub is not None:
            yield from _check(item, sub, f"{prefix}{key}")
