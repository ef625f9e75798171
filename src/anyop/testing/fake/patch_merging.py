"""Merge patches and strategic merge patches, applied as kube-apiserver applies them (JSON
patches: :mod:`anyop.testing.fake.json_patches`).

Pure; inputs are never modified, and a merge's result shares the parts it leaves unchanged
with the target (copy it before changing it in place).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.faults import ConnectionDropped
from anyop.testing.fake.json_copy import is_map, json_copy
from anyop.testing.fake.patch_directives import check_map_directive, special_elements

__all__ = ["apply_merge_patch", "apply_strategic_patch"]


# -- RFC 7386 merge patch ---------------------------------------------------------------------


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch as kube-apiserver's patcher (evanphx/json-patch) does: maps
    merge recursively and ``None`` deletes; a value put where there was none (or no map) has
    its maps' nulls dropped, at any depth and in its lists' items too, while a value that
    replaces a map is taken as it is."""
    if not isinstance(patch, Mapping) or not isinstance(target, Mapping):
        return _without_nulls(patch)
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif result.get(key) is None:
            result[key] = _without_nulls(value)
        elif isinstance(result[key], Mapping):
            is_patch_map = isinstance(value, Mapping)
            result[key] = (
                apply_merge_patch(result[key], value) if is_patch_map else json_copy(value)
            )
        else:
            result[key] = _without_nulls(value)
    return result


def _without_nulls(value: Any) -> Any:
    """A copy with every map's null members dropped (a list's null items stay)."""
    if isinstance(value, Mapping):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


# -- strategic merge patch (built-in kinds) ----------------------------------------------------

_MERGE_KEYS: Mapping[tuple[str, ...], str | None] = {
    ("metadata", "finalizers"): None,  # a list of scalars merged as a set
    ("metadata", "ownerReferences"): "uid",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "containers", "env"): "name",
    ("spec", "containers", "ports"): "containerPort",
    ("spec", "containers", "volumeMounts"): "mountPath",
    ("spec", "volumes"): "name",
    ("spec", "ports"): "port",
    ("status", "conditions"): "type",
}
"""Lists that merge instead of being replaced, by path of keys, with the merge key of items."""

_DELETE_PREFIX = "$deleteFromPrimitiveList/"
_ORDER_PREFIX = "$setElementOrder/"
_RETAIN = "$retainKeys"

Resolve = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Follows a schema's ``$ref`` (the schemas of built-in kinds refer to each other by name)."""


def apply_strategic_patch(
    target: Any,
    patch: Any,
    schema: Mapping[str, Any] | None = None,
    resolve: Resolve | None = None,
) -> Any:
    """Apply a strategic merge patch as the API server does for built-in kinds.

    Maps merge and ``None`` deletes; lists whose schema says ``x-kubernetes-patch-strategy:
    merge`` merge (maps by their ``x-kubernetes-patch-merge-key``, scalars as a set), other
    lists are replaced. Merged lists are ordered as the API server orders them: the stored
    items in their order, the patch's in its order, merged by the stored order (so new items
    come before the stored ones they are compared with). ``$patch: replace|delete``,
    ``$deleteFromPrimitiveList``, ``$setElementOrder`` and ``$retainKeys`` work.

    Args:
        target: The stored object.
        patch: The patch.
        schema: The OpenAPI schema of the kind; without it, a table of the lists operators
            patch most (containers, ports, owner references, finalizers, conditions).
        resolve: Follows ``$ref`` in ``schema``.
    """
    walker = _Walker(schema, resolve or (lambda node: node))
    return walker.merge(target, patch, walker.root)


