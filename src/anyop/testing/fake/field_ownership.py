"""Field ownership (``metadata.managedFields``) as the API server's structured merge keeps it.

Pure. A field set is a set of paths; a path is a tuple of elements: ``("f", name)`` a map's
field, ``("k", '{"name":"a"}')`` a map-list's item by its keys, ``("v", '"x"')`` a set's item,
``("i", "0")`` a list index. A :class:`Shape` tells from the kind's schema which lists are
``map``s (and by what keys), ``set``s or ``atomic`` (owned whole), as ``x-kubernetes-list-type``
says. ``fieldsV1`` is the JSON form of a set (``f:``, ``k:``, ``v:`` keys, ``.`` for an owned
item itself).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "Path",
    "Shape",
    "fields_of",
    "from_fields_v1",
    "path_text",
    "remove_path",
    "to_fields_v1",
    "values_of",
]

Path = tuple[tuple[str, str], ...]
Schema = Mapping[str, Any]
_UNTRACKED_META = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "selfLink",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "generateName",
)


class Shape:
    """How a kind's schema structures lists and maps (no schema: lists atomic)."""

    def __init__(self, schema: Schema | None, resolve: Callable[[Schema], Schema]) -> None:
        self.schema = schema
        self.resolve = resolve

    def child(self, where: Schema | None, key: str) -> Schema | None:
        if where is None:
            return None
        node = self.resolve(where)
        properties = node.get("properties") or {}
        if key in properties:
            return properties[key]  # type: ignore[no-any-return]
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, Mapping) else None

    def items(self, where: Schema | None) -> Schema | None:
        return None if where is None else self.resolve(where).get("items")

    def list_type(self, where: Schema | None) -> tuple[str, tuple[str, ...]]:
        if where is None:
            return "atomic", ()
        node = self.resolve(where)
        kind = str(node.get("x-kubernetes-list-type") or "atomic")
        return kind, tuple(node.get("x-kubernetes-list-map-keys") or ())

    def atomic_map(self, where: Schema | None) -> bool:
        if where is None:
            return False
        node = self.resolve(where)
        return node.get("x-kubernetes-map-type") == "atomic"


def _item_key(item: Any, keys: tuple[str, ...]) -> str:
    found = {key: item.get(key) for key in keys if isinstance(item, Mapping) and key in item}
    return json.dumps(found, separators=(",", ":"), sort_keys=True)


def _tracked(obj: Mapping[str, Any], *, status: str) -> dict[str, Any]:
    """What ownership covers: not apiVersion/kind nor system metadata; ``status`` only for the
    status subresource (``status="only"``), not for a main resource that has one (``"skip"``)."""
    if status == "only":
        return {"status": obj["status"]} if "status" in obj else {}
    kept = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if status == "skip":
        kept.pop("status", None)
    metadata = kept.get("metadata")
    if isinstance(metadata, Mapping):
        meta = {k: v for k, v in metadata.items() if k not in _UNTRACKED_META}
        if meta:
            kept["metadata"] = meta
        else:
            kept.pop("metadata")
    return kept


def values_of(obj: Mapping[str, Any], shape: Shape, *, status: str = "keep") -> dict[Path, Any]:
    """Every owned path of an object with its value (``None`` for an item's own marker)."""
    found: dict[Path, Any] = {}
    _walk(_tracked(obj, status=status), shape.schema, shape, (), found)
    return found


def fields_of(obj: Mapping[str, Any], shape: Shape, *, status: str = "keep") -> set[Path]:
    """The field set of an object (or of an applied configuration)."""
    return set(values_of(obj, shape, status=status))


def _walk(value: Any, where: Schema | None, shape: Shape, path: Path, out: dict[Path, Any]) -> None:
    if isinstance(value, Mapping) and value and not shape.atomic_map(where):
        for key, item in value.items():
            _walk(item, shape.child(where, key), shape, (*path, ("f", str(key))), out)
        return
    if isinstance(value, list) and value:
        kind, keys = shape.list_type(where)
        items = shape.items(where)
        if kind == "map" and keys:
            for item in value:
                item_path = (*path, ("k", _item_key(item, keys)))
                out[item_path] = None
                _walk(item, items, shape, item_path, out)
            return
        if kind == "set":
            for item in value:
                out[(*path, ("v", json.dumps(item, separators=(",", ":"))))] = None
            return
    if path:
        out[path] = value


def to_fields_v1(fields: set[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` document of a field set."""
    root: dict[str, Any] = {}
    for path in sorted(fields):
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
        if (
            path
            and path[-1][0] in ("k", "i")
            and any(p[: len(path)] == path and p != path for p in fields)
        ):
            node["."] = {}
    return root


def from_fields_v1(document: Any, prefix: Path = ()) -> set[Path]:
    """The field set of a ``fieldsV1`` document."""
    found: set[Path] = set()
    if not isinstance(document, Mapping):
        return found
    if not document and prefix:
        return {prefix}
    for key, inner in document.items():
        if key == ".":
            found.add(prefix)
            continue
        kind, _, name = str(key).partition(":")
        found |= from_fields_v1(inner, (*prefix, (kind, name)))
    return found


def path_text(path: Path) -> str:
    """A path as conflict messages print it: ``.spec.containers[name="a"].image``."""
    parts = []
    for kind, name in path:
        if kind == "f":
            parts.append(f".{name}")
        elif kind == "k":
            keys = json.loads(name)
            parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]")
        elif kind == "v":
            parts.append(f"[={name}]")
        else:
            parts.append(f"[{name}]")
    return "".join(parts)


def remove_path(obj: Any, path: Path) -> None:
    """Remove the field or item at ``path`` from ``obj`` (in place), if it is there."""
    node = obj
    for index, (kind, name) in enumerate(path):
        last = index == len(path) - 1
        if kind == "f" and isinstance(node, dict):
            if last:
                node.pop(name, None)
                return
            node = node.get(name)
        elif kind in ("k", "v") and isinstance(node, list):
            match = _matcher(kind, name)
            if last:
                node[:] = [item for item in node if not match(item)]
                return
            node = next((item for item in node if match(item)), None)
        else:
            return
        if node is None:
            return


def _matcher(kind: str, name: str) -> Callable[[Any], bool]:
    wanted = json.loads(name)
    if kind == "v":
        return lambda item: bool(item == wanted)
    return lambda item: (
        isinstance(item, Mapping) and all(item.get(key) == value for key, value in wanted.items())
    )
