"""The CEL types kube-apiserver gives a CRD schema's nodes, with their size estimates.

Pure. :func:`decl_type` is ``common.SchemaDeclType`` (k8s.io/apiserver ``pkg/cel/common``): an
object's properties become fields (their names escaped as ``cel.Escape`` escapes them), an
array a list, ``additionalProperties`` a map of strings, a string of format ``byte``,
``duration``, ``date`` or ``date-time`` bytes, a duration or a timestamp,
``x-kubernetes-int-or-string`` ``dyn``; each with the most elements it can have
(``MaxElements``: ``maxItems``, ``maxProperties``, four bytes a character of ``maxLength``,
else what fits in a request of 3 MiB) and its smallest serialized size. A node of no type
(``x-kubernetes-preserve-unknown-fields`` alone) has none: its field is left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_REQUEST", "Decl", "decl_type", "escaped"]

MAX_REQUEST = 3 * 1024 * 1024  # celconfig.MaxRequestSizeBytes
_MIN_SIZE = {"bool": 4, "int": 1, "double": 1, "string": 2, "bytes": 2}
_FORMATS = {"byte": ("bytes", 2), "duration": ("duration", 3), "date": ("timestamp", 12),
            "date-time": ("timestamp", 21)}  # fmt: skip
_FORMAT_MAX = {"duration": 32, "date": 12, "date-time": 32}
_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
             "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
             "void", "while"}  # fmt: skip
_EXPAND = re.compile(r"(__|[-./]|[^a-zA-Z0-9\-./_])")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


@dataclass(eq=False)
class Decl:
    """A ``DeclType``: ``kind`` is ``object``, ``list``, ``map``, ``string``, ``bytes``, ``int``,
    ``double``, ``bool``, ``timestamp``, ``duration`` or ``dyn``; ``name`` the object type's name
    (``selfType`` and its path, as ``MaybeAssignTypeName`` names them); a map's ``key``, where
    its keys have a size of their own (a CRD's have none); ``by_name``: a map whose values a
    field selection's size estimate reaches too (DRA's attributes: ``attributes["d"].model``)."""

    kind: str
    max_elements: int = 0
    min_size: int = 1
    fields: dict[str, Decl] = field(default_factory=dict)
    elem: Decl | None = None
    name: str = "object"
    key: Decl | None = None
    by_name: bool = False


def escaped(name: str) -> str | None:
    """A property's name as CEL sees it (``cel.Escape``); ``None``: it has none."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if any(not (ch.isascii() and (ch.isalnum() or ch in "_-./")) for ch in name):
        return None
    return _EXPAND.sub(lambda m: _ESCAPES[m.group()], name)


def _with_meta(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``WithTypeAndObjectMeta``: a resource's ``kind``, ``apiVersion`` and ``metadata`` (its
    ``name`` and ``generateName``), whatever its schema says of them."""
    props = dict(schema.get("properties") or {})
    string = {"type": "string"}
    props["kind"] = props["apiVersion"] = string
    props["metadata"] = {"type": "object", "properties": {"name": string, "generateName": string}}
    return {**schema, "properties": props}


def _max_length(schema: Mapping[str, Any]) -> int | None:
    value = schema.get("maxLength")
    return max(int(value), 0) if isinstance(value, int) else None


def decl_type(schema: Any, resource_root: bool, name: str = "selfType") -> Decl | None:
    """The ``DeclType`` of a (structural) schema node; ``None`` where it has none."""
    if not isinstance(schema, Mapping):
        return None
    if schema.get("x-kubernetes-int-or-string"):
        length = _max_length(schema)
        most = length * 4 if length is not None else MAX_REQUEST - 2
        return Decl("dyn", most, 1)
    if resource_root:
        schema = _with_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        item = decl_type(items, _embedded(items), f"{name}.@idx")
        if item is None:
            return None
        most = schema.get("maxItems")
        count = (
            max(int(most), 0) if isinstance(most, int) else (MAX_REQUEST - 2) // (item.min_size + 1)
        )
        return Decl("list", count, 2, elem=item)
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            value = decl_type(extra, _embedded(extra), f"{name}.@idx")
            if value is None:
                return None
            most = schema.get("maxProperties")
            count = (
                max(int(most), 0)
                if isinstance(most, int)
                else (MAX_REQUEST - 2) // (value.min_size + 6)
            )
            return Decl("map", count, 2, elem=value)
        required = set(schema.get("required") or ())
        fields: dict[str, Decl] = {}
        size = 2
        for prop, sub in (schema.get("properties") or {}).items():
            typed = decl_type(sub, _embedded(sub), f"{name}.{prop}")
            if typed is None:
                continue
            if (cel_name := escaped(prop)) is not None:
                fields[cel_name] = typed
            if prop in required and "default" not in sub:
                size += len(prop) + typed.min_size + 4
        return Decl("object", 0, size, fields=fields, name=name)
    if kind == "string":
        form = str(schema.get("format") or "")
        if form in _FORMATS:
            cel_kind, least = _FORMATS[form]
            length = _max_length(schema) if form == "byte" else None
            most = length if length is not None else _FORMAT_MAX.get(form, MAX_REQUEST - 2)
            return Decl(cel_kind, most, least)
        length = _max_length(schema)
        if length is not None:
            return Decl("string", length * 4, 2)
        enum = [v for v in schema.get("enum") or () if isinstance(v, str)]
        if schema.get("enum"):
            return Decl("string", max((len(v.encode()) for v in enum), default=0), 2)
        return Decl("string", MAX_REQUEST - 2, 2)
    simple = {"boolean": "bool", "number": "double", "integer": "int"}.get(str(kind))
    if simple is None:
        return None
    return Decl(simple, 0, _MIN_SIZE[simple])


def _embedded(schema: Any) -> bool:
    return isinstance(schema, Mapping) and bool(schema.get("x-kubernetes-embedded-resource"))


def max_cardinality(min_size: int) -> int:
    """How often a rule can run under unbounded lists and maps (``maxCardinality``)."""
    return MAX_REQUEST // (min_size + 1)
