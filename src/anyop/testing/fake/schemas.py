"""Structural schemas of custom resources: pruning of unknown fields, and type checks.

Pure. :func:`prune` drops what the schema does not know (unless a level says
``x-kubernetes-preserve-unknown-fields``) and nulls that are not ``nullable``, as the API server
does before storing; :func:`violations` lists the type and ``required`` errors it answers 422 for.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from anyop.testing.fake.cel_rules import RULES, rule_causes, unset
from anyop.testing.fake.embedded_resources import (
    EMBEDDED,
    META_FIELDS,
    coerced,
    embedded_causes,
    malformed,
)
from anyop.testing.fake.go_json import go_printed, go_quoted, go_value_type
from anyop.testing.fake.go_regexp import go_search
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.list_types import list_type_causes
from anyop.testing.fake.number_keywords import number_causes
from anyop.testing.fake.ratcheting import correlated_items, unchanged
from anyop.testing.fake.statuses import Cause, bad_request

__all__ = ["default", "fill_defaults", "prune", "value_causes", "violations"]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_ROOT_KEPT = ("apiVersion", "kind", "metadata")
_NONE = unset()  # no old value (a create's, a field or item the update adds)


def prune(
    body: Mapping[str, Any], schema: Mapping[str, Any] | None, *, nulls: bool = False
) -> dict[str, Any]:
    """A copy of a custom resource without the fields its schema prunes.

    ``apiVersion``, ``kind`` and ``metadata`` always stay. ``nulls``: keep the nulls of fields
    that are not ``nullable`` (a server-side apply's result: it is not decoded as a request's
    body is, and its checks then refuse them).
    """
    if schema is None:
        return dict(body)
    kept = {key: body[key] for key in _ROOT_KEPT if key in body}
    rest = {key: value for key, value in body.items() if key not in _ROOT_KEPT}
    if (error := malformed(rest, schema)) is not None:  # an embedded resource's metadata
        kind, version = str(body.get("kind")), str(body.get("apiVersion")).rpartition("/")[2]
        raise bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {error}')
    pruned = _prune(rest, schema, nulls)
    return kept | (pruned if isinstance(pruned, dict) else {})


_NO_SCHEMA: Mapping[str, Any] = {}
"""What kube-apiserver's pruning walks a value with where the schema has no items for it."""


def _prune(value: Any, schema: Mapping[str, Any], nulls: bool = False) -> Any:
    if isinstance(value, Mapping):
        return _prune_object(value, schema, nulls)
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            if schema.get(_PRESERVE):
                return list(value)
            items = _NO_SCHEMA  # a list where the schema has none: its objects lose every field
        return [_prune(item, items, nulls) for item in value]
    return value


def _prune_object(
    value: Mapping[str, Any], schema: Mapping[str, Any], nulls: bool = False
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get(_PRESERVE))
    result: dict[str, Any] = {}
    embedded = bool(schema.get(EMBEDDED))
    for key, item in value.items():
        if embedded and key in META_FIELDS:
            result[key] = item  # kept as they are, then coerced
            continue
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if item is None and not nulls and not (sub or {}).get("nullable"):
            continue
        if sub is not None:
            result[key] = _prune(item, sub, nulls)
        elif preserve or additional is True:
            result[key] = item
    return coerced(result) if embedded else result


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
    body: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None = None,
    *,
    scale: Mapping[str, Any] | None = None,
    prior: Sequence[tuple[str, Cause]] = (),
    warned: list[str] | None = None,
) -> list[tuple[str, Cause]]:
    """The schema errors of a (pruned) custom resource: ``(field path, cause)`` pairs.

    ``old`` is the stored object of an update: the ``x-kubernetes-validations`` rules that use
    ``oldSelf`` (transition rules) are checked against it, and what the update leaves as it was
    is ratcheted (see :mod:`~anyop.testing.fake.ratcheting`; the rules broken there add their
    warnings to ``warned``); a list's duplicates count only if the old object has none.
    ``scale`` is the CRD's ``scale`` subresource: its replicas must be integers from 0 to
    2^31-1. ``prior``: the errors found
    before (the metadata's), which come first and stop the rules too where they would.
    """
    if schema is None:
        return [*prior, *_scale_causes(body, scale)]
    rest = {key: value for key, value in body.items() if key not in _ROOT_KEPT}
    before: Any = unset()
    if old is not None:
        before = {key: value for key, value in old.items() if key not in _ROOT_KEPT}
    checked = list(_check(rest, schema, "", before, rules=False))
    # The list types' duplicates are found by a later pass than the schema's and the scale's.
    duplicates = [item for item in checked if item[1]["reason"] == "FieldValueDuplicate"]
    if duplicates and old is not None and _has_duplicates(before, schema):
        duplicates = []  # kube-apiserver checks the list types of an update only then
    causes = [*prior, *(item for item in checked if item[1]["reason"] != "FieldValueDuplicate")]
    causes += _scale_causes(body, scale) + duplicates
    if not _has_rules(schema):
        return causes
    if any(cause["reason"] in _BLOCKING for _, cause in causes):
        # The API server does not evaluate the rules of an object with such errors.
        return [*causes, ("<nil>", {"reason": "FieldValueInvalid", "message": _UNCHECKED})]
    return causes + list(_check(rest, schema, "", before, rules=True, warned=warned))


