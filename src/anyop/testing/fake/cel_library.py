"""Kubernetes' CEL libraries for cel-python: what kube-apiserver 1.36 gives CRD validation rules
beyond standard CEL (k8s.io/apiserver ``pkg/cel/library`` and the cel-go ``ext`` libraries its
base environment enables: strings v2, sets, lists v3, optional types).

cel-python calls a method as a function of its receiver (``s.indexOf(x)`` is
``indexOf(s, x)``): a name shared by two libraries (``indexOf`` of strings and of lists) is one
function here that looks at its receiver's type. A namespaced function (``sets.contains``,
``optional.of``, ``format.dns1123Label``, ``strings.quote``, ``lists.range``,
``ip.isCanonical``) is a method of a variable of the namespace's name (:data:`NAMESPACES`). A
function that fails gives a ``CELEvalError`` with the Go library's message.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

from anyop.testing.fake import cel_optional
from anyop.testing.fake import cel_values as values
from anyop.testing.fake.cel_format import string_format
from anyop.testing.fake.cel_kinds import (
    KIND_FUNCTIONS,
    NAMESPACES,
    Optional,
    Wrapped,
    as_int,
    as_list,
    as_string,
    fail,
    guarded,
    is_namespace,
)
from anyop.testing.fake.go_regexp import GoRegexpError, go_compiled

__all__ = ["FUNCTIONS", "NAMESPACES", "rewritten"]

_OVERLOAD = "no such overload"
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B))
)


# -- strings (ext.Strings, version 2) ---------------------------------------------------------


def _char_at(text: Any, index: Any) -> Any:
    text, index = as_string(text), as_int(index)
    if index < 0 or index > len(text):
        fail(f"index out of range: {index}")
    return celtypes.StringType(text[index : index + 1])


def _index_of(receiver: Any, item: Any, *offset: Any) -> Any:
    if isinstance(receiver, list) and not offset:
        return celtypes.IntType(next((i for i, x in enumerate(receiver) if x == item), -1))
    text, sub = as_string(receiver), as_string(item)
    start = as_int(offset[0]) if offset else 0
    if sub == "":
        return celtypes.IntType(start)
    if start < 0:
        fail(f"index out of range: {start}")
    if start >= len(text):
        return celtypes.IntType(-1)
    return celtypes.IntType(text.find(sub, start))


def _last_index_of(receiver: Any, item: Any, *offset: Any) -> Any:
    if isinstance(receiver, list) and not offset:
        found = [i for i, x in enumerate(receiver) if x == item]
        return celtypes.IntType(found[-1] if found else -1)
    text, sub = as_string(receiver), as_string(item)
    if not offset:
        if sub == "":
            return celtypes.IntType(len(text))
        if len(text.encode()) < len(sub.encode()):
            return celtypes.IntType(-1)
        start = len(text) - 1
    else:
        start = as_int(offset[0])
        if sub == "":
            return celtypes.IntType(start)
    if start < 0:
        fail(f"index out of range: {start}")
    if start >= len(text):
        return celtypes.IntType(-1)
    return celtypes.IntType(text.rfind(sub, 0, min(start, len(text) - len(sub)) + len(sub)))


def _ascii(convert: Callable[[str], str]) -> Callable[[Any], Any]:
    def changed(text: Any) -> Any:
        return celtypes.StringType(
            "".join(convert(c) if c.isascii() else c for c in as_string(text))
        )

    return changed


def _replace(text: Any, old: Any, new: Any, *count: Any) -> Any:
    times = as_int(count[0]) if count else -1
    return celtypes.StringType(as_string(text).replace(as_string(old), as_string(new), times))


def _split(text: Any, separator: Any, *count: Any) -> Any:
    text, separator = as_string(text), as_string(separator)
    limit = as_int(count[0]) if count else -1
    if limit == 0:
        return celtypes.ListType()
    if separator == "":
        parts = list(text)
        if 0 < limit < len(parts):
            parts = [*parts[: limit - 1], "".join(parts[limit - 1 :])]
    else:
        parts = text.split(separator, limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(part) for part in parts])


def _substring(text: Any, start: Any, *end: Any) -> Any:
    text, begin = as_string(text), as_int(start)
    finish = as_int(end[0]) if end else len(text)
    if end and begin > finish:
        fail(f"invalid substring range. start: {begin}, end: {finish}")
    for index in (begin, finish):
        if index < 0 or index > len(text):
            fail(f"index out of range: {index}")
    return celtypes.StringType(text[begin:finish])


def _join(items: Any, *separator: Any) -> Any:
    parts = []
    for item in as_list(items):
        if not isinstance(item, str):
            fail(f"join: invalid input: {item}")
        parts.append(item)
    return celtypes.StringType((as_string(separator[0]) if separator else "").join(parts))


_QUOTED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
           "\v": "\\v", "\\": "\\\\", '"': '\\"'}  # fmt: skip


def _quote(namespace: Any, text: Any) -> Any:
    if not is_namespace(namespace, "strings"):
        raise TypeError("quote")
    return celtypes.StringType('"' + "".join(_QUOTED.get(c, c) for c in as_string(text)) + '"')


# -- lists (Kubernetes' lists library, ext.Lists version 3) ------------------------------------


def _comparable(items: list[Any]) -> None:
    for item in items:
        if isinstance(item, (list, Mapping)) or item is None:
            raise TypeError("comparable")


def _is_sorted(items: Any) -> Any:
    items = as_list(items)
    _comparable(items)
    return celtypes.BoolType(all(not a > b for a, b in itertools.pairwise(items)))


def _sum(items: Any) -> Any:
    items = as_list(items)
    if not items:
        return celtypes.IntType(0)
    total = items[0]
    for item in items[1:]:
        total = total + item
    if isinstance(total, int) and not values.in_int64(total):
        fail("integer overflow")
    return total


def _extreme(name: str, pick: Callable[[Any, Any], bool]) -> Callable[[Any], Any]:
    def chosen(items: Any) -> Any:
        items = as_list(items)
        _comparable(items)
        if not items:
            fail(f"{name} called on empty list")
        best = items[0]
        for item in items[1:]:
            if pick(item, best):
                best = item
        return best

    return chosen


def _slice(items: Any, start: Any, end: Any) -> Any:
    items, begin, finish = as_list(items), as_int(start), as_int(end)
    if begin < 0 or finish < 0:
        fail(f"cannot slice({begin}, {finish}), negative indexes not supported")
    if begin > finish:
        fail(f"cannot slice({begin}, {finish}), start index must be less than or equal to "
              "end index")  # fmt: skip
    if len(items) < finish:
        fail(f"cannot slice({begin}, {finish}), list is length {len(items)}")
    return celtypes.ListType(items[begin:finish])


def _flattened(items: list[Any], depth: int) -> list[Any]:
    if depth < 0:
        fail("level must be non-negative")
    flat: list[Any] = []
    for item in items:
        flat.extend(_flattened(item, depth - 1) if isinstance(item, list) and depth else [item])
    return flat


def _flatten(items: Any, *depth: Any) -> Any:
    return celtypes.ListType(_flattened(as_list(items), as_int(depth[0]) if depth else 1))


def _sort(items: Any) -> Any:
    items = as_list(items)
    if not items:
        return items
    if isinstance(items[0], (list, Mapping)) or items[0] is None:
        fail("list elements must be comparable")
    if any(type(item) is not type(items[0]) for item in items):
        fail("list elements must have the same type")
    return celtypes.ListType(sorted(items))


def _reverse(items: Any) -> Any:
    return celtypes.ListType(list(reversed(as_list(items))))


def _distinct(items: Any) -> Any:
    unique: list[Any] = []
    for item in as_list(items):
        if not any(item == seen for seen in unique):
            unique.append(item)
    return celtypes.ListType(unique)


def _range(namespace: Any, count: Any) -> Any:
    if not is_namespace(namespace, "lists"):
        raise TypeError("range")
    return celtypes.ListType([celtypes.IntType(i) for i in range(as_int(count))])


# -- sets (ext.Sets) ------------------------------------------------------------------------


def _holds_all(items: list[Any], wanted: list[Any]) -> bool:
    return all(any(want == item for item in items) for want in wanted)


def _contains(receiver: Any, *args: Any) -> Any:
    if is_namespace(receiver, "sets") and len(args) == 2:
        return celtypes.BoolType(_holds_all(as_list(args[0]), as_list(args[1])))
    return base_functions["contains"](receiver, *args)


def _equivalent(namespace: Any, first: Any, second: Any) -> Any:
    if not is_namespace(namespace, "sets"):
        raise TypeError("equivalent")
    first, second = as_list(first), as_list(second)
    return celtypes.BoolType(_holds_all(first, second) and _holds_all(second, first))


def _intersects(namespace: Any, first: Any, second: Any) -> Any:
    if not is_namespace(namespace, "sets"):
        raise TypeError("intersects")
    return celtypes.BoolType(any(a == b for a in as_list(first) for b in as_list(second)))


# -- regex (Kubernetes' regex library) ---------------------------------------------------------


def _pattern(pattern: Any) -> Any:
    try:
        return go_compiled(as_string(pattern))  # RE2's, as cel-go's
    except GoRegexpError as exc:
        raise values.CelValueError(f"Illegal regex: {exc}") from None


def _find(text: Any, pattern: Any) -> Any:
    found = _pattern(pattern).search(as_string(text))
    return celtypes.StringType(found.group(0) if found else "")


def _find_all(text: Any, pattern: Any, *count: Any) -> Any:
    limit = as_int(count[0]) if count else -1
    found: list[str] = []
    end = -1
    for match in _pattern(pattern).finditer(as_string(text)):
        if len(found) == limit:
            break
        if match.start() == match.end() == end:
            continue  # Go skips an empty match that abuts the one before
        found.append(match.group(0))
        end = match.end()
    return celtypes.ListType([celtypes.StringType(item) for item in found])


# -- optional types ---------------------------------------------------------------------------


def _zero(value: Any) -> bool:
    return value is None or (not isinstance(value, (Wrapped, Optional)) and not value)


def _optional_of(namespace: Any, value: Any) -> Any:
    if not is_namespace(namespace, "optional"):
        raise TypeError("of")
    return Optional(value, True)


def _optional_of_non_zero(namespace: Any, value: Any) -> Any:
    if not is_namespace(namespace, "optional"):
        raise TypeError("ofNonZeroValue")
    return Optional() if _zero(value) else Optional(value, True)


def _optional_none(namespace: Any) -> Any:
    if not is_namespace(namespace, "optional"):
        raise TypeError("none")
    return Optional()


def _optional(value: Any) -> Optional:
    if not isinstance(value, Optional):
        raise TypeError("optional")
    return value


def _value(optional: Any) -> Any:
    held = _optional(optional)
    return held.value if held.present else fail("optional.none() dereference")


def _or_value(optional: Any, other: Any) -> Any:
    held = _optional(optional)
    return held.value if held.present else other


def _or(optional: Any, other: Any) -> Any:
    return optional if _optional(optional).present else _optional(other)


def _has_value(optional: Any) -> Any:
    return celtypes.BoolType(_optional(optional).present)


def _end(at: int) -> Callable[[Any], Any]:
    """A list's ``first()`` (``at`` 0) or ``last()`` (-1): an optional of the element."""

    def end(items: Any) -> Any:
        listed = as_list(items)
        return Optional(listed[at], True) if listed else Optional()

    return end


