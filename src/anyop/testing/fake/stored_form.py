"""Built-in objects as their storage gives them back, beside the write's own object.

Pure. kube-apiserver keeps a built-in object in etcd as protobuf, which keeps no empty list or
map: one that Go writes without ``omitempty`` (a Role's ``rules``, a CSINode driver's
``topologyKeys``) is nil once stored and reads ``null``, while the write's own object, which
the field manager compares, has the empty one the request sent. :func:`as_stored` makes the
first of the second.
"""

from __future__ import annotations

from typing import Any

from anyop.testing.fake.openapi_catalog import Catalog, Schema, catalog
from anyop.testing.fake.typed_decoding import object_shape, value_plan

__all__ = ["as_stored"]

Body = dict[str, Any]

_ANY_SCHEMA: Schema = {}


def as_stored(group: str, version: str, kind: str, obj: Body) -> Body:
    """A built-in object as its storage gives it back: an empty list or map that Go writes
    without ``omitempty`` is nil once stored (protobuf keeps no empty one), so it reads
    ``null``. Before that, in the write's own object, it is the empty one the request sent,
    which the field manager tells from nil (the one sent owns it; a nil one no manager).
    ``obj`` is not changed: the parts on the way to a change are copied."""
    books = catalog()
    name = books.schema_name(group, version, kind)
    if name is None:
        return obj
    stored = _stored(books, obj, books.schemas[name], name)
    return stored if type(stored) is dict else obj


def _stored(books: Catalog, value: Any, resolved: Schema, name: str) -> Any:
    if type(value) is not dict:
        return value
    found = _paths(books, resolved, name)
    if not found:
        return value
    result = value
    for key, (schema, nulls) in found.items():
        item = value.get(key)
        if item is None:
            continue
        if nulls and item in ([], {}):
            new: Any = None
        else:
            new = _stored_value(books, item, schema)
        if new is not item:
            result = dict(value) if result is value else result
            result[key] = new
    return result


def _stored_value(books: Catalog, value: Any, schema: Schema) -> Any:
    plan = value_plan(books, schema)
    if plan.how == "object":
        return _stored(books, value, plan.resolved, plan.name)
    if plan.how == "array" and type(value) is list:
        items = plan.resolved.get("items") or _ANY_SCHEMA
        stored = [_stored_value(books, item, items) for item in value]
        return value if all(a is b for a, b in zip(stored, value, strict=True)) else stored
    return value


_PATHS: dict[int, dict[str, tuple[Schema, bool]]] = {}


def _paths(books: Catalog, resolved: Schema, name: str) -> dict[str, tuple[Schema, bool]]:
    """The fields of an object schema on the way to a nil-when-empty one, each with its schema
    and whether it is one itself: the only ones :func:`_stored` visits (read once per schema).
    A map's (no properties) values are kept as they are."""
    found = _PATHS.get(id(resolved))
    if found is None:
        found = {}
        if _holds_nulls(books, resolved, name):
            shape = object_shape(books, resolved, name)
            for key, (schema, _) in (shape.fields or {}).items():
                if key in shape.nulls or _leads_to_nulls(books, schema):
                    found[key] = (schema, key in shape.nulls)
        _PATHS[id(resolved)] = found
    return found


def _leads_to_nulls(books: Catalog, schema: Schema) -> bool:
    plan = value_plan(books, schema)
    if plan.how == "array":
        plan = value_plan(books, plan.resolved.get("items") or _ANY_SCHEMA)
    return plan.how == "object" and _holds_nulls(books, plan.resolved, plan.name)


_HOLDS: dict[int, bool] = {}


def _holds_nulls(books: Catalog, resolved: Schema, name: str) -> bool:
    """Whether an object schema has, at any depth, a field Go writes ``null`` for when nil."""
    found = _HOLDS.get(id(resolved))
    if found is None:
        _HOLDS[id(resolved)] = False  # a schema that holds itself (JSONSchemaProps): no loop
        found = _HOLDS[id(resolved)] = _search_nulls(books, resolved, name)
    return found


def _search_nulls(books: Catalog, resolved: Schema, name: str) -> bool:
    shape = object_shape(books, resolved, name)
    if shape.nulls:
        return True
    return any(_leads_to_nulls(books, sub) for sub, _ in (shape.fields or {}).values())
