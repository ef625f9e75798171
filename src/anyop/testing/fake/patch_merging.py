"""The three patch formats, applied as kube-apiserver applies them.

Pure; inputs are never modified. :class:`PatchFailed` means a JSON patch could not be applied
(the API server answers 422); the caller maps it to a ``Status``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["PatchFailed", "apply_json_patch", "apply_merge_patch", "apply_strategic_patch"]


class PatchFailed(ValueError):
    """A JSON patch operation failed: a ``test`` mismatch, a missing path, a bad operation."""


# -- RFC 7386 merge patch ---------------------------------------------------------------------


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch: maps merge recursively, ``None`` deletes, the rest replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


# -- RFC 6902 JSON patch ----------------------------------------------------------------------


def _tokens(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchFailed(f"invalid path: {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def _index(container: list[Any], token: str, *, adding: bool) -> int:
    if adding and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchFailed(f"invalid array index: {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not adding):
        raise PatchFailed(f"array index out of range: {index}")
    return index


def _parent(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, adding=False)]
        else:
            raise PatchFailed(f"missing path: /{'/'.join(tokens)}")
    return node


def _get(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        return document
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, adding=False)]
    raise PatchFailed(f"missing path: /{'/'.join(tokens)}")


def _add(document: Any, tokens: list[str], value: Any, *, insert: bool = True) -> Any:
    if not tokens:
        return value
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = _index(parent, last, adding=insert)
        if insert:
            parent.insert(index, value)
        else:
            parent[index] = value
    else:
        raise PatchFailed(f"cannot add to a scalar at /{'/'.join(tokens)}")
    return document


def _remove(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise PatchFailed("cannot remove the whole document")
    parent, last = _parent(document, tokens), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, adding=False))
    raise PatchFailed(f"missing path: /{'/'.join(tokens)}")


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _apply_op(document: Any, op: Mapping[str, Any]) -> Any:
    kind = op.get("op")
    tokens = _tokens(op.get("path"))
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchFailed(f"{kind} needs a value")
    value = copy.deepcopy(op.get("value"))
    match kind:
        case "add":
            return _add(document, tokens, value)
        case "remove":
            _remove(document, tokens)
            return document
        case "replace":
            # The API server's patcher replaces a missing map key as an add; a missing list
            # index or a missing parent still fails.
            return _add(document, tokens, value, insert=False)
        case "test":
            if not _json_equal(_get(document, tokens), value):
                raise PatchFailed(f"test failed at {op.get('path')}")
            return document
        case "move":
            moved = _remove(document, _tokens(op.get("from")))
            return _add(document, tokens, moved)
        case "copy":
            copied = copy.deepcopy(_get(document, _tokens(op.get("from"))))
            return _add(document, tokens, copied)
    raise PatchFailed(f"unknown operation: {kind!r}")


def apply_json_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON patch (a list of operations) to a copy of ``target``.

    Raises:
        PatchFailed: The patch is not a list of operations, or one of them failed.
    """
    if not isinstance(patch, list):
        raise PatchFailed("a JSON patch is a list of operations")
    document = copy.deepcopy(target)
    for op in patch:
        if not isinstance(op, Mapping):
            raise PatchFailed("an operation is an object")
        document = _apply_op(document, op)
    return document


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


def apply_strategic_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch as the API server does for built-in kinds.

    Maps merge and ``None`` deletes; lists the Kubernetes types mark as merging (containers
    by name, ports, owner references by uid, finalizers as a set, ...) merge by key; other
    lists are replaced. ``$patch: replace|delete`` and ``$deleteFromPrimitiveList`` work;
    ``$setElementOrder`` is accepted and ignored.
    """
    return _strategic(target, patch, ())


def _strategic(target: Any, patch: Any, path: tuple[str, ...]) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {key: value for key, value in patch.items() if key != "$patch"}
    if directive == "replace":
        return copy.deepcopy(body)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in body.items():
        if key.startswith(_ORDER_PREFIX):
            continue
        if key.startswith(_DELETE_PREFIX):
            field = key.removeprefix(_DELETE_PREFIX)
            gone = set(map(str, value or ()))
            result[field] = [item for item in result.get(field) or () if str(item) not in gone]
        elif value is None:
            result.pop(key, None)
        else:
            merged = _strategic_value(result.get(key), value, (*path, key))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _strategic_value(current: Any, value: Any, path: tuple[str, ...]) -> Any:
    if isinstance(value, list) and path in _MERGE_KEYS:
        return _merge_list(current if isinstance(current, list) else [], value, path)
    return _strategic(current, value, path)


def _merge_list(current: list[Any], patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    """Merge a list by key: the patch's items first (in its order), then the untouched ones."""
    key = _MERGE_KEYS[path]
    if key is None:
        patched = list(dict.fromkeys(patch))
        return patched + [item for item in current if item not in patched]
    by_key = {old.get(key): old for old in current if isinstance(old, Mapping)}
    merged, touched = [], set()
    for item in patch:
        if not isinstance(item, Mapping):
            continue
        touched.add(item.get(key))
        if item.get("$patch") != "delete":
            merged.append(_strategic(by_key.get(item.get(key), {}), item, path))
    rest = [
        copy.deepcopy(old)
        for old in current
        if not (isinstance(old, Mapping) and old.get(key) in touched)
    ]
    return merged + rest
