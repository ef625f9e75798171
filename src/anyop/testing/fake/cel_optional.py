"""CEL's optional syntax (``self.?spec.?replicas``, ``list[?0]``, ``map[?key]``, ``[a, ?b]``,
``{?k: v}``) in the form cel-python parses: calls of :data:`SELECT` and :data:`INDEX`.

Pure. cel-python's grammar has no optional syntax; kube-apiserver's CEL enables it. A rule's
text is rewritten before it is parsed: ``x.?f`` becomes ``x.optSelect__("f")`` and ``x[?k]``
becomes ``x.optIndex__(k)``. As in cel-go, every plain selection or index that follows an
optional one in the same chain is optional too (``x.?a.b[0]`` is ``x.?a.?b[?0]``), up to a
function call (``.orValue(1)`` takes the optional). A list or map literal with optional entries
keeps its entries, each ``?`` a space (what is inside keeps its columns), and is given to
:data:`ENTRIES` with the pattern of its entries: ``[a, ?b, c]`` becomes
``[a,  b, c].optEntries__("[-?-]")`` and ``{?k: v, j: w}`` becomes
``{ k: v, j: w}.optEntries__("{?-}")``. String and bytes literals are left as they are; a
message literal's optional fields (``Msg{?f: v}``, which CRD rules cannot use) are not rewritten.

The functions (:func:`select`, :func:`index`) give an optional of the field's or element's
value, or ``optional.none()`` where there is none; on an optional, they select within its
value (none stays none). :func:`entries` builds a literal's list or map: an optional entry's
value, if it has one, else no entry; an optional entry whose value is no optional (the type
checker lets ``dyn`` through) fails as cel-go fails it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from typing import Any

from anyop.testing.fake.cel_values import CelValueError
from anyop.testing.fake.go_json import go_float

__all__ = ["ENTRIES", "INDEX", "SELECT", "desugared", "entries", "index", "select", "source_offset"]

SELECT = "optSelect__"
"""The function ``x.?f`` becomes (a method: ``x.optSelect__("f")``)."""
INDEX = "optIndex__"
"""The function ``x[?k]`` becomes (a method: ``x.optIndex__(k)``)."""
ENTRIES = "optEntries__"
"""The function a literal with optional entries is given to, with their pattern (a method:
``[a,  b].optEntries__("[-?]")``)."""

_QUOTED = re.compile(
    r"'''(?:\\.|[^\\])*?'''"
    r'|"""(?:\\.|[^\\])*?"""'
    r"|'(?:\\.|[^'\\\n])*'"
    r'|"(?:\\.|[^"\\\n])*"',
    re.DOTALL,
)
_RAW = re.compile(r"'''.*?'''" r'|""".*?"""' r"|'[^'\n]*'" r'|"[^"\n]*"', re.DOTALL)
_QUOTE = re.compile(r"['\"]")
_IDENT = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_SPACE = re.compile(r"\s*")
_IN = re.compile(r"(?<![\w.`])in$")
_CLOSER = {"[": "]", "{": "}", "(": ")"}
_Span = tuple[int, int]


def _literals(text: str) -> list[tuple[int, int]]:
    """The spans of the string and bytes literals in a rule's text (with their prefixes: a
    raw one's backslashes escape nothing)."""
    spans: list[tuple[int, int]] = []
    position = 0
    while (quote := _QUOTE.search(text, position)) is not None:
        start = begin = quote.start()
        while start > 0 and begin - start < 2 and text[start - 1] in "rRbB":
            start -= 1
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start = begin  # the letters end an identifier
        raw = "r" in text[start:begin].lower()
        found = (_RAW if raw else _QUOTED).match(text, begin)
        end = found.end() if found is not None else len(text)  # unterminated: the parser's
        spans.append((start, end))
        position = end
    return spans


