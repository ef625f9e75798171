"""Field paths, diffs of JSON-like data, and the "essence" of an object that diffs are taken of.

A diff is Kopf's sequence of ``(op, field_path, old, new)`` items, where ``op`` is ``add``,
``change`` or ``remove`` and ``field_path`` a tuple of keys. Lists are compared as a whole.

The essence is what change detection looks at: the body without ``apiVersion``, ``kind``,
``metadata`` and ``status``, but with the labels and the annotations put back -- except the
annotations that operators write for themselves (anyop's, Kopf's, and
``kubectl.kubernetes.io/last-applied-configuration``).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, NamedTuple, overload

__all__ = [
    "EMPTY",
    "IGNORED_ANNOTATIONS",
    "KNOWN_PREFIXES",
    "MANAGED_MARKER",
    "Diff",
    "DiffItem",
    "DiffOperation",
    "FieldPath",
    "FieldSpec",
    "cherrypick",
    "diff",
    "ensure",
    "essence",
    "json_copy",
    "managed_prefixes",
    "parse_field",
    "reduce",
    "remove",
    "remove_empty_stanzas",
    "resolve",
]

FieldPath = tuple[str, ...]
"""A parsed field path: ``("spec", "field")``."""

FieldSpec = str | Sequence[str]
"""A field as users write it: ``"spec.field"`` or ``["spec", "field"]``."""

MANAGED_MARKER = "kopf-managed"
"""An annotation name (``<prefix>/kopf-managed: "yes"``) marking a prefix as an operator's own."""

KNOWN_PREFIXES = ("kopf.zalando.org", "anyop.dev")
"""Annotation prefixes (and their subdomains) that are known to hold operators' own state."""

IGNORED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
"""Annotations that are never part of the essence."""

_MISSING: Any = object()


def parse_field(field: FieldSpec | None) -> FieldPath:
    """Turn ``"spec.field"`` or ``["spec", "field"]`` into ``("spec", "field")``.

    Raises:
        TypeError: For anything but a string or a sequence of strings.
    """
    if field is None:
        return ()
    if isinstance(field, str):
        return tuple(field.split(".")) if field else ()
    if isinstance(field, Sequence) and all(isinstance(key, str) for key in field):
        return tuple(field)
    raise TypeError(f"A field must be a dotted string or a list of strings, not {field!r}.")


