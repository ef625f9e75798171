"""Validation ratcheting of custom resources' updates: what an update leaves as it was.

Pure. kube-apiserver (``CRDValidationRatcheting``, locked on since 1.33) correlates an updated
custom resource with the stored one, node by node, as ``k8s.io/apiserver``'s
``common.CorrelatedObject`` does: an object's fields by name (where the schema has a schema for
the field), a map-list's items by their keys; no other list's items. A correlated node equal to
its old value (type for type, walking correlated children) keeps none of its schema errors, and
its ``x-kubernetes-validations`` rules that do not use ``oldSelf`` only warn when broken; a node
no one correlates goes by its nearest correlated ancestor (for the rules).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.json_copy import is_map, same_json

__all__ = ["correlated_items", "unchanged"]


def unchanged(value: Any, old: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a correlated node is as it was (``CorrelatedObject.CachedDeepEqual``): a map's
    fields each correlated and unchanged (a field without a schema is not correlated: the map
    has changed), a map-list's items found by their keys and unchanged, any other value equal
    type for type."""
    if value is None or old is None:
        return value is None and old is None
    if is_map(value) and is_map(old):
        if len(value) != len(old):
            return False
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and is_map(extra):
                sub = extra
            if sub is None or key not in old or not unchanged(item, old[key], sub):
                return False
        return True
    if isinstance(value, list) and isinstance(old, list):
        if len(value) != len(old):
            return False
        items = schema.get("items")
        keys = _map_keys(schema)
        if keys is None or not isinstance(items, Mapping):
            return same_json(value, old)
        olds = _by_key(old, keys)
        for item in value:
            before = olds.get(_key(item, keys)) if is_map(item) else None
            if before is None or not unchanged(item, before, items):
                return False
        return True
    if is_map(value) or is_map(old) or isinstance(value, list) or isinstance(old, list):
        return False
    return same_json(value, old)


def correlated_items(value: list[Any], old: Any, schema: Mapping[str, Any]) -> list[Any] | None:
    """Each item's old value in a map-list (``None`` where there is none), by the items' keys;
    ``None`` for a list whose items no one correlates (a set, an atomic list)."""
    keys = _map_keys(schema)
    if keys is None or not isinstance(old, list):
        return None
    olds = _by_key(old, keys)
    return [olds.get(_key(item, keys)) if is_map(item) else None for item in value]


def _map_keys(schema: Mapping[str, Any]) -> tuple[str, ...] | None:
    if schema.get("x-kubernetes-list-type") != "map":
        return None
    return tuple(str(key) for key in schema.get("x-kubernetes-list-map-keys") or ())


def _key(item: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    return json.dumps([item.get(key) for key in keys], sort_keys=True)


def _by_key(items: list[Any], keys: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in items:
        if is_map(item):
            found.setdefault(_key(item, keys), item)
    return found