def desugared(text: str) -> str:
    """The rule's text with its optional syntax as calls (see the module); the text itself
    where it has none."""
    if "?" not in text:
        return text
    spans = _literals(text)
    out: list[str] = []
    position = 0
    chain = False  # an optional selection came before, in this chain of selections
    while position < len(text):
        literal = next((end for start, end in spans if start <= position < end), None)
        if literal is not None:
            out.append(text[position:literal])
            position, chain = literal, False
            continue
        char = text[position]
        if char == "." and _next(text, position + 1) == "?":
            name = _IDENT.match(text, _skip(text, _skip(text, position + 1) + 1))
            if name is not None:
                out.append(f'.{SELECT}("{name.group(0)}")')
                position, chain = name.end(), True
                continue
        if char == "[" and _after_operand(out) and _next(text, position + 1) == "?":
            close = _closing(text, position, spans)
            if close is not None:
                inner = text[_skip(text, position + 1) + 1 : close]
                out.append(f".{INDEX}({desugared(inner)})")
                position, chain = close + 1, True
                continue
        if char in "[{" and not _after_operand(out):
            close = _closing(text, position, spans)
            rewritten = None if close is None else _with_entries(text, position, close, spans)
            if close is not None and rewritten is not None:
                out.append(rewritten)
                position, chain = close + 1, False
                continue
        if chain and char == ".":
            name = _IDENT.match(text, _skip(text, position + 1))
            if name is not None and _next(text, name.end()) != "(":
                out.append(f'.{SELECT}("{name.group(0)}")')  # optional too, after one
                position = name.end()
                continue
        if chain and char == "[":
            close = _closing(text, position, spans)
            if close is not None:
                out.append(f".{INDEX}({desugared(text[position + 1 : close])})")
                position = close + 1
                continue
        if chain and not (char.isspace() and _next(text, position) in (".", "[")):
            chain = False  # a call (``.orValue(...)``), an operator...: the chain ends
        out.append(char)
        position += 1
    return "".join(out)


def source_offset(text: str, offset: int) -> int:
    """Where in a rule's ``text`` the ``offset`` of its :func:`desugared` text is: the same
    character where the rewriting kept it, else the start of what it rewrote (the ``.`` of an
    optional selection, the ``[`` of an optional index)."""
    rewritten = desugared(text)
    if rewritten == text:
        return offset
    matcher = difflib.SequenceMatcher(None, rewritten, text, autojunk=False)
    found = 0
    for at, source, size in matcher.get_matching_blocks():
        if offset < at:
            return found
        if offset < at + size:
            return source + offset - at
        found = source + size
    return len(text)


def _with_entries(text: str, opening: int, close: int, spans: list[_Span]) -> str | None:
    """The list or map literal from ``opening`` to ``close`` (its brackets) given to
    :data:`ENTRIES` with the pattern of its entries, each optional one's ``?`` a space and each
    entry desugared; ``None`` where no entry is optional (the literal is scanned as any text)."""
    parts = _entries(text, opening + 1, close, spans)
    trailing = len(parts) > 1 and not text[parts[-1][0] : parts[-1][1]].strip()
    listed = parts[:-1] if trailing else parts
    marks = [_next(text, start) == "?" for start, _ in listed]
    if not any(marks):
        return None
    written: list[str] = []
    for (start, end), optional in zip(listed, marks, strict=True):
        entry = text[start:end]
        if optional:
            at = _skip(entry, 0)
            entry = f"{entry[:at]} {entry[at + 1 :]}"
        written.append(desugared(entry))
    body = ",".join(written)
    if trailing:  # a trailing comma: cel-python's grammar has none, a space stands for it
        body += " " + text[parts[-1][0] : parts[-1][1]]
    pattern = "".join("?" if optional else "-" for optional in marks)
    first, last = text[opening], text[close]
    return f'{first}{body}{last}.{ENTRIES}("{first}{pattern}{last}")'


def _entries(text: str, start: int, end: int, spans: list[_Span]) -> list[_Span]:
    """The spans of the entries between ``start`` and ``end``: the text between the commas
    outside brackets and literals."""
    parts: list[_Span] = []
    depth = 0
    begin = start
    for position, char in _scanned(text, start, end, spans):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append((begin, position))
            begin = position + 1
    if begin < end or parts:
        parts.append((begin, end))
    return parts


