"""CEL's optional selection (``self.?spec.?replicas``, ``list[?0]``, ``map[?key]``) in the form
cel-python parses: calls of :data:`SELECT` and :data:`INDEX` on the operand.

Pure. cel-python's grammar has no optional syntax; kube-apiserver's CEL enables it. A rule's
text is rewritten before it is parsed: ``x.?f`` becomes ``x.optSelect__("f")`` and ``x[?k]``
becomes ``x.optIndex__(k)``. As in cel-go, every plain selection or index that follows an
optional one in the same chain is optional too (``x.?a.b[0]`` is ``x.?a.?b[?0]``), up to a
function call (``.orValue(1)`` takes the optional). String and bytes literals are left as they
are. Optional entries of list and map literals (``[?a]``, ``{?k: v}``) are not rewritten.

The functions (:func:`select`, :func:`index`) give an optional of the field's or element's
value, or ``optional.none()`` where there is none; on an optional, they select within its
value (none stays none).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["INDEX", "SELECT", "desugared"]

SELECT = "optSelect__"
"""The function ``x.?f`` becomes (a method: ``x.optSelect__("f")``)."""
INDEX = "optIndex__"
"""The function ``x[?k]`` becomes (a method: ``x.optIndex__(k)``)."""

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
    """The rule's text with its optional selections as calls (see the module); the text
    itself where it has none."""
    if ".?" not in text and "[?" not in text:
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
    after an operator or an opening bracket it opens a list)."""
    written = "".join(out[-8:]).rstrip()
    return bool(written) and (written[-1].isalnum() or written[-1] in "_)]\"'")


def _closing(text: str, opening: int, spans: list[tuple[int, int]]) -> int | None:
    """The position of the ``]`` that closes the ``[`` at ``opening`` (``None``: none)."""
    depth = 0
    position = opening
    while position < len(text):
        inside = next((end for start, end in spans if start <= position < end), None)
        if inside is not None:
            position = inside
            continue
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return position if char == "]" else None
        position += 1
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
