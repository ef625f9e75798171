"""Structural schemas, as apiextensions-apiserver's ``pkg/apiserver/schema`` checks a CRD's:
``NewStructural``'s refusals (:func:`unsupported`) and ``ValidateStructural``'s errors
(:func:`structural_causes`, sorted as Go sorts them, by their text).

Pure. A schema is the JSON of a ``JSONSchemaProps`` (``apiextensions.k8s.io/v1``); a path is
apimachinery's ``field.Path`` as it prints (``properties[spec].items``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.go_regexp import go_regexp_error
from anyop.testing.fake.statuses import Cause

__all__ = ["field_invalid", "shown", "structural_causes", "unsupported"]

Causes = list[tuple[str, Cause]]

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
_UNSUPPORTED = (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"),
                ("patternProperties", "patternProperties"), ("dependencies", "dependencies"),
                ("additionalItems", "additionalItems"),
                ("definitions", "definitions"))  # fmt: skip


def shown(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, simple values with ``%v``, the
    others as JSON."""
    if isinstance(value, str):
        return go_quoted(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return go_marshalled(value)


def field_invalid(path: str, value: Any, detail: str) -> tuple[str, Cause]:
    """``field.Invalid``."""
    return path, {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown(value)}: {detail}",
    }


def unsupported(schema: Any) -> str | None:
    """``NewStructural``'s error, if any: a keyword structural schemas do not support, items as
    a list, ``x-kubernetes-preserve-unknown-fields: false`` (found depth first, as Go does)."""
    if not isinstance(schema, Mapping):
        return None
    for key, name in _UNSUPPORTED:
        if schema.get(key) not in (None, "", {}, []):
            return f"OpenAPIV3Schema '{name}' is not supported"
    for key in ("not",):
        if (found := unsupported(schema.get(key))) is not None:
            return found
    for key in ("allOf", "anyOf", "oneOf"):
        for clause in schema.get(key) or ():
            if (found := unsupported(clause)) is not None:
                return found
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = schema.get("items")
    if isinstance(items, list):
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    if (found := unsupported(items)) is not None:
        return found
    for sub in (schema.get("properties") or {}).values():
        if (found := unsupported(sub)) is not None:
            return found
    return unsupported(schema.get("additionalProperties"))


