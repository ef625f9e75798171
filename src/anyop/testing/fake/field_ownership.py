"""Field ownership (``metadata.managedFields``) as the API server's structured merge keeps it.

Pure. A field set is a set of paths; a path is a tuple of elements: ``("f", name)`` a map's
field, ``("k", '{"name":"a"}')`` a map-list's item by its keys, ``("v", '"x"')`` a set's item,
``("i", "0")`` a list index. A :class:`Shape` tells from the kind's schema which lists are
``map``s (and by what keys), ``set``s or ``atomic`` (owned whole), as ``x-kubernetes-list-type``
says. ``fieldsV1`` is the JSON form of a set (``f:``, ``k:``, ``v:`` keys, ``.`` for an owned
item itself).
"""

from __future__ import annotations

import functools
import json
import marshal
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.json_copy import is_map

_json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii
"""A string as ``json.dumps`` writes it (ASCII, escaped), without its keyword handling."""

__all__ = [
    "Path",
    "Shape",
    "changes",
    "fields_of",
    "fields_v1_of",
    "from_fields_v1",
    "named_prefixes",
    "path_text",
    "remove_path",
    "to_fields_v1",
    "value_at",
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
)


_SCALARS = ("string", "integer", "number", "boolean")


class _Node:
    """What a schema node says of structure, read once (see :meth:`Shape.node`)."""

    __slots__ = ("atomic_map", "extra", "items", "key_defaults", "keys", "list_type", "properties")

    def __init__(self, node: Schema) -> None:
        self.properties: Mapping[str, Schema] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        self.extra: Schema | None = extra if isinstance(extra, Mapping) else None
        self.items: Schema | None = node.get("items")
        self.list_type = str(node.get("x-kubernetes-list-type") or "atomic")
        self.keys: tuple[str, ...] = tuple(node.get("x-kubernetes-list-map-keys") or ())
        # A map where the schema has a scalar (an IntOrString given an object) is one value to
        # structured merge, which types it as deduced: owned whole, as an atomic map.
        scalar = (node.get("type") in _SCALARS or node.get("x-kubernetes-int-or-string")
                  or node.get("format") == "int-or-string")  # fmt: skip
        self.atomic_map = node.get("x-kubernetes-map-type") == "atomic" or bool(scalar)
        self.key_defaults: Mapping[str, Any] = {}
        """A map-list's key fields' defaults: an item without one is keyed by it."""


class Shape:
    """How a kind's schema structures lists and maps (no schema: lists atomic).

    Each schema node is resolved and read once per shape: a shape must not outlive its schema
    (the catalog's live as long as the process; a CRD's shape is made per write).
    """

    def __init__(self, schema: Schema | None, resolve: Callable[[Schema], Schema]) -> None:
        self.schema = schema
        self.resolve = resolve
        self._nodes: dict[int, _Node] = {}

    def node(self, where: Schema) -> _Node:
        """The structure ``where`` (resolved) gives."""
        found = self._nodes.get(id(where))
        if found is None:
            found = self._nodes[id(where)] = _Node(self.resolve(where))
            if found.keys and found.items is not None:
                fields = self.resolve(found.items).get("properties") or {}
                found.key_defaults = {key: fields[key]["default"] for key in found.keys
                                      if "default" in (fields.get(key) or {})}  # fmt: skip
        return found

    def child(self, where: Schema | None, key: str) -> Schema | None:
        if where is None:
            return None
        node = self.node(where)
        found = node.properties.get(key)
        return found if found is not None else node.extra

    def items(self, where: Schema | None) -> Schema | None:
        return None if where is None else self.node(where).items

    def list_type(self, where: Schema | None) -> tuple[str, tuple[str, ...]]:
        if where is None:
            return "atomic", ()
        node = self.node(where)
        return node.list_type, node.keys

    def atomic_map(self, where: Schema | None) -> bool:
        return where is not None and self.node(where).atomic_map


