"""The JSONPath of a CRD's ``additionalPrinterColumns``, evaluated as kube-apiserver does.

Pure. kube-apiserver runs client-go's ``jsonpath`` with missing keys allowed and takes the first
value found; a string column prints it (strings as they are, numbers and booleans as Go's ``%v``,
lists and maps as compact JSON). Supported here: fields (``.a.b``, ``['a.b']``, ``.*``),
recursive descent (``..name``), indices and slices (``[0]``, ``[-1]``, ``[1:3]``, ``[*]``) and
filters (``[?(@.type=="Ready")]``, with ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` or existence).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from anyop.testing.fake.go_json import go_float

__all__ = ["first_value", "go_text"]

_TOKEN = re.compile(
    r"\.\.(?P<deep>[^.\[]+)"
    r"|\.(?P<field>(?:\\.|[^.\[\\])+)"
    r"|\[\?\((?P<filter>.*?)\)\]"
    r"|\[(?P<bracket>[^\]]*)\]"
)
_FILTER = re.compile(r"^\s*@(?P<path>[^\s=!<>]*)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*$")
_MISSING = object()


def _steps(path: str) -> list[re.Match[str]]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return list(_TOKEN.finditer(text))


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from (value[key] for key in sorted(value))
    elif isinstance(value, list):
        yield from value


def _descend(value: Any, name: str) -> Iterator[Any]:
    if isinstance(value, dict) and name in value:
        yield value[name]
    for child in _children(value):
        yield from _descend(child, name)


def _literal(text: str) -> Any:
    text = text.strip()
    if text[:1] in "'\"" and text[-1:] == text[:1]:
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if isinstance(left, bool) or not isinstance(left, int | float):
        return False
    if isinstance(right, bool) or not isinstance(right, int | float):
        return False
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def _kept(item: Any, condition: str) -> bool:
    found = _FILTER.match(condition)
    if found is None:
        return False
    values = _evaluate(item, _steps(found["path"]))
    if found["op"] is None:
        return bool(values)
    return any(_compare(v, found["op"], _literal(found["lit"])) for v in values)


def _bracket(value: Any, text: str) -> Iterator[Any]:
    text = text.strip()
    if text[:1] in "'\"":
        name = text[1:-1]
        if isinstance(value, dict) and name in value:
            yield value[name]
        return
    if not isinstance(value, list):
        if text == "*":
            yield from _children(value)
        return
    if text == "*":
        yield from value
    elif re.fullmatch(r"-?\d*:-?\d*(?::-?\d*)?", text):
        bounds = [int(part) if part else None for part in text.split(":")]
        yield from value[slice(*bounds)] if bounds[2:3] != [0] else ()
    elif re.fullmatch(r"-?\d+", text):
        index = int(text)
        if -len(value) <= index < len(value):
            yield value[index]


def _step(value: Any, step: re.Match[str]) -> Iterator[Any]:
    if step["deep"] is not None:
        yield from _descend(value, step["deep"])
    elif step["field"] is not None:
        name = step["field"].replace("\\.", ".")
        if name == "*":
            yield from _children(value)
        elif isinstance(value, dict) and name in value:
            yield value[name]
    elif step["filter"] is not None:
        yield from (item for item in _children(value) if _kept(item, step["filter"]))
    else:
        yield from _bracket(value, step["bracket"])


def _evaluate(value: Any, steps: list[re.Match[str]]) -> list[Any]:
    values = [value]
    for step in steps:
        values = [found for current in values for found in _step(current, step)]
    return values


def first_value(document: Any, path: str) -> Any:
    """The first value ``path`` finds in ``document``, or a sentinel-free ``None`` if none
    (a JSON ``null`` found is ``None`` too)."""
    found = _evaluate(document, _steps(path))
    return found[0] if found else None


def go_text(value: Any) -> str:
    """``value`` as a string column prints it (jsonpath's ``PrintResults`` of one value)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