def _unwrapped(items: Any) -> Any:
    """``optional.unwrap(list)``, ``list.unwrapOpt()``: the values of the optionals that have
    one."""
    found = []
    for item in as_list(items):
        if not isinstance(item, Optional):
            fail(f"value {item} is not optional")
        if item.present:
            found.append(item.value)
    return celtypes.ListType(found)


def _unwrap(namespace: Any, items: Any) -> Any:
    if not is_namespace(namespace, "optional"):
        raise TypeError("unwrap")
    return _unwrapped(items)


# -- the functions ----------------------------------------------------------------------------


_METHODS: dict[str, Callable[..., Any]] = {
    "charAt": _char_at, "indexOf": _index_of, "lastIndexOf": _last_index_of,
    "lowerAscii": _ascii(str.lower), "upperAscii": _ascii(str.upper), "replace": _replace,
    "split": _split, "substring": _substring,
    "trim": lambda text: celtypes.StringType(as_string(text).strip(_GO_SPACE)),
    "join": _join, "format": lambda text, args: celtypes.StringType(
        string_format(as_string(text), as_list(args))), "quote": _quote,
    "isSorted": _is_sorted, "sum": _sum, "max": _extreme("max", lambda a, b: a > b),
    "@min": _extreme("min", lambda a, b: a < b), "slice": _slice, "flatten": _flatten,
    "sort": _sort, "reverse": _reverse, "distinct": _distinct, "range": _range,
    "contains": _contains, "equivalent": _equivalent, "intersects": _intersects,
    "find": _find, "findAll": _find_all,
    "of": _optional_of, "ofNonZeroValue": _optional_of_non_zero, "none": _optional_none,
    "value": _value, "orValue": _or_value, "or": _or, "hasValue": _has_value,
    "first": _end(0), "last": _end(-1), "unwrap": _unwrap, "unwrapOpt": _unwrapped,
    cel_optional.SELECT: lambda target, name: cel_optional.select(
        target, name, optional=Optional, none=Optional),
    cel_optional.INDEX: lambda target, key: cel_optional.index(
        target, key, optional=Optional, none=Optional),
    cel_optional.ENTRIES: lambda target, pattern: cel_optional.entries(
        target, str(pattern), optional=Optional),
    **KIND_FUNCTIONS,
}  # fmt: skip