class _Walker:
    """Strategic merging guided by a schema (or the fallback table, by path)."""

    def __init__(self, schema: Mapping[str, Any] | None, resolve: Resolve) -> None:
        self.schema = schema
        self.resolve = resolve
        self.root: Any = schema if schema is not None else ()

    def child(self, where: Any, key: str) -> Any:
        if self.schema is None:
            return (*where, key)
        if where is None:
            return None
        node = self.resolve(where)
        properties = node.get("properties") or {}
        if key in properties:
            return properties[key]
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, Mapping) else None

    def items(self, where: Any) -> Any:
        if self.schema is None:
            return where
        return None if where is None else self.resolve(where).get("items")

    def strategy(self, where: Any) -> tuple[bool, str | None]:
        """Whether the list at ``where`` merges, and by which key (``None``: scalars)."""
        if self.schema is None:
            return (where in _MERGE_KEYS), _MERGE_KEYS.get(where)
        if where is None:
            return False, None
        node = self.resolve(where)
        merges = "merge" in str(node.get("x-kubernetes-patch-strategy", "")).split(",")
        return merges, node.get("x-kubernetes-patch-merge-key")

    def merge(self, target: Any, patch: Any, where: Any) -> Any:
        if not is_map(patch):
            return json_copy(patch)
        if not any(key[:1] == "$" for key in patch):  # no directive: most patches
            result = dict(target) if is_map(target) else {}
            for key, value in patch.items():
                merged = (
                    None
                    if value is None
                    else self.value(result.get(key), value, self.child(where, key), None)
                )
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
            return result
        directive = patch.get("$patch")
        if "$patch" in patch:
            check_map_directive(patch)  # replace or delete, else 500
        if directive == "delete":
            return None
        body = {key: value for key, value in patch.items() if key != "$patch"}
        if directive == "replace":
            return json_copy(
                {k: v for k, v in body.items() if not k.startswith(("$", _ORDER_PREFIX))}
            )
        result = dict(target) if isinstance(target, Mapping) else {}
        orders = {
            key.removeprefix(_ORDER_PREFIX): value
            for key, value in body.items()
            if key.startswith(_ORDER_PREFIX)
        }
        for key, value in body.items():
            if key.startswith(_ORDER_PREFIX) or key == _RETAIN:
                continue
            if key.startswith(_DELETE_PREFIX):
                field = key.removeprefix(_DELETE_PREFIX)
                gone = [json.dumps(item) for item in value or ()]
                kept = [i for i in result.get(field) or () if json.dumps(i) not in gone]
                result[field] = kept
            elif value is None:
                result.pop(key, None)
            else:
                merged = self.value(result.get(key), value, self.child(where, key), orders.get(key))
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
        if isinstance(body.get(_RETAIN), list):
            retained = set(body[_RETAIN])
            result = {key: value for key, value in result.items() if key in retained}
        return result

    def value(self, current: Any, value: Any, where: Any, order: Any) -> Any:
        if isinstance(value, list):
            if not isinstance(current, list) and order is None:
                return _taken(value)  # a list new to the object (or null there): merges nothing
            merges, key = self.strategy(where)
            if merges:
                old = current if isinstance(current, list) else []
                return self.merge_list(old, value, where, key, order)
            return json_copy(value)
        if is_map(value) and self.replaces(where):  # a struct the patch replaces whole
            return self.merge(None, {**value, "$patch": "replace"}, where)
        return self.merge(current, value, where)

    def replaces(self, where: Any) -> bool:
        """Whether the map at ``where`` has the patch strategy ``replace`` (a budget's
        selector), said beside its reference."""
        if self.schema is None or not isinstance(where, Mapping):
            return False
        return "replace" in str(where.get("x-kubernetes-patch-strategy", "")).split(",")

    def merge_list(
        self, current: list[Any], patch: list[Any], where: Any, key: str | None, order: Any
    ) -> list[Any]:
        if key is None or not any(isinstance(item, Mapping) for item in (*current, *patch)):
            merged = list(current)
            seen = [json.dumps(item) for item in merged]
            for item in patch:
                if json.dumps(item) not in seen:
                    merged.append(item)
                    seen.append(json.dumps(item))
            patch_order = order if isinstance(order, list) else patch
            return _ordered(merged, patch_order, current, lambda item: json.dumps(item))
        items = self.items(where)
        unhashable = any(isinstance(i, Mapping) and isinstance(i.get(key), (list, dict))
                         for i in patch)  # fmt: skip
        if unhashable and current:
            # Go's patcher orders a list merged into stored items by comparing its merge keys'
            # values: a list or a map there panics kube-apiserver's handler, which drops the
            # connection (a list new to the object is taken as it is).
            raise ConnectionDropped(f"a strategic merge patch's {key!r} holds a list or map")
        # The directives first (Go's mergeSliceWithSpecialElements): a replace takes the
        # patch's other items; the deletions, then the merges (an item the patch deletes and
        # merges is a new one).
        rest, gone, replace = special_elements(patch, key)
        if replace:
            return [json_copy(item) for item in rest]
        kept = [  # the items merged become new ones; the others stay shared
            old for old in current
            if not (isinstance(old, Mapping) and json.dumps(old.get(key)) in gone)
        ]  # fmt: skip
        merged = list(kept)
        for item in patch:
            if not isinstance(item, Mapping) or _deleting(item):
                continue
            index = next(
                (i for i, old in enumerate(merged)
                 if isinstance(old, Mapping) and old.get(key) == item.get(key)),
                None,
            )  # fmt: skip
            if index is None:  # appended as the patch has it (Go's mergeSliceWithout-
                merged.append(json_copy(item))  # SpecialElements): its nulls too
            else:
                merged[index] = self.merge(merged[index], item, items)
        patch_order = order if isinstance(order, list) else patch
        # The stored order is the list's after the deletions (an item deleted and merged again
        # is a new one, placed by the patch alone).
        return _ordered(merged, patch_order, kept, lambda item: _key_of(item, key))


