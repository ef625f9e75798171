"""JSON decoding errors worded as Go's ``encoding/json`` words them (the API server's texts).

Pure. :func:`loads` decodes like :func:`json.loads` but raises :class:`GoJSONError` with Go's
message: ``invalid character 'x' looking for beginning of value``, ``unexpected end of JSON
input``, ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = [
    "GoJSONError",
    "NotJSON",
    "go_float",
    "go_printed",
    "go_quoted",
    "go_syntax",
    "go_value_type",
    "loads",
    "refuse_constant",
    "surrogates_replaced",
    "unmarshal_type_error",
    "unstructured_numbers",
]


class GoJSONError(ValueError):
    """A document Go's decoder refuses; the message is Go's."""


def _character(text: str, position: int) -> str:
    """The character at ``position`` as Go's JSON errors quote it: its first byte (Go reads
    bytes: an invalid one, decoded here as a surrogate escape, or a UTF-8 sequence's first)."""
    char = text[position]
    if 0xDC80 <= ord(char) <= 0xDCFF:
        byte = ord(char) - 0xDC00
    else:
        byte = char.encode("utf-8", "surrogatepass")[0]
    if byte == ord("'"):
        return "'\\''"
    if byte == ord('"'):
        return "'\"'"
    return "'" + go_quoted(chr(byte))[1:-1] + "'"


def _go_message(text: str, error: json.JSONDecodeError) -> str:
    position = error.pos
    if not text.strip() or position >= len(text):
        return "unexpected end of JSON input"
    char = _character(text, position)
    literal = _in_literal(text, position) if error.msg.startswith("Expecting value") else None
    if literal is not None:  # (a literal begins only where a value does)
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
    # Go reads bytes: each invalid one is U+FFFD in a string (kept as a surrogate escape here
    # until the document is read, for the errors' positions).
    text = document.decode("utf-8", "surrogateescape") if isinstance(document, bytes) else document
    try:
        decoded = _DECODER.decode(text)
        if isinstance(document, bytes) and _SURROGATES.search(text):
            return _replaced(decoded)
        return surrogates_replaced(text, decoded)
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


_INT64 = 2**63
_FIXED = 1e21
"""Go writes a float64 below this in fixed notation: an integral one reads back as an integer."""


def unstructured_numbers(value: Any) -> Any:
    """A document's numbers as kube-apiserver gives them back from an unstructured object (a
    custom resource's): an integer literal that fits 64 bits stays an integer, every other
    number is a float64, and a float64 that is integral below 10^21 is written, so read back,
    as an integer (``2.0`` and ``1e3`` come back as ``2`` and ``1000``,
    123456789012345678901234567890 as ``1.2345678901234568e+29``).

    The same object where no number changes; else a copy of the parts that do.
    """
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() and abs(value) < _FIXED else value
    if kind is int:
        return value if -_INT64 <= value < _INT64 else unstructured_numbers(float(value))
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            new = unstructured_numbers(item)
            if new is not item:
                changed = dict(value) if changed is None else changed
                changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        items = [unstructured_numbers(item) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value


def go_float(number: float) -> str:
    """Go's ``%v`` of a float64 (strconv's shortest ``g``: exponent below -4 or from 6 up)."""
    if number != number or number in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(number)]
    sign, digits, exponent = Decimal(repr(float(number))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    power = len(text) + exponent - 1
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return format(Decimal(repr(float(number))).normalize(), "f")


def go_printed(value: Any) -> str:
    """A value decoded from JSON into Go's ``interface {}`` (numbers are float64), as ``%v``
    prints it: ``map[a:1 b:[x y]]``, maps with sorted keys."""
    match value:
        case Mapping():
            return "map[" + " ".join(f"{k}:{go_printed(value[k])}" for k in sorted(value)) + "]"
        case list() | tuple():
            return "[" + " ".join(go_printed(item) for item in value) + "]"
        case None:
            return "<nil>"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return go_float(value)
    return str(value)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def surrogates_replaced(text: str | bytes, document: Any) -> Any:
    """``document``, decoded from ``text``, with each UTF-16 surrogate that its escapes left
    alone (``"\\ud800"``, not one of a pair) replaced by U+FFFD, as Go's decoder replaces it.

    Walked only when ``text`` has such an escape; the same object where nothing changes.
    """
    source = text.decode("latin-1") if isinstance(text, bytes) else text
    if not _SURROGATE_ESCAPE.search(source):
        return document
    return _replaced(document)


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replaced(key): _replaced(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item) for item in value]
    return value


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v", "\\": "\\\\", '"': '\\"'}  # fmt: skip


def go_marshalled(value: Any, *, sort_keys: bool = True) -> str:
    """A value as Go's ``json.Marshal`` writes it (what field errors show of typed values):
    compact, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped; a map's keys sorted, a struct's
    (``sort_keys=False``) in the order given."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def go_quoted(text: str) -> str:
    """A string as Go's ``%q`` (``strconv.Quote``) writes it, which field errors show: printable
    characters as they are, in any script; the others escaped (``\\n``, ``\\x00``, ``\\u2028``)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    parts = []
    for char in text:
        if char in _ESCAPES:
            parts.append(_ESCAPES[char])
        elif char.isprintable():
            parts.append(char)
        elif ord(char) < 0x80:
            parts.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(f"\\U{ord(char):08x}")
    return '"' + "".join(parts) + '"'


def go_syntax(value: Any, *, map_type: str = "map[string]interface {}") -> str:
    """A value decoded from JSON into Go's ``interface {}`` as ``%#v`` prints it:
    ``map[string]interface {}{"a":1, "b":[]interface {}{true}}`` (maps with sorted keys)."""
    if isinstance(value, str):
        return go_quoted(value)
    if isinstance(value, Mapping):
        items = ", ".join(
            f"{go_syntax(key, map_type=map_type)}:{go_syntax(value[key], map_type=map_type)}"
            for key in sorted(value, key=str)
        )
        return f"{map_type}{{{items}}}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(go_syntax(item, map_type=map_type) for item in value)
        return f"[]interface {{}}{{{inner}}}"
    if value is None:
        return "interface {}(nil)"
    return go_printed(value)


_GO_TYPES = {str: "string", bool: "bool", int: "int64", float: "float64", list: "[]interface {}"}


def go_value_type(value: Any) -> str:
    """The Go type (``%T``) of a value decoded into ``interface {}`` as kube-apiserver's
    unstructured objects hold it (a map's is ``map[string]interface {}``)."""
    return _GO_TYPES.get(type(value), "map[string]interface {}")