def value_causes(value: Any, schema: Mapping[str, Any], path: str) -> list[tuple[str, Cause]]:
    """The schema errors of one value at ``path`` (a CRD's default), without its rules; their
    messages name the value's fields from it (the value itself is ``""``), as kube-openapi's."""
    found = _check(value, schema, _HERE, _NONE, rules=False)
    return [
        (path + field.removeprefix(_HERE), {**cause, "message": _unrooted(cause["message"])})
        for field, cause in found
    ]


_HERE = "\x00"


def _unrooted(message: str) -> str:
    return message.replace(f"{_HERE}.", "").replace(_HERE, "")


def _has_duplicates(old: Any, schema: Mapping[str, Any]) -> bool:
    found = _check(old, schema, "", unset(), rules=False)
    return any(cause["reason"] == "FieldValueDuplicate" for _, cause in found)


def _scale_causes(
    body: Mapping[str, Any], scale: Mapping[str, Any] | None
) -> list[tuple[str, Cause]]:
    causes: list[tuple[str, Cause]] = []
    for key in ("specReplicasPath", "statusReplicasPath"):
        path = str((scale or {}).get(key) or "")
        if not path:
            continue
        node: Any = body
        parts = path.lstrip(".").split(".")
        for index, part in enumerate(parts):
            if node is not None and not isinstance(node, Mapping):
                where = "." + ".".join(parts[: index + 1])
                detail = (f"{where} accessor error: {go_printed(node)} is of the type "
                          f"{go_value_type(node)}, expected map[string]interface{{}}")  # fmt: skip
                causes.append(_invalid(path, 0, detail))
                node = None
                break
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            continue
        if isinstance(node, bool) or not isinstance(node, int):
            kind = go_value_type(node)
            shown = go_printed(node)
            detail = f"{path} accessor error: {shown} is of the type {kind}, expected int64"
            causes.append(_invalid(path, 0, detail))
        elif node < 0:
            causes.append(_invalid(path, node, "should be a non-negative integer"))
        elif node > 2**31 - 1:
            causes.append(_invalid(path, node, "should be less than or equal to 2147483647"))
    return causes


_BLOCKING = ("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
             "FieldValueTooMany", "FieldValueTypeInvalid")  # fmt: skip