def _scanned(text: str, start: int, end: int, spans: list[_Span]) -> Iterator[tuple[int, str]]:
    """The positions and characters of the text from ``start`` to ``end`` outside its string
    and bytes literals (``spans``)."""
    position = start
    while position < end:
        inside = next((stop for first, stop in spans if first <= position < stop), None)
        if inside is not None:
            position = inside
            continue
        yield position, text[position]
        position += 1


def _skip(text: str, position: int) -> int:
    """The first position at or after ``position`` that is no white space."""
    found = _SPACE.match(text, position)
    return found.end() if found is not None else position


def _next(text: str, position: int) -> str:
    """The first character at or after ``position`` that is no white space (``""``: none)."""
    end = _skip(text, position)
    return text[end] if end < len(text) else ""


def _after_operand(out: list[str]) -> bool:
    """Whether what was written so far ends with an operand (a ``[`` there indexes it, where
    after an operator, a comma, an opening bracket or ``in`` it opens a list)."""
    written = "".join(out[-16:]).rstrip()
    if _IN.search(written):
        return False
    return bool(written) and (written[-1].isalnum() or written[-1] in "_)]}\"'")


def _closing(text: str, opening: int, spans: list[tuple[int, int]]) -> int | None:
    """The position of the ``]`` or ``}`` that closes the ``[`` or ``{`` at ``opening``
    (``None``: none)."""
    depth = 0
    for position, char in _scanned(text, opening, len(text), spans):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return position if char == _CLOSER.get(text[opening]) else None
    return None


def select(target: Any, name: Any, *, optional: Any, none: Callable[[], Any]) -> Any:
    """``target.?name``: an optional of the field's value, or none."""
    if isinstance(target, optional):
        if not target.present:
            return target
        target = target.value
    if hasattr(target, "keys") and str(name) in target:
        return optional(target[str(name)], True)
    return none()


def index(target: Any, key: Any, *, optional: Any, none: Callable[[], Any]) -> Any:
    """``target[?key]``: an optional of the element's (or map entry's) value, or none."""
    if isinstance(target, optional):
        if not target.present:
            return target
        target = target.value
    if isinstance(target, list):
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(target):
            return optional(target[key], True)
        return none()
    if hasattr(target, "keys") and key in target:
        return optional(target[key], True)
    return none()


def entries(target: Any, pattern: str, *, optional: Any) -> Any:
    """The list or map literal ``target`` holds the entries of, as ``pattern`` marks them
    (``?``: optional, ``-``: plain; a list's ``[...]``, a map's ``{...}``): an optional
    entry's value, if it has one, else no entry. An optional entry whose value is no optional
    fails with cel-go's error."""
    marks = pattern[1:-1]
    if pattern[0] == "[":
        listed = []
        for value, mark in zip(target, marks, strict=True):
            if mark == "?":
                if not isinstance(value, optional):
                    raise CelValueError("cannot initialize optional list element from "
                                        f"non-optional value {_go_value(value)}")  # fmt: skip
                if not value.present:
                    continue
                value = value.value
            listed.append(value)
        return type(target)(listed)
    built: dict[Any, Any] = {}
    for (key, value), mark in zip(target.items(), marks, strict=True):
        if mark == "?":
            if not isinstance(value, optional):
                raise CelValueError(f"cannot initialize optional entry '{_go_value(key)}' "
                                    f"from non-optional value {_go_value(value)}")  # fmt: skip
            if not value.present:
                built.pop(key, None)
                continue
            value = value.value
        built[key] = value
    return type(target)(built)


def _go_value(value: Any) -> str:
    """A scalar as Go's ``%v`` prints cel-go's value of it (other values: Python's text)."""
    if value is None:
        return "NULL_VALUE"
    if isinstance(value, bool) or type(value).__name__ == "BoolType":
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, bytes):
        return "[" + " ".join(str(byte) for byte in value) + "]"
    return str(value)
