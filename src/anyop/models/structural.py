"""Kubernetes' rules for a structural schema, as a pure check.

A CRD's ``openAPIV3Schema`` must be structural (apiextensions.k8s.io/v1): every node has a
type, unless it keeps unknown fields or is an int-or-string; no references; the logical junctors
(``allOf anyOf oneOf not``) carry no types, defaults, descriptions or nullability; ``properties``
and ``additionalProperties`` never meet; no ``uniqueItems: true``; and only OpenAPI v3.0's
keywords. :func:`structural_violations` lists what a schema breaks, one line per rule and node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["KEYWORDS", "structural_violations"]

KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "default",
        "enum",
        "nullable",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "maxProperties",
        "minProperties",
        "required",
        "items",
        "properties",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "example",
        "externalDocs",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)
"""The keywords of apiextensions.k8s.io/v1's JSONSchemaProps."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
_NOT_IN_JUNCTORS = ("type", "description", "default", "additionalProperties", "nullable")


def structural_violations(schema: Mapping[str, Any]) -> list[str]:
    """Every rule of structural schemas that ``schema`` breaks, as ``path: rule`` lines.

    An empty list means that the API server accepts the schema as structural.
    """
    return list(_node(schema, "", junctor=False))


def _node(node: object, path: str, *, junctor: bool) -> Iterator[str]:
    where = path or "(root)"
    if not isinstance(node, Mapping):
        yield f"{where}: a schema node must be a mapping, not {node!r}"
        return
    for key in sorted(set(node) - KEYWORDS):
        yield f"{where}: {key} is not a keyword of a CRD schema"
    yield from _types(node, where, junctor=junctor)
    yield from _shapes(node, where)
    for key, child in _children(node):
        yield from _node(child, f"{path}.{key}" if path else key, junctor=junctor)
    for key in _JUNCTORS:
        for index, child in enumerate(_junctor_children(node.get(key))):
            yield from _node(child, f"{where}.{key}[{index}]", junctor=True)


def _types(node: Mapping[str, Any], where: str, *, junctor: bool) -> Iterator[str]:
    if junctor:
        for key in _NOT_IN_JUNCTORS:
            if key in node:
                yield f"{where}: {key} must not be inside allOf/anyOf/oneOf/not"
        return
    kind = node.get("type")
    free = node.get("x-kubernetes-preserve-unknown-fields") is True
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    if kind is None and not (free or int_or_string):
        yield f"{where}: has no type (nor x-kubernetes-preserve-unknown-fields)"
    elif kind is not None and kind not in _TYPES:
        yield f"{where}: type {kind!r} is not one of {sorted(_TYPES)}"
    if int_or_string and kind is not None:
        yield f"{where}: x-kubernetes-int-or-string must have no type"


def _shapes(node: Mapping[str, Any], where: str) -> Iterator[str]:
    if "properties" in node and "additionalProperties" in node:
        yield f"{where}: properties and additionalProperties are mutually exclusive"
    if node.get("additionalProperties") is False:
        yield f"{where}: additionalProperties must not be false"
    if node.get("uniqueItems") is True:
        yield f"{where}: uniqueItems must not be true (use x-kubernetes-list-type: set)"
    if node.get("type") == "array" and "items" not in node:
        yield f"{where}: an array must have items"
    for key in ("exclusiveMinimum", "exclusiveMaximum", "nullable"):
        if key in node and not isinstance(node[key], bool):
            yield f"{where}: {key} must be a boolean"
    required = node.get("required", [])
    missing = [key for key in required if key not in (node.get("properties") or {})]
    if missing and "properties" in node:
        yield f"{where}: required names fields that are not properties: {missing}"


def _children(node: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    yield from (node.get("properties") or {}).items()
    if isinstance(node.get("items"), Mapping):
        yield "[]", node["items"]
    if isinstance(node.get("additionalProperties"), Mapping):
        yield "*", node["additionalProperties"]


def _junctor_children(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