_UNCHECKED = (
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


def _has_rules(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return bool(schema.get(RULES)) or any(_has_rules(value) for value in schema.values())
    if isinstance(schema, list):
        return any(_has_rules(item) for item in schema)
    return False


def _go_value(value: Any) -> str:
    """A value as Go's ``%v`` prints a JSON number (integral floats without a fraction)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value).lower() if isinstance(value, bool) else str(value)


def _shown(value: Any) -> str:
    """A bad value as a field error prints it: strings quoted, numbers plain, else JSON."""
    if isinstance(value, str):
        return go_quoted(value)
    if isinstance(value, (bool, int, float)):
        return _go_value(value)
    return json.dumps(value, separators=(",", ":"))


def _invalid(path: str, value: Any, detail: str) -> tuple[str, Cause]:
    message = f"Invalid value: {_shown(value)}: {detail}"
    return path, {"reason": "FieldValueInvalid", "message": message}


def _check(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    old: Any,
    *,
    rules: bool,
    ratchet: bool = False,
    warned: list[str] | None = None,
) -> Iterator[tuple[str, Cause]]:
    """The causes of ``value`` at ``path``: of the schema's keywords, or (``rules``) of its
    ``x-kubernetes-validations``. ``old``: the value correlated with it (an update's), whose
    equal value keeps no schema error, and its rules only warn (``ratchet``, also of a node
    that nothing correlates under such an ancestor)."""
    wanted = schema.get("type")
    if value is None and schema.get("nullable"):
        return
    correlated = bool(path) and old is not _NONE  # (the root is never equal: its metadata)
    if rules:
        ratchet = unchanged(value, old, schema) if correlated else ratchet
        yield from _check_rules(value, schema, path, old, ratchet, warned)
        return
    if correlated and unchanged(value, old, schema):
        return  # ratcheted
    if schema.get(_INT_OR_STRING):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            got = _type_name(value)
            message = (f'Invalid value: "{got}": {path} in body must be of type '
                       f'integer,string: "{got}"')  # fmt: skip
            yield path, {"reason": "FieldValueTypeInvalid", "message": message}
            return
    elif (
        path
        and isinstance(wanted, str)
        and not _has_type(value, wanted)
        and not _list_passes(value, schema)
    ):
        got, named = _type_name(value), wanted
        if schema.get("format") and not isinstance(value, str):
            # kube-openapi names the format and the value's Go number type ("" for others)
            named, got = schema["format"], _go_format(value)
        message = f'Invalid value: "{got}": {path} in body must be of type {named}: "{got}"'
        yield path, {"reason": "FieldValueTypeInvalid", "message": message}
        if wanted == "integer" and type(value) is float and "format" not in schema:
            # kube-openapi's format check fails too, and its error names no field.
            detail = f"Checked value must be of type integer (default format) in {path}"
            message = f'Invalid value: "": {detail}'
            yield "<nil>", {"reason": "FieldValueInvalid", "message": message}
        # kube-openapi's other validators still run where they apply to the value's own type
        # (an enum to any): `{}` for an enum of strings is also "Unsupported value: {}".
        yield from _keywords(value, schema, path)
        return
    if path:
        yield from _keywords(value, schema, path)
    yield from _children(value, schema, path, old, rules=False)


def _go_format(value: Any) -> str:
    """The format kube-openapi infers from a decoded value's Go type: its number types'."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    return "int64" if isinstance(value, int) else "float64"


def _list_passes(value: Any, schema: Mapping[str, Any]) -> bool:
    """kube-openapi's type check passes a list where the schema has a ``format`` and a type
    that is not a number (``"when": []`` for a date-time string), and its format check looks
    at strings only: the API server stores such a list."""
    return (
        isinstance(value, list)
        and bool(schema.get("format"))
        and schema.get("type") not in ("number", "integer")
    )


def _check_rules(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    old: Any,
    ratchet: bool,
    warned: list[str] | None,
) -> Iterator[tuple[str, Cause]]:
    if schema.get(RULES):  # the node's rules, then its children's
        yield from rule_causes(value, schema, path, old=old, ratchet=ratchet, warned=warned)
    yield from _children(value, schema, path, old, rules=True, ratchet=ratchet, warned=warned)


def _children(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    old: Any,
    *,
    rules: bool,
    ratchet: bool = False,
    warned: list[str] | None = None,
) -> Iterator[tuple[str, Cause]]:
    if isinstance(value, Mapping):
        yield from _check_object(value, schema, path, old, rules=rules, ratchet=ratchet,
                                 warned=warned)  # fmt: skip
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        olds = correlated_items(value, old, schema)  # a map-list's items, by their keys
        for index, item in enumerate(value):
            inner = _NONE if olds is None or olds[index] is None else olds[index]
            yield from _check(item, schema["items"], f"{path}[{index}]", inner, rules=rules,
                              ratchet=ratchet, warned=warned)  # fmt: skip


def _keywords(value: Any, schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """The value keywords, in the order kube-openapi's validators check them."""
    if isinstance(value, str):
        yield from _string_keywords(value, schema, path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from _number_keywords(value, schema, path)
    if isinstance(value, list):
        yield from _list_keywords(value, schema, path)
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(
            json.dumps(choice) if isinstance(choice, str) else _shown(choice)
            for choice in schema["enum"]
        )
        message = f"Unsupported value: {_shown(value)}: supported values: {choices}"
        yield path, {"reason": "FieldValueNotSupported", "message": message}
    if isinstance(value, Mapping):
        yield from _object_keywords(value, schema, path)


def _string_keywords(
    value: str, schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    yield from _string_first(value, schema, path)
    format_ = schema.get("format")
    if isinstance(format_, str) and not _formatted(value, format_):
        message = f'Invalid value: "{value}": {path} in body must be of type {format_}: "{value}"'
        yield path, {"reason": "FieldValueTypeInvalid", "message": message}


def _string_first(value: str, schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """Length and pattern: kube-openapi reports the first of them that fails."""
    length = len(value)
    if "maxLength" in schema and length > int(schema["maxLength"]):
        limit = int(schema["maxLength"])
        unit = "byte" if limit == 1 else "bytes"
        message = f"Too long: may not be more than {limit} {unit}"
        yield path, {"reason": "FieldValueTooLong", "message": message}
    elif "minLength" in schema and length < int(schema["minLength"]):
        detail = f"{path} in body should be at least {int(schema['minLength'])} chars long"
        yield _invalid(path, value, detail)
    elif "pattern" in schema and not go_search(str(schema["pattern"]), value):
        yield _invalid(path, value, f"{path} in body should match '{schema['pattern']}'")


def _number_keywords(
    value: float, schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    yield from number_causes(value, schema, path)  # kube-openapi's, with its int64 quirks


def _list_keywords(
    value: list[Any], schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    if "minItems" in schema and len(value) < int(schema["minItems"]):
        detail = f"{path} in body should have at least {int(schema['minItems'])} items"
        yield _invalid(path, len(value), detail)
    if "maxItems" in schema and len(value) > int(schema["maxItems"]):
        limit = int(schema["maxItems"])
        unit = "item" if limit == 1 else "items"
        message = f"Too many: {len(value)}: must have at most {limit} {unit}"
        yield path, {"reason": "FieldValueTooMany", "message": message}
    if schema.get("uniqueItems"):
        seen = [json.dumps(item, sort_keys=True) for item in value]
        if len(set(seen)) != len(seen):
            yield _invalid(path, "", f"{path} in body shouldn't contain duplicates")
    yield from list_type_causes(value, schema, path)  # a set's or a map's duplicates


def _object_keywords(
    value: Mapping[str, Any], schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    if "maxProperties" in schema and len(value) > int(schema["maxProperties"]):
        limit = int(schema["maxProperties"])
        unit = "item" if limit == 1 else "items"
        message = f"Too many: {len(value)}: must have at most {limit} {unit}"
        yield path, {"reason": "FieldValueTooMany", "message": message}
    if "minProperties" in schema and len(value) < int(schema["minProperties"]):
        detail = f"{path} in body should have at least {int(schema['minProperties'])} properties"
        yield _invalid(path, len(value), detail)


_FORMATS: Mapping[str, re.Pattern[str]] = {
    "date-time": re.compile(
        r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
    ),
    "date": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    "uuid": re.compile(
        r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
        r"[0-9a-fA-F]{12}$"
    ),
    "ipv4": re.compile(
        r"^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
        r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$"
    ),
    "hostname": re.compile(
        r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,62}))*\.?$"
    ),
    "email": re.compile(r"^[^@\s]+@[^@\s]+$"),
    "byte": re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"),
}
"""The formats kube-openapi checks (others are accepted as any string)."""


def _formatted(value: str, format_: str) -> bool:
    pattern = _FORMATS.get(format_)
    if pattern is None:
        return True
    if pattern.match(value) is None:
        return False
    if format_ in ("date-time", "date"):  # Go's time.Parse checks the ranges too
        return _real_time(value)
    return True


def _real_time(value: str) -> bool:
    try:
        datetime.date(int(value[0:4]), int(value[5:7]), int(value[8:10]))
    except ValueError:
        return False
    if len(value) == 10:
        return True
    return int(value[11:13]) < 24 and int(value[14:16]) < 60 and int(value[17:19]) < 60


def _check_object(
    value: Mapping[str, Any],
    schema: Mapping[str, Any],
    path: str,
    old: Any,
    *,
    rules: bool,
    ratchet: bool,
    warned: list[str] | None,
) -> Iterator[tuple[str, Cause]]:
    prefix = f"{path}." if path else ""
    if not rules and schema.get(EMBEDDED):
        yield from embedded_causes(value, path)
    for name in () if rules else schema.get("required") or ():
        if name not in value:
            yield f"{prefix}{name}", {"reason": "FieldValueRequired", "message": "Required value"}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if sub is not None:
            before = old.get(key, _NONE) if isinstance(old, Mapping) else _NONE
            yield from _check(item, sub, f"{prefix}{key}", before, rules=rules, ratchet=ratchet,
                              warned=warned)  # fmt: skip


def default(body: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of a custom resource with its schema's defaults filled in, as the API server fills
    them when it reads an object: a missing field (or a null one that is not ``nullable``) of an
    object that is there gets the field's ``default``; defaults fill in below defaults too."""
    result = json_copy(dict(body))
    if schema is not None:
        _default(result, schema)
    return result


def fill_defaults(body: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Fill in a schema's defaults in place (see :func:`default`)."""
    _default(body, schema)


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for key, sub in properties.items():
            missing = key not in value or (value[key] is None and not sub.get("nullable"))
            if missing and "default" in sub:
                value[key] = json_copy(sub["default"])
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _default(item, schema["items"])