def _either(logical: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``||`` and ``&&``: of two errors, the left one (cel-python finds no overload)."""

    def run(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError) and isinstance(right, CELEvalError):
            return left
        return logical(left, right)

    return run


def _by_zero(message: str, operation: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``/`` and ``%``: an int by zero fails with cel-go's words, a double by zero is an
    infinity (or NaN)."""

    def run(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError) or isinstance(right, CELEvalError):
            return left if isinstance(left, CELEvalError) else right
        if isinstance(left, int) and isinstance(right, int) and right == 0:
            return CELEvalError(message)
        if isinstance(left, float) and isinstance(right, float) and float(right) == 0:
            dividend = float(left)
            infinite = math.copysign(math.inf, dividend) * math.copysign(1, float(right))
            return celtypes.DoubleType(math.nan if dividend == 0 else infinite)
        return operation(left, right)

    return run


FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: guarded(function) for name, function in _METHODS.items()},
    "_/_": _by_zero("division by zero", operator.truediv),
    "_%_": _by_zero("modulus by zero", operator.mod),
    "_||_": _either(celtypes.logical_or),
    "_&&_": _either(celtypes.logical_and),
}
"""The library's functions, by name, for ``Environment.program(ast, functions=...)``."""

_MACRO_NAMES = {"min": "@min"}
"""Methods cel-python takes for its own macros (``min()``: Python's ``min``)."""


def rewritten(tree: lark.Tree[Any]) -> lark.Tree[Any]:
    """The parsed rule with the methods cel-python takes for macros renamed to ours."""
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and len(node.children) >= 2:
            token = node.children[1]
            if isinstance(token, lark.Token) and token.value in _MACRO_NAMES:
                node.children[1] = token.update(value=_MACRO_NAMES[token.value])
    return tree