def _taken(value: Any) -> Any:
    """A patch's value for a field the stored object lacks or holds as another type (null), as
    Go's ``mergeMap`` takes it: as it is, nothing merged (its duplicate merge keys stay), but
    for the nulls of its maps (``discardNullValuesFromPatch``) and its maps that hold a
    ``$patch`` directive (``removeDirectives``)."""
    if isinstance(value, list):
        return [_taken(item) for item in value if not (is_map(item) and "$patch" in item)]
    if is_map(value):
        return {key: _taken(item) for key, item in value.items()
                if item is not None and not (is_map(item) and "$patch" in item)}  # fmt: skip
    return value


def _key_of(item: Any, key: str) -> str:
    return json.dumps(item.get(key) if is_map(item) else item)


def _ordered(
    merged: list[Any], patch: list[Any], server: list[Any], identity: Callable[[Any], str]
) -> list[Any]:
    """The API server's order of a merged list: the items the patch names in the patch's
    order and the others in the stored order, interleaved by the stored order."""
    patch_ids = [identity(item) for item in patch if not _deleting(item)]
    server_ids = [identity(item) for item in server]
    named = sorted((i for i in merged if identity(i) in patch_ids),
                   key=lambda i: patch_ids.index(identity(i)))  # fmt: skip
    rest = sorted((i for i in merged if identity(i) not in patch_ids),
                  key=lambda i: server_ids.index(identity(i)) if identity(i) in server_ids
                  else len(server_ids))  # fmt: skip
    # Interleave: a stored item goes first where it was stored before the patch's next item;
    # items new to the list come as soon as they are compared.
    result: list[Any] = []
    left, right = 0, 0
    while left < len(rest) or right < len(named):
        if right >= len(named):
            result.append(rest[left])
            left += 1
        elif left >= len(rest):
            result.append(named[right])
            right += 1
        else:
            lid, rid = identity(rest[left]), identity(named[right])
            both = lid in server_ids and rid in server_ids
            if both and server_ids.index(lid) < server_ids.index(rid):
                result.append(rest[left])
                left += 1
            else:
                result.append(named[right])
                right += 1
    return result


def _deleting(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("$patch") == "delete"
