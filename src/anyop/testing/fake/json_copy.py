"""Deep copies of JSON documents, several times faster than :func:`copy.deepcopy`, and their
compact JSON text.

Pure. Objects of the fake API are JSON: dicts, lists and immutable scalars, with no cycles and no
shared parts that must stay shared, so a copy needs no memo. Such a document made of the exact
built-in types goes through :mod:`marshal` (C, without back-references in its version 2: every
part copied), about 1.5x as fast as a walk in Python; anything else (a dict's subclass, a
``Mapping`` of another kind's values) is walked.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["compact_json", "frozen", "is_map", "json_copy", "same_json", "sorted_keys", "thawed"]

T = TypeVar("T")
_PLAIN = (str, int, float, list, tuple, type(None))


def is_map(value: Any) -> bool:
    """``isinstance(value, Mapping)``, answered without the ABC's Python-level check for the
    types JSON documents are made of (the walks of the fake's writes ask it of every value)."""
    return isinstance(value, dict) or (not isinstance(value, _PLAIN) and isinstance(value, Mapping))


def same_json(value: Any, other: Any) -> bool:
    """Whether two JSON documents are equal as Go compares unstructured values: type for type
    (``1`` is not ``1.0``, nor ``True``), maps whatever their keys' order."""
    return bool(value == other) and _same_types(value, other)


def _same_types(value: Any, other: Any) -> bool:
    if type(value) is not type(other):
        return is_map(value) and is_map(other) and _same_types(dict(value), dict(other))
    if type(value) is dict:
        return all(_same_types(item, other[key]) for key, item in value.items())
    if type(value) is list:
        return all(_same_types(a, b) for a, b in zip(value, other, strict=True))
    return True


def json_copy(value: T) -> T:
    """A deep copy of a JSON document (dicts and lists copied; scalars equal)."""
    if not isinstance(value, (dict, list)):
        return value
    try:
        return marshal.loads(marshal.dumps(value, 2))  # type: ignore[no-any-return]
    except ValueError:  # a part marshal does not take as it is (a subclass): walked
        return _copy(value)  # type: ignore[no-any-return]


_stdlib_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_fast_json: Callable[[Any], bytes] | None
try:  # a test dependency of anyop: about 9x as fast as the standard library on an object
    from msgspec.json import Encoder
except ImportError:  # pragma: no cover - the standard library's encoder, alone
    _fast_json = None
else:
    _fast_json = Encoder().encode


def compact_json(document: Any) -> bytes:
    """A JSON document's compact text in UTF-8, as kube-apiserver writes it: other scripts as
    they are, not escaped.

    Encoded by ``msgspec`` where it is installed, else (and where it refuses a part, such as a
    string with a lone surrogate) by the standard library, which escapes every character
    outside ASCII (``\\u00e9``): the same document to any JSON reader.
    """
    if _fast_json is not None:
        try:
            return _fast_json(document)
        except (TypeError, ValueError, OverflowError):  # UnicodeEncodeError is a ValueError
            pass
    return _stdlib_json(document).encode()


def frozen(value: Any) -> bytes:
    """A JSON document as bytes that :func:`thawed` makes a new copy of, each time (bytes hold no
    references: the garbage collector does not walk them)."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:  # a part marshal does not take as it is (a subclass): walked first
        return marshal.dumps(_copy(value), 2)


def thawed(data: bytes) -> Any:
    """A new copy of the document that :func:`frozen` made ``data`` of."""
    return marshal.loads(data)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) if isinstance(item, (dict, list)) else item
                for key, item in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_copy(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def sorted_keys(value: Any) -> Any:
    """A JSON document with every object's keys sorted (as Go writes a map)."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value