@overload
def resolve(data: Any, path: FieldPath) -> Any: ...
@overload
def resolve(data: Any, path: FieldPath, default: Any) -> Any: ...
def resolve(data: Any, path: FieldPath, default: Any = _MISSING) -> Any:
    """Get the value at ``path``, or ``default`` if any key is missing or is not a mapping.

    Raises:
        KeyError: If the value is missing and no default is given.
    """
    node = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            if default is _MISSING:
                raise KeyError(".".join(path))
            return default
        node = node[key]
    return node


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, strings, numbers, booleans, ``None``).

    Several times faster than :func:`copy.deepcopy` on bodies as the API server sends them;
    anything else (a tuple, a mapping view, a user's object) is copied by
    :func:`copy.deepcopy`.
    """
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def ensure(data: MutableMapping[str, Any], path: FieldPath, value: Any) -> None:
    """Set the value at ``path``, creating (or replacing non-mapping) intermediate dicts."""
    if not path:
        raise ValueError("Cannot replace the root of a mapping.")
    node = data
    for key in path[:-1]:
        if not isinstance(node.get(key), MutableMapping):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def remove(data: MutableMapping[str, Any], path: FieldPath) -> None:
    """Delete the value at ``path`` if it is there, and the dicts left empty along the path."""
    if not path:
        raise ValueError("Cannot remove the root of a mapping.")
    parent = resolve(data, path[:-1], None)
    if isinstance(parent, MutableMapping) and path[-1] in parent:
        del parent[path[-1]]
        if not parent and len(path) > 1:
            remove(data, path[:-1])


def cherrypick(
    src: Mapping[str, Any], dst: MutableMapping[str, Any], fields: Iterable[FieldPath]
) -> None:
    """Copy (deeply) the given fields from ``src`` into ``dst``, where ``src`` has them."""
    absent = object()
    for path in fields:
        value = resolve(src, path, absent)
        if value is not absent:
            ensure(dst, path, json_copy(value))


class DiffOperation(enum.StrEnum):
    """What happened to a field: added, changed, or removed."""

    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"

    def __repr__(self) -> str:
        return repr(self.value)


class DiffItem(NamedTuple):
    """One change: ``(operation, field, old, new)``; ``old``/``new`` are ``None`` when absent."""

    operation: DiffOperation
    field: FieldPath
    old: Any
    new: Any

    def __repr__(self) -> str:
        return repr(tuple(self))

    @property
    def op(self) -> DiffOperation:
        """The operation (Kopf's short name)."""
        return self.operation


class Diff(Sequence[DiffItem]):
    """An immutable, hashable sequence of :class:`DiffItem`; equal to any same-content sequence.

    Args:
        items: The items, as :class:`DiffItem` or plain 4-tuples.
    """

    def __init__(self, items: Iterable[Sequence[Any]] = (), /) -> None:
        self._items = tuple(DiffItem(DiffOperation(op), tuple(f), o, n) for op, f, o, n in items)

    @classmethod
    def _of(cls, items: Iterable[DiffItem]) -> Diff:
        """A diff of items that are already :class:`DiffItem` s with a :class:`DiffOperation`
        and a tuple field (as this module makes them), taken as they are."""
        made = cls.__new__(cls)
        made._items = tuple(items)
        return made

    def __hash__(self) -> int:
        return hash(tuple((op, field) for op, field, _, _ in self._items))

    def __repr__(self) -> str:
        return repr(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[DiffItem]:
        return iter(self._items)

    @overload
    def __getitem__(self, index: int) -> DiffItem: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[DiffItem]: ...
    def __getitem__(self, index: int | slice) -> DiffItem | Sequence[DiffItem]:
        return self._items[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return tuple(tuple(item) for item in self) == tuple(tuple(item) for item in other)
        return NotImplemented


EMPTY = Diff()
"""The empty diff."""


def diff(a: Any, b: Any, path: FieldPath = ()) -> Diff:
    """Compute the diff from ``a`` to ``b``; mappings are recursed into, lists are not.

    ``None`` and absence are the same: a field that becomes ``None`` is removed.
    """
    return Diff._of(_diff_iter(a, b, tuple(path)))


def _diff_iter(a: Any, b: Any, path: FieldPath) -> Iterator[DiffItem]:
    if a == b:
        return
    if a is None:
        yield DiffItem(DiffOperation.ADD, path, a, b)
    elif b is None:
        yield DiffItem(DiffOperation.REMOVE, path, a, b)
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in b:
            if key not in a:
                yield from _diff_iter(None, b[key], (*path, key))
        for key in a:
            if key not in b:
                yield from _diff_iter(a[key], None, (*path, key))
        for key in a:
            if key in b:
                yield from _diff_iter(a[key], b[key], (*path, key))
    else:
        yield DiffItem(DiffOperation.CHANGE, path, a, b)


def reduce(d: Diff, path: FieldPath) -> Diff:
    """Make a diff relative to a field: only its changes, with paths relative to it.

    A change of a parent (e.g. ``spec`` added as a whole) becomes the corresponding change of the
    field itself (``spec.field`` added).
    """
    return Diff(_reduce_iter(d, path))


def _reduce_iter(d: Diff, path: FieldPath) -> Iterator[DiffItem]:
    for op, field, old, new in d:
        if field[: len(path)] == path:
            yield DiffItem(op, field[len(path) :], old, new)
        elif path[: len(field)] == field:
            tail = path[len(field) :]
            yield from _diff_iter(resolve(old, tail, None), resolve(new, tail, None), ())


def managed_prefixes(annotation_keys: Iterable[str]) -> frozenset[str]:
    """Detect the annotation prefixes that hold operators' own state.

    A prefix is managed if it is one of :data:`KNOWN_PREFIXES` or their subdomains, or if any
    annotation ``<prefix>/kopf-managed`` exists (other Kopf-style operators mark theirs so).
    """
    found: set[str] = set()
    for key in annotation_keys:
        prefix, slash, name = key.partition("/")
        known = any(prefix == p or prefix.endswith(f".{p}") for p in KNOWN_PREFIXES)
        if slash and (name == MANAGED_MARKER or known):
            found.add(prefix)
    return frozenset(found)


def remove_empty_stanzas(essence: MutableMapping[str, Any]) -> None:
    """Drop empty ``metadata.labels``, ``metadata.annotations``, ``metadata`` and ``status``."""
    metadata = essence.get("metadata")
    if isinstance(metadata, MutableMapping):
        for key in ("annotations", "labels"):
            if key in metadata and not metadata[key]:
                del metadata[key]
    for key in ("metadata", "status"):
        if key in essence and not essence[key]:
            del essence[key]


def essence(body: Mapping[str, Any], extra_fields: Iterable[FieldPath] = ()) -> dict[str, Any]:
    """Extract what change detection compares: the object's essence (a deep copy).

    Args:
        body: The object.
        extra_fields: Fields to keep even where they would be dropped, e.g. ``("status", "x")``
            for a field handler on ``status.x``.

    Returns:
        The body without ``apiVersion``, ``kind``, ``metadata``, ``status``; with the labels and
        the not-operator-owned annotations; with the extra fields; without empty stanzas.
    """
    dropped = ("apiVersion", "kind", "metadata", "status")
    result = {key: json_copy(value) for key, value in body.items() if key not in dropped}
    metadata: Mapping[str, Any] = body.get("metadata") or {}
    if "labels" in metadata:
        ensure(result, ("metadata", "labels"), json_copy(metadata["labels"]))
    if "annotations" in metadata:
        annotations: Mapping[str, Any] = metadata["annotations"] or {}
        owned = managed_prefixes(annotations)
        kept = {
            key: value
            for key, value in annotations.items()
            if key not in IGNORED_ANNOTATIONS and key.partition("/")[0] not in owned
        }
        ensure(result, ("metadata", "annotations"), kept)
    cherrypick(body, result, extra_fields)
    remove_empty_stanzas(result)
    return result
