"""JSON patches (RFC 6902) and JSON pointers (RFC 6901): computed, applied, and compared.

Pure. :func:`json_patch_diff` computes the operations between two documents (used for the
``patch.fns`` transformations and for mutating webhooks' responses); :func:`apply_json_patch`
applies them as the API server would (used by the webhook layer and by tests).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "JsonPatchError",
    "JsonPatchOp",
    "apply_json_patch",
    "json_equal",
    "json_patch_diff",
    "pointer",
]

JsonPatchOp = dict[str, Any]
"""One RFC 6902 operation, e.g. ``{"op": "add", "path": "/spec/x", "value": 1}``."""


class JsonPatchError(ValueError):
    """A JSON patch cannot be applied: a failed ``test``, a missing path, a bad operation."""


def json_equal(a: Any, b: Any) -> bool:
    """Compare two JSON values as JSON does: ``True`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping | list | tuple) or isinstance(b, Mapping | list | tuple):
        return False
    return bool(a == b)


def pointer(path: Iterable[str | int]) -> str:
    """Build an RFC 6901 JSON pointer: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return "".join(f"/{str(key).replace('~', '~0').replace('/', '~1')}" for key in path)


def json_patch_diff(old: Any, new: Any) -> list[JsonPatchOp]:
    """Compute the RFC 6902 operations that turn ``old`` into ``new``.

    Dicts are diffed key by key; lists by their common head and tail, with the middle paired
    index by index, so that appending, inserting or removing one item is one operation.
    """
    return list(_diff_ops(old, new, ()))


def _diff_ops(old: Any, new: Any, path: tuple[str | int, ...]) -> Iterator[JsonPatchOp]:
    if json_equal(old, new):
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        yield from _diff_mappings(old, new, path)
    elif isinstance(old, list) and isinstance(new, list):
        yield from _diff_lists(old, new, path)
    else:
        yield {"op": "replace", "path": pointer(path), "value": copy.deepcopy(new)}


def _diff_mappings(
    old: Mapping[str, Any], new: Mapping[str, Any], path: tuple[str | int, ...]
) -> Iterator[JsonPatchOp]:
    for key in old:
        if key not in new:
            yield {"op": "remove", "path": pointer((*path, key))}
    for key, value in new.items():
        if key not in old:
            yield {"op": "add", "path": pointer((*path, key)), "value": copy.deepcopy(value)}
        else:
            yield from _diff_ops(old[key], value, (*path, key))


def _diff_lists(
    old: list[Any], new: list[Any], path: tuple[str | int, ...]
) -> Iterator[JsonPatchOp]:
    head = 0
    while head < min(len(old), len(new)) and json_equal(old[head], new[head]):
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and json_equal(old[-1 - tail], new[-1 - tail]):
        tail += 1
    old_mid, new_mid = old[head : len(old) - tail], new[head : len(new) - tail]
    paired = min(len(old_mid), len(new_mid))
    for offset in range(paired):
        yield from _diff_ops(old_mid[offset], new_mid[offset], (*path, head + offset))
    for _ in range(len(old_mid) - paired):
        yield {"op": "remove", "path": pointer((*path, head + paired))}
    for offset, value in enumerate(new_mid[paired:], start=head + paired):
        index: str | int = "-" if tail == 0 else offset  # appending at the very end
        yield {"op": "add", "path": pointer((*path, index)), "value": copy.deepcopy(value)}


def apply_json_patch(document: Any, ops: Iterable[Mapping[str, Any]]) -> Any:
    """Apply an RFC 6902 JSON patch and return the result; the input is not changed.

    Supports ``add``, ``remove``, ``replace``, ``move``, ``copy`` and ``test``.

    Raises:
        JsonPatchError: If a ``test`` fails, a path does not exist, or an operation is unknown.
    """
    result = copy.deepcopy(document)
    for op in ops:
        result = _apply_op(result, op)
    return result


def _apply_op(document: Any, op: Mapping[str, Any]) -> Any:
    kind, path = op.get("op"), _parse_pointer(op.get("path"))
    if kind == "test":
        if not json_equal(_get(document, path), op.get("value")):
            raise JsonPatchError(f"Test failed at {op.get('path')!r}: {op.get('value')!r}")
        return document
    if kind == "remove":
        return _remove(document, path)
    if kind == "replace":
        return _add(_remove(document, path), path, copy.deepcopy(op.get("value")))
    if kind == "add":
        return _add(document, path, copy.deepcopy(op.get("value")))
    if kind in ("move", "copy"):
        source = _parse_pointer(op.get("from"))
        value = copy.deepcopy(_get(document, source))
        return _add(_remove(document, source) if kind == "move" else document, path, value)
    raise JsonPatchError(f"Unknown JSON-patch operation: {kind!r}")


def _parse_pointer(text: object) -> list[str]:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise JsonPatchError(f"Not a JSON pointer: {text!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in text.split("/")[1:]]


def _index(container: list[Any], key: str, *, extra: int = 0) -> int:
    if not key.isdigit() or int(key) >= len(container) + extra or (key != "0" and key[0] == "0"):
        raise JsonPatchError(f"No list index {key!r} in a list of {len(container)}")
    return int(key)


def _get(document: Any, path: Sequence[str]) -> Any:
    node = document
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list):
            node = node[_index(node, key)]
        else:
            raise JsonPatchError(f"No such path: {pointer(path)!r}")
    return node


def _add(document: Any, path: Sequence[str], value: Any) -> Any:
    if not path:
        return value
    parent, key = _get(document, path[:-1]), path[-1]
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list):
        parent.insert(len(parent) if key == "-" else _index(parent, key, extra=1), value)
    else:
        raise JsonPatchError(f"Cannot add into a non-container at {pointer(path)!r}")
    return document


def _remove(document: Any, path: Sequence[str]) -> Any:
    if not path:
        return None
    parent, key = _get(document, path[:-1]), path[-1]
    if isinstance(parent, dict) and key in parent:
        del parent[key]
    elif isinstance(parent, list):
        del parent[_index(parent, key)]
    else:
        raise JsonPatchError(f"No such path: {pointer(path)!r}")
    return document
