"""JSON decoding errors worded as Go's ``encoding/json`` words them (the API server's texts).

Pure. :func:`loads` decodes like :func:`json.loads` but raises :class:`GoJSONError` with Go's
message: ``invalid character 'x' looking for beginning of value``, ``unexpected end of JSON
input``, ...
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["GoJSONError", "NotJSON", "loads", "refuse_constant", "unmarshal_type_error"]


class GoJSONError(ValueError):
    """A document Go's decoder refuses; the message is Go's."""


def _character(text: str, position: int) -> str:
    char = text[position]
    if char == "'":
        return "'\\''"
    if char == "\n":
        return "'\\n'"
    return f"'{char}'"


def _go_message(text: str, error: json.JSONDecodeError) -> str:
    position = error.pos
    if not text.strip() or position >= len(text):
        return "unexpected end of JSON input"
    char = _character(text, position)
    literal = _in_literal(text, position)
    if literal is not None:
        return literal
    if error.msg.startswith("Extra data"):
        return f"invalid character {char} after top-level value"
    if error.msg.startswith("Expecting property name"):
        return f"invalid character {char} looking for beginning of object key string"
    if error.msg.startswith("Expecting ':'"):
        return f"invalid character {char} after object key"
    if error.msg.startswith("Expecting ','"):
        opener = _innermost(text, position)
        where = "object key:value pair" if opener == "{" else "array element"
        return f"invalid character {char} after {where}"
    return f"invalid character {char} looking for beginning of value"


def _in_literal(text: str, position: int) -> str | None:
    """Go's error inside ``null``, ``true`` or ``false`` that goes wrong after its first letter."""
    for word in ("null", "true", "false"):
        if text[position] != word[0]:
            continue
        for index, expected in enumerate(word[1:], start=1):
            got = text[position + index : position + index + 1]
            if not got:
                return "unexpected end of JSON input"
            if got != expected:
                return (
                    f"invalid character {_character(text, position + index)} in literal {word} "
                    f"(expecting '{expected}')"
                )
    return None


def _innermost(text: str, position: int) -> str:
    stack: list[str] = []
    in_string = escaped = False
    for char in text[:position]:
        if in_string:
            escaped = not escaped and char == "\\"
            in_string = escaped or char != '"'
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


class NotJSON(ValueError):
    """A document has ``NaN``, ``Infinity`` or ``-Infinity``: Python's decoder takes them,
    JSON (and Go's decoder) does not."""


def refuse_constant(name: str) -> Any:
    """The ``parse_constant`` of the fake's JSON decoders: each such word refused.

    Raises:
        NotJSON: Always.
    """
    raise NotJSON(name)


_DECODER = json.JSONDecoder(parse_constant=refuse_constant)


def loads(document: bytes | str) -> Any:
    """Decode JSON, as Go does: not the ``NaN``, ``Infinity`` and ``-Infinity`` that Python's
    decoder takes.

    Raises:
        GoJSONError: It is not JSON; the message is Go's.
    """
    text = document.decode(errors="replace") if isinstance(document, bytes) else document
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise GoJSONError(_go_message(text, exc)) from None
    except NotJSON as exc:
        # Go reads "-" as a number's sign and stops at the letter after it.
        where = "in numeric literal" if exc.args[0][0] == "-" else "looking for beginning of value"
        raise GoJSONError(f"invalid character '{exc.args[0].lstrip('-')[0]}' {where}") from None


def unmarshal_type_error(value: Any, go_type: str) -> str:
    """Go's error for a JSON value of the wrong type for a whole document, e.g. an array
    where a ``map[string]interface {}`` is expected."""
    names = {
        bool: "bool",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return (
        f"json: cannot unmarshal {names.get(type(value), 'object')} into Go value of type {go_type}"
    )