def _item_key(item: Any, keys: tuple[str, ...], defaults: Mapping[str, Any]) -> str:
    """A map-list item's key fields as compact JSON with sorted keys (``{"name":"a"}``), a
    missing one by its default (as structured merge keys it)."""
    if not is_map(item):
        return "{}"
    if defaults and any(key not in item for key in defaults):
        item = {**defaults, **item}
    parts = []
    for key in sorted(keys):
        if key in item:
            value = item[key]
            if type(value) is str:
                text = _json_string(value)
            elif type(value) is int:
                text = repr(value)
            else:  # the rare rest, as json.dumps writes it
                found = {key: item[key] for key in keys if key in item}
                return json.dumps(found, separators=(",", ":"), sort_keys=True)
            parts.append(f"{_json_string(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def _tracked(obj: Mapping[str, Any], *, status: str) -> dict[str, Any]:
    """What ownership covers: not apiVersion/kind nor system metadata; ``status`` only for the
    status subresource (``status="only"``), not for a main resource that has one (``"skip"``)."""
    if status == "only":
        return {"status": obj["status"]} if "status" in obj else {}
    kept = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if status == "skip":
        kept.pop("status", None)
    metadata: Any = kept.get("metadata")
    if is_map(metadata):
        meta = {k: v for k, v in metadata.items() if k not in _UNTRACKED_META}
        if meta:
            kept["metadata"] = meta
        else:
            kept.pop("metadata")
    return kept


def values_of(
    obj: Mapping[str, Any], shape: Shape, *, status: str = "keep", maps: bool = False
) -> dict[Path, Any]:
    """Every owned path of an object with its value (``None`` for an item's own marker;
    ``maps``: its maps too, as an update owns those it adds, with one marker value)."""
    found: dict[Path, Any] = {}
    _walk(_tracked(obj, status=status), shape.schema, shape, (), found, maps)
    return found


def fields_of(obj: Mapping[str, Any], shape: Shape, *, status: str = "keep") -> set[Path]:
    """The field set of an object (or of an applied configuration)."""
    return set(values_of(obj, shape, status=status))


def changes(
    old: Mapping[str, Any], new: Mapping[str, Any], shape: Shape, *, status: str = "keep"
) -> tuple[set[Path], set[Path]]:
    """The owned paths whose value differs between two objects, and those of them that ``new``
    has: what comparing their :func:`values_of` gives, path by path.

    Equal subtrees are skipped whole (compared by ``==``, in C), so an update walks only what it
    changed: the maps down to each change, and whatever list or value differs, walked on both
    sides as :func:`values_of` walks it. Values equal by ``==`` that JSON writes differently
    (``1`` and ``1.0`` in a set's item) count as unchanged, as the API server's typed values do.
    """
    changed: set[Path] = set()
    taken: set[Path] = set()
    old_kept, new_kept = _tracked(old, status=status), _tracked(new, status=status)
    if old_kept != new_kept:
        _diff(old_kept, new_kept, shape.schema, shape, (), changed, taken)
    return changed, taken


_ABSENT = object()


def _diff(
    old: Any,
    new: Any,
    where: Schema | None,
    shape: Shape,
    path: Path,
    changed: set[Path],
    taken: set[Path],
    item: bool = False,
) -> None:
    """Add the changes between two values at ``path`` (``item``: of a map-list's item, which
    owns its own path too; :data:`_ABSENT`: not there), which differ (each caller compares them
    first: a subtree is compared once, not again at each level below)."""
    if not item and old is not _ABSENT and new is not _ABSENT:
        old, new = _emptied_side(old, new, where, shape)
    if (old and new) or (is_map(old) and is_map(new)) or _granular_lists(old, new, where, shape):
        node = None if where is None else shape.node(where)
        if is_map(old) and is_map(new) and (node is None or not node.atomic_map):
            if item and bool(old) != bool(new):  # an empty item is a leaf: it becomes a map
                changed.add(path)
                taken.add(path)
            properties: Mapping[str, Schema] = {} if node is None else node.properties
            extra = None if node is None else node.extra
            for key, now in new.items():
                was = old.get(key, _ABSENT)
                if was is now or was == now:
                    continue
                sub = properties.get(key)
                sub = extra if sub is None else sub
                _diff(was, now, sub, shape, (*path, ("f", str(key))), changed, taken)
            for key in old.keys() - new.keys():  # removed
                sub = properties.get(key)
                sub = extra if sub is None else sub
                _diff(old[key], _ABSENT, sub, shape, (*path, ("f", str(key))), changed, taken)
            return
        if node is not None and _granular_lists(old, new, where, shape):
            _diff_items(old, new, node, shape, path, changed, taken)
            return
    before: dict[Path, Any] = {}
    after: dict[Path, Any] = {}
    if old is not _ABSENT:
        if item:
            before[path] = None
        _walk(old, where, shape, path, before, maps=True)
    if new is not _ABSENT:
        if item:
            after[path] = None
        _walk(new, where, shape, path, after, maps=True)
    if not before or not after:  # added or removed whole: every path differs
        changed.update(before or after)
        taken.update(after)
        return
    for key in before.keys() | after.keys():
        if before.get(key, _ABSENT) != after.get(key, _ABSENT):
            changed.add(key)
            if key in after:
                taken.add(key)


def _granular_lists(old: Any, new: Any, where: Schema | None, shape: Shape) -> bool:
    """Whether two values are both lists that the schema makes a set or a keyed map-list."""
    if not (isinstance(old, list) and isinstance(new, list)) or where is None:
        return False
    node = shape.node(where)
    return node.list_type == "set" or (node.list_type == "map" and bool(node.keys))


def _emptied_side(old: Any, new: Any, where: Schema | None, shape: Shape) -> tuple[Any, Any]:
    """Two present values, a null one read as the empty form of the other where that is a
    granular map or list with items: structured merge's compare then walks the items (each
    added or removed), and the field itself, there on both sides, is not changed. A null
    against an empty one stays as it is (both empty: one value, compared whole)."""
    if old is None and new:
        if is_map(new) and not shape.atomic_map(where):
            return {}, new
        if _granular_lists([], new, where, shape):
            return [], new
    elif new is None and old:
        emptied, _ = _emptied_side(new, old, where, shape)
        return old, emptied
    return old, new


def _diff_items(
    old: list[Any],
    new: list[Any],
    node: _Node,
    shape: Shape,
    path: Path,
    changed: set[Path],
    taken: set[Path],
) -> None:
    """The changes between the items of two sets or keyed map-lists, as structured merge's
    ``compareWalker.visitListItems`` pairs them by key: an item once on each side compared as
    an item; a key twice on both sides a change of the key if its items differ; a key twice on
    one side only a change of the key (removed, or added), the single item on the other side
    removed or added whole."""
    keyed = node.list_type == "map"
    element = "k" if keyed else "v"

    def key_of(each: Any) -> str:
        if keyed:
            return _item_key(each, node.keys, node.key_defaults)
        return json.dumps(each, separators=(",", ":"))

    olds: dict[str, list[Any]] = {}
    news: dict[str, list[Any]] = {}
    for items, grouped in ((old, olds), (new, news)):
        for each in items:
            grouped.setdefault(key_of(each), []).append(each)
    for key in olds.keys() | news.keys():
        was, now = olds.get(key, []), news.get(key, [])
        item_path = (*path, (element, key))
        if len(was) <= 1 and len(now) <= 1:
            before = was[0] if was else _ABSENT
            after = now[0] if now else _ABSENT
            if before is after or before == after:
                continue
            _diff(before, after, node.items, shape, item_path, changed, taken, keyed)
        elif len(was) >= 2 and len(now) >= 2:
            if was != now:
                changed.add(item_path)
                taken.add(item_path)
        elif len(was) >= 2:  # no longer twice: the key is removed, an item left is added
            if now:
                _diff(_ABSENT, now[0], node.items, shape, item_path, changed, taken, keyed)
            changed.add(item_path)
        else:  # twice now: the key is added, an item there before removed
            if was:
                _diff(was[0], _ABSENT, node.items, shape, item_path, changed, taken, keyed)
            changed.add(item_path)
            taken.add(item_path)


_METADATA: Path = (("f", "metadata"),)
_MAP = object()
"""The value :func:`_walk` gives a map it counts as a field of its own (``maps``)."""
_LIST = object()
"""The value :func:`_walk` gives a set or map-list it counts as a field of its own."""


def _walk(
    value: Any,
    where: Schema | None,
    shape: Shape,
    path: Path,
    out: dict[Path, Any],
    maps: bool = False,
) -> None:
    """The paths under ``value`` (at ``path``) into ``out``, each with its value; a map-list's
    items and (``maps``: an update's, whose added maps it owns, ``.`` in its ``fieldsV1``)
    the maps themselves too."""
    if isinstance(value, list):
        if value:
            node = None if where is None else shape.node(where)
            if node is not None and node.list_type == "map" and node.keys:
                if maps:  # an update owns a list it adds, as a map
                    out[path] = _LIST
                keys = [_item_key(item, node.keys, node.key_defaults) for item in value]
                twice = _repeated(keys)
                for item, key in zip(value, keys, strict=True):
                    item_path = (*path, ("k", key))
                    out[item_path] = None
                    if key not in twice:  # a key twice is owned alone, not what its items hold
                        _walk(item, node.items, shape, item_path, out, maps)
                return
            if node is not None and node.list_type == "set":
                if maps:
                    out[path] = _LIST
                for item in value:
                    out[(*path, ("v", json.dumps(item, separators=(",", ":"))))] = None
                return
        elif not maps and _granular_list(where, shape):
            return  # to an apply, an empty set or map-list is no field (to an update it is)
    elif value and is_map(value):
        node = None if where is None else shape.node(where)
        if node is None or not node.atomic_map:
            if maps and path and path[-1][0] == "f" and path != _METADATA:
                out[path] = _MAP  # (metadata is there in every object: never added)
            properties = {} if node is None else node.properties
            extra = None if node is None else node.extra
            for key, item in value.items():
                sub = properties.get(key)
                if sub is None:  # a key the schema does not name is a field of its own too,
                    sub = extra  # with what it holds (structured merge's toFieldSet)
                    if not maps and item and (is_map(item) or isinstance(item, list)):
                        out[(*path, ("f", str(key)))] = _MAP
                _walk(item, sub, shape, (*path, ("f", str(key))), out, maps)
            return
    if path:
        empty_map = (
            maps
            and is_map(value)
            and path != _METADATA
            and not (where is not None and shape.atomic_map(where))
        )
        out[path] = _MAP if empty_map else value


def _repeated(keys: list[str]) -> set[str]:
    """The keys that are there more than once."""
    seen: set[str] = set()
    twice: set[str] = set()
    for key in keys:
        (twice if key in seen else seen).add(key)
    return twice


def _granular_list(where: Schema | None, shape: Shape) -> bool:
    return where is not None and shape.node(where).list_type in ("set", "map")


def named_prefixes(paths: set[Path], shape: Shape) -> set[Path]:
    """The paths to the fields a schema declares that hold these paths (``.spec`` of
    ``.spec.size``), as structured merge's ``EnsureNamedFieldsAreMembers`` makes them members:
    an apply removes such a field when no one owns anything in it any more."""
    found: set[Path] = set()
    for path in paths:
        where = shape.schema
        for end, (kind, name) in enumerate(path[:-1], start=1):
            if where is None:
                break
            if kind == "f":
                if name in shape.node(where).properties:
                    found.add(path[:end])
                where = shape.child(where, name)
            elif kind in ("k", "i"):
                where = shape.items(where)
            else:
                break
    return found


def fields_v1_of(
    obj: Mapping[str, Any], shape: Shape, *, status: str = "keep", zero: Any = None
) -> dict[str, Any]:
    """The ``fieldsV1`` document of a create's field set, made in one walk: what
    :func:`changes` from ``zero`` (the kind's empty object: ``{}``, or a built-in kind's Go
    zero value, whose structs are there already) takes, without the paths in between."""
    return _document(_tracked(obj, status=status), shape.schema, shape, zero or {}) or {}


def _document(
    value: Any, where: Schema | None, shape: Shape, zero: Any = _ABSENT
) -> dict[str, Any] | None:
    """The ``fieldsV1`` entries under a value's path, in the document's order (each level's
    keys sorted, an item's ``.`` first, and an added map's: one that ``zero``, the value there
    before, does not have); ``None`` for a value whose path is a leaf (as :func:`_walk` finds
    it)."""
    if isinstance(value, list):
        if value:
            node = None if where is None else shape.node(where)
            if node is not None and node.list_type == "map" and node.keys:
                keys = ["k:" + _item_key(item, node.keys, node.key_defaults) for item in value]
                twice = _repeated(keys)
                items: dict[str, Any] = {}
                for item, key in zip(value, keys, strict=True):
                    inner = None if key in twice else _document(item, node.items, shape)
                    items[key] = {".": {}, **inner} if inner else {}  # (added with the item)
                itself: dict[str, Any] = {".": {}} if zero is _ABSENT else {}  # (added)
                return {**itself, **_by_key(items)}
            if node is not None and node.list_type == "set":
                added = zero is _ABSENT or zero is None
                items = {"v:" + json.dumps(item, separators=(",", ":")): {} for item in value}
                return {".": {}, **_by_key(items)} if added else _by_key(items)
        return None
    if value and is_map(value):
        node = None if where is None else shape.node(where)
        if node is None or not node.atomic_map:
            properties = {} if node is None else node.properties
            extra = None if node is None else node.extra
            before = zero if zero is not _ABSENT and is_map(zero) else {}
            found = {}
            for key, item in value.items():
                was = before.get(key, _ABSENT)
                if was == item and type(was) is type(item):
                    continue  # as the zero object has it (a "" string, an empty struct)
                sub = properties.get(key)
                sub = extra if sub is None else sub
                inner = _document(item, sub, shape, was)
                found[f"f:{key}"] = inner or {}
            marker: dict[str, Any] = {".": {}} if zero is _ABSENT or zero is None else {}
            return {**marker, **_by_key(found)}
    return None


def _by_key(found: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(found.items()))  # (the keys are unique: no value is compared)


def to_fields_v1(fields: set[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` document of a field set."""
    root: dict[str, Any] = {}
    ordered = sorted(fields)  # a path's extensions come right after it
    for index, path in enumerate(ordered):
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
        if path and index + 1 < len(ordered):
            following = ordered[index + 1]
            if following[: len(path)] == path:  # an item or a map with fields, owned too
                node["."] = {}
    return root


def from_fields_v1(document: Any) -> set[Path]:
    """The field set of a ``fieldsV1`` document.

    Every write reads the documents of the object's owners: those read lately are remembered
    by their content (as ``marshal`` writes it), so an owner whose document did not change is
    not parsed again.
    """
    if type(document) is dict:
        try:
            blob = marshal.dumps(document, 0)  # no marks of interning or references
        except ValueError:  # not plain JSON data
            pass
        else:
            return set(_read_fields_v1(blob))
    return _fields_v1(document, ())


@functools.lru_cache(maxsize=1024)
def _read_fields_v1(blob: bytes) -> frozenset[Path]:
    return frozenset(_fields_v1(marshal.loads(blob), ()))


def _fields_v1(document: Any, prefix: Path) -> set[Path]:
    found: set[Path] = set()
    if not is_map(document):
        return found
    if not document and prefix:
        return {prefix}
    for key, inner in document.items():
        if key == ".":
            found.add(prefix)
            continue
        kind, _, name = str(key).partition(":")
        found |= _fields_v1(inner, (*prefix, (kind, name)))
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


def value_at(obj: Any, path: Path, shape: Shape) -> tuple[Any, Schema | None]:
    """The value at ``path`` in ``obj`` (``None`` if it is not there) and its schema."""
    node, where = obj, shape.schema
    for kind, name in path:
        if kind == "f" and is_map(node):
            node, where = node.get(name), shape.child(where, name)
        elif kind in ("k", "v") and isinstance(node, list):
            match = _matcher(kind, name)
            node, where = next((item for item in node if match(item)), None), shape.items(where)
        else:
            return None, None
    return node, where


def _matcher(kind: str, name: str) -> Callable[[Any], bool]:
    wanted = json.loads(name)
    if kind == "v":
        return lambda item: bool(item == wanted)
    return lambda item: (
        isinstance(item, Mapping) and all(item.get(key) == value for key, value in wanted.items())
    )
