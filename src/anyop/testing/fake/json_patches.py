"""JSON patches (``application/json-patch+json``) as kube-apiserver applies them.

Pure. kube-apiserver applies RFC 6902 patches with its JSON patch library, which is looser than
the RFC in ways clients come to rely on, and stricter in a few; :func:`apply_json_patch` does as
it does:

- An array index is what Go's ``strconv.Atoi`` reads (``01`` is 1), and a negative one counts
  from the end (``-1`` adds before the end: an append).
- A path is split at ``/`` and its first part dropped, leading slash or not (``spec/x`` is
  ``/x``); the empty path (the whole document) is refused.
- ``add`` without a ``value`` adds ``null``; ``replace`` of a missing map key adds it;
  ``copy`` of a missing map key copies ``null``.
- ``test`` compares the stored value with the given one type for type (``1`` is not ``1.0``);
  a missing key and ``null`` are ``null``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.json_copy import json_copy

__all__ = ["PatchFailed", "apply_json_patch"]


class PatchFailed(ValueError):
    """A JSON patch operation failed: a ``test`` mismatch, a missing path, a bad operation."""


_ATOI = re.compile(r"[+-]?[0-9]+")
_ABSENT = object()


def apply_json_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON patch (a list of operations) to a copy of ``target``.

    Raises:
        PatchFailed: The patch is not a list of operations, or one of them failed.
    """
    if not isinstance(patch, list):
        raise PatchFailed("a JSON patch is a list of operations")
    document = json_copy(target)
    for op in patch:
        if not isinstance(op, Mapping):
            raise PatchFailed("an operation is an object")
        _apply(document, op)
    return document


def _apply(document: Any, op: Mapping[str, Any]) -> None:
    kind = op.get("op")
    value = json_copy(op.get("value"))
    match kind:
        case "add":
            container, key = _find(document, _path(op, "path"))
            _add(container, key, value)
        case "remove":
            container, key = _find(document, _path(op, "path"))
            _remove(container, key)
        case "replace":
            container, key = _find(document, _path(op, "path"))
            _get(container, key)  # a list's index must exist; a map's key need not
            _set(container, key, value)
        case "test":
            container, key = _find(document, _path(op, "path"))
            if not _same(_get(container, key), op.get("value", _ABSENT)):
                raise PatchFailed(f"testing value {op.get('path')} failed")
        case "move":
            container, key = _find(document, _path(op, "from"))
            moved = _get(container, key)
            _remove(container, key)
            container, key = _find(document, _path(op, "path"))
            _add(container, key, moved)
        case "copy":
            container, key = _find(document, _path(op, "from"))
            copied = json_copy(_get(container, key))
            container, key = _find(document, _path(op, "path"))
            _add(container, key, copied)
        case _:
            raise PatchFailed(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")


def _path(op: Mapping[str, Any], field: str) -> str:
    path = op.get(field)
    if not isinstance(path, str):
        raise PatchFailed(f"operation missing {field} field")
    return path


def _decoded(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _find(document: Any, path: str) -> tuple[Any, str]:
    """The container the path's last part is in, and that part (as the library finds them)."""
    parts = path.split("/")
    if len(parts) < 2:
        raise PatchFailed(f"doc is missing path: {path!r}")
    node = document
    for part in parts[1:-1]:
        try:
            node = _get(node, _decoded(part))
        except PatchFailed:
            node = None
        if not isinstance(node, (dict, list)):
            raise PatchFailed(f"doc is missing path: {path!r}")
    return node, _decoded(parts[-1])


def _index(key: str) -> int:
    if not _ATOI.fullmatch(key):
        raise PatchFailed(f"value was not a proper array index: {key!r}")
    return int(key)


def _get(container: Any, key: str) -> Any:
    """A map's value (``None`` if missing, as ``null``) or a list's item (its index must be in
    range, and not negative)."""
    if isinstance(container, dict):
        return container.get(key)
    index = _index(key)
    if not 0 <= index < len(container):
        raise PatchFailed(f"Unable to access invalid index: {index}")
    return container[index]


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container[_index(key)] = value


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index, size = _index(key), len(container) + 1
    if not -size <= index < size:
        raise PatchFailed(f"Unable to access invalid index: {index}")
    container.insert(index + size if index < 0 else index, value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise PatchFailed(f"Unable to remove nonexistent key: {key}")
        del container[key]
        return
    index, size = _index(key), len(container)
    if not -size <= index < size:
        raise PatchFailed(f"Unable to access invalid index: {index}")
    del container[index]


def _same(stored: Any, given: Any) -> bool:
    """``test``'s comparison (``given`` is :data:`_ABSENT` when the operation has no value)."""
    if stored is None:
        return given is None or given is _ABSENT
    if given is _ABSENT:
        return False
    if isinstance(stored, dict):
        return (
            isinstance(given, dict)
            and stored.keys() == given.keys()
            and all(_same(item, given[key]) for key, item in stored.items())
        )
    if isinstance(stored, list):
        return (
            isinstance(given, list)
            and len(stored) == len(given)
            and all(_same(a, b) for a, b in zip(stored, given, strict=True))
        )
    return type(stored) is type(given) and stored == given