def structural_causes(schema: Mapping[str, Any], path: str) -> Causes:
    """``ValidateStructural``: its invariants' and completeness' errors, sorted by their text."""
    causes = list(_invariants(schema, _ROOT, path))
    causes += _completeness_of(schema, path)
    return sorted(causes, key=lambda cause: f"{cause[0]}: {cause[1]['message']}")


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _invariants(s: Mapping[str, Any], level: str, path: str) -> Iterator[tuple[str, Cause]]:
    kind = s.get("type") or ""
    items = s.get("items")
    if kind == "array" and items is None:
        yield required_because(_child(path, "items"), "must be specified")
    if isinstance(items, Mapping):
        yield from _invariants(items, _ITEM, _child(path, "items"))
    properties: Mapping[str, Any] = s.get("properties") or {}
    for key in sorted(properties):
        yield from _invariants(properties[key], _FIELD, f"{_child(path, 'properties')}[{key}]")
    additional = s.get("additionalProperties")
    if additional is not None:
        if level == _ROOT:
            yield forbidden(_child(path, "additionalProperties"), "must not be used at the root")
        if isinstance(additional, Mapping):
            yield from _invariants(additional, _FIELD, _child(path, "additionalProperties"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        yield field_invalid(_child(path, "x-kubernetes-preserve-unknown-fields"), True,
                            "must be false if x-kubernetes-int-or-string is true")  # fmt: skip
    if int_or_string and embedded:
        yield field_invalid(_child(path, "x-kubernetes-embedded-resource"), True,
                            "must be false if x-kubernetes-int-or-string is true")  # fmt: skip
    yield from _value_validation(s, _skips_any_of(s), _skips_first_all_of(s), level, path)
    check_metadata = level == _ROOT or embedded
    where = _child(path, "type")
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        yield field_invalid(where, kind, detail) if kind else required_because(where, detail)
    elif not kind and not int_or_string and not preserve:
        detail = {_ROOT: "must not be empty at the root",
                  _ITEM: "must not be empty for specified array items",
                  _FIELD: "must not be empty for specified object fields"}[level]  # fmt: skip
        yield required_because(where, detail)
    if embedded and additional is not None:
        yield forbidden(_child(path, "additionalProperties"),
                        "must not be used if x-kubernetes-embedded-resource is set")  # fmt: skip
    if level == _ROOT and kind and kind != "object":
        yield field_invalid(where, kind, "must be object at the root")
    for name in ("kind", "apiVersion"):
        if name in properties and check_metadata:
            sub_type = properties[name].get("type") or ""
            if sub_type != "string":
                at = f"{_child(path, 'properties')}[{name}].type"
                yield field_invalid(at, sub_type, "must be string")
    if "metadata" in properties:
        at = f"{_child(path, 'properties')}[metadata]"
        yield from _metadata(properties["metadata"], check_metadata, level, at)
    if embedded and not preserve and not properties:
        yield required_because(_child(path, "properties"), "must not be empty if "
                               "x-kubernetes-embedded-resource is true without "
                               "x-kubernetes-preserve-unknown-fields")  # fmt: skip


_META_IGNORED = ("type", "default", "properties")


def _metadata(
    s: Mapping[str, Any], check: bool, level: str, path: str
) -> Iterator[tuple[str, Cause]]:
    if check and s.get("type") != "object":
        yield field_invalid(_child(path, "type"), s.get("type") or "", "must be object")
    if level != _ROOT:
        return
    properties = set(s.get("properties") or {})
    cleared = properties <= {"name", "generateName"} and bool(properties)
    rest = {key: value for key, value in s.items() if key not in _META_IGNORED}
    meaningful = {key: value for key, value in rest.items() if value not in (None, False, "", [])}
    if meaningful or (properties and not cleared):
        detail = ("must not specify anything other than name and generateName, but metadata is "
                  "implicitly specified")  # fmt: skip
        yield forbidden(path, detail)


def _skips_any_of(s: Mapping[str, Any]) -> bool:
    return s.get("anyOf") == _INT_OR_STRING_ANY_OF


def _skips_first_all_of(s: Mapping[str, Any]) -> bool:
    all_of = s.get("allOf") or []
    return (
        bool(all_of)
        and isinstance(all_of[0], Mapping)
        and (all_of[0].get("anyOf") == _INT_OR_STRING_ANY_OF)
    )


def _value_validation(
    v: Mapping[str, Any], skip_any_of: bool, skip_first: bool, level: str, path: str
) -> Iterator[tuple[str, Cause]]:
    if not skip_any_of:
        for index, clause in enumerate(v.get("anyOf") or ()):
            yield from _nested(clause, False, level, f"{_child(path, 'anyOf')}[{index}]")
    for index, clause in enumerate(v.get("allOf") or ()):
        yield from _nested(clause, skip_first and index == 0, level,
                           f"{_child(path, 'allOf')}[{index}]")  # fmt: skip
    for index, clause in enumerate(v.get("oneOf") or ()):
        yield from _nested(clause, False, level, f"{_child(path, 'oneOf')}[{index}]")
    if isinstance(v.get("not"), Mapping):
        yield from _nested(v["not"], False, level, _child(path, "not"))
    pattern = v.get("pattern")
    error = go_regexp_error(pattern) if isinstance(pattern, str) and pattern else None
    if error is not None:
        detail = f"must be a valid regular expression, but isn't: {error}"
        yield field_invalid(_child(path, "pattern"), pattern, detail)


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(v: Any, skip_any_of: bool, level: str, path: str) -> Iterator[tuple[str, Cause]]:
    if not isinstance(v, Mapping):
        return
    yield from _value_validation(v, skip_any_of, False, level, path)
    if isinstance(v.get("items"), Mapping):
        yield from _nested(v["items"], False, level, _child(path, "items"))
    properties: Mapping[str, Any] = v.get("properties") or {}
    for key in sorted(properties):
        yield from _nested(properties[key], False, _FIELD, f"{_child(path, 'properties')}[{key}]")
    for key, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        present = value is not None and value is not False and value not in ("", [])
        if key == "additionalProperties":
            present = value is not None and value is not False
        if present:
            yield forbidden(_child(path, key), detail)
    if "metadata" in properties:
        yield forbidden(f"{_child(path, 'properties')}[metadata]",
                        "must not be specified in a nested context")  # fmt: skip


def _completeness_of(s: Mapping[str, Any], path: str) -> Causes:
    return list(_complete(s, s, path, path))


def _complete(
    v: Mapping[str, Any], s: Any, s_path: str, v_path: str
) -> Iterator[tuple[str, Cause]]:
    """``validateValueValidationCompleteness``: what the clauses name must be in the schema."""
    if isinstance(v.get("not"), Mapping):
        yield from _complete_nested(v["not"], s, s_path, _child(v_path, "not"))
    for key in ("allOf", "anyOf", "oneOf"):
        for index, clause in enumerate(v.get(key) or ()):
            if isinstance(clause, Mapping):
                yield from _complete_nested(clause, s, s_path, f"{_child(v_path, key)}[{index}]")


def _complete_nested(
    v: Mapping[str, Any], s: Any, s_path: str, v_path: str
) -> Iterator[tuple[str, Cause]]:
    if not isinstance(s, Mapping):
        yield required_because(s_path, f"because it is defined in {v_path}")
        return
    yield from _complete(v, s, s_path, v_path)
    if isinstance(v.get("items"), Mapping):
        yield from _complete_nested(v["items"], s.get("items"), _child(s_path, "items"),
                                    _child(v_path, "items"))  # fmt: skip
    properties: Mapping[str, Any] = s.get("properties") or {}
    for key, clause in sorted((v.get("properties") or {}).items()):
        at = f"{_child(s_path, 'properties')}[{key}]"
        named = f"{_child(v_path, 'properties')}[{key}]"
        if key not in properties:
            yield required_because(at, f"because it is defined in {named}")
        elif isinstance(clause, Mapping):
            yield from _complete_nested(clause, properties[key], at, named)
