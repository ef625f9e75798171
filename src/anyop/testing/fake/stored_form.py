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
    if type(value) is not dict or not _holds_nulls(books, resolved, name):
        return value
    shape = object_shape(books, resolved, name)
    if shape.fields is None:
        return value
    result = value
    for key, item in value.items():
        field = shape.fields.get(key)
        if field is None or item is None:
            continue
        if key in shape.nulls and item in ([], {}):
            new: Any = None
        else:
            new = _stored_value(books, item, field[0])
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
    for sub, _ in (shape.fields or {}).values():
        plan = value_plan(books, sub)
        if plan.how == "array":
            plan = value_plan(books, plan.resolved.get("items") or _ANY_SCHEMA)
        if plan.how == "object" and _holds_nulls(books, plan.resolved, plan.name):
            return True
    return False
