"""``"...".format([args])``: cel-go's string formatting (ext.Strings version 2, locale en_US).

Clauses ``%s %d %f %e %b %x %X %o`` (with a precision, ``%.2f``) and ``%%``; a value the clause
does not take fails with cel-go's message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from celpy import celtypes

from anyop.testing.fake.cel_values import CelValueError
from anyop.testing.fake.go_json import go_float

__all__ = ["string_format"]


def _type_name(value: Any) -> str:
    if isinstance(value, (bool, celtypes.BoolType)):
        return "bool"
    kinds = ((celtypes.UintType, "uint"), (int, "int"), (float, "double"), (str, "string"),
             (bytes, "bytes"), (list, "list"), (Mapping, "map"))  # fmt: skip
    for kind, name in kinds:
        if isinstance(value, kind):
            return name
    if value is None:
        return "null_type"
    return type(value).__name__


def _as_string(value: Any, nested: bool = False) -> str:
    kind = _type_name(value)
    if kind == "list":
        return "[" + ", ".join(_as_string(item, True) for item in value) + "]"
    if kind == "map":
        pairs = sorted((_as_string(k, True), _as_string(v, True)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if kind == "bool":
        return "true" if value else "false"
    if kind == "null_type":
        return "null"
    if kind == "double":
        text = f"{value:.6f}" if nested else go_float(value)
        return f'"{text}"' if nested and not math.isfinite(value) else text
    if kind in ("int", "uint"):
        return str(int(value))
    if kind == "string":
        return _go_quote(value) if nested else str(value)
    if kind == "bytes":
        text = bytes(value).decode(errors="replace")
        return "b" + _go_quote(text) if nested else text
    raise CelValueError(
        "error during formatting: string clause can only be used on strings, bools, bytes, "
        f"ints, doubles, maps, lists, types, durations, and timestamps, was given {kind}"
    )


def _go_quote(text: str) -> str:
    from anyop.testing.fake.go_json import go_quoted

    return go_quoted(text)


_SUPERSCRIPT = str.maketrans(
    "0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b"
)


def _scientific(number: float) -> str:
    """``%e`` as golang.org/x/text prints it for en_US: ``1.234500`` then a multiplication
    sign, ``10`` and the exponent in superscript digits (six places: cel-go passes the
    precision as a width)."""
    mantissa, _, exponent = f"{number:.6e}".partition("e")
    power = int(exponent)
    shown = ("-" if power < 0 else "") + f"{abs(power):02d}"
    return f"{mantissa}\u00d710{shown.translate(_SUPERSCRIPT)}"


def _clause(verb: str, precision: int | None, value: Any) -> str:
    kind = _type_name(value)

    def refuse(message: str) -> CelValueError:
        return CelValueError(f"error during formatting: {message}, was given {kind}")

    if verb == "s":
        return _as_string(value)
    if verb == "d":
        if kind not in ("int", "uint"):
            raise refuse("decimal clause can only be used on integers")
        return str(int(value))
    if verb in "fe":
        special = kind == "string" and value in ("NaN", "Infinity", "-Infinity")
        if kind != "double" and not special:
            what = "fixed-point" if verb == "f" else "scientific"
            raise refuse(f"{what} clause can only be used on doubles")
        number = float(value.replace("Infinity", "inf")) if special else float(value)
        if not math.isfinite(number):
            return "NaN" if math.isnan(number) else ("+Inf" if number > 0 else "-Inf")
        places = 6 if precision is None else precision
        return f"{number:,.{places}f}" if verb == "f" else _scientific(number)
    if verb == "b":
        if kind == "bool":
            return "1" if value else "0"
        if kind not in ("int", "uint"):
            raise refuse("only integers and bools can be formatted as binary")
        return format(int(value), "b")
    if verb in "xX":
        if kind in ("string", "bytes"):
            raw = value.encode() if kind == "string" else bytes(value)
            text = raw.hex()
        elif kind in ("int", "uint"):
            text = format(int(value), "x")
        else:
            raise refuse("only integers, byte buffers, and strings can be formatted as hex")
        return text.upper() if verb == "X" else text
    if kind not in ("int", "uint"):
        raise refuse("octal clause can only be used on integers")
    return format(int(value), "o")


def string_format(text: str, args: list[Any]) -> str:
    """``text.format(args)``.

    Raises:
        CelValueError: cel-go's message for a clause or an argument it refuses.
    """
    out: list[str] = []
    i, index = 0, 0
    while i < len(text):
        if text[i] != "%":
            out.append(text[i])
            i += 1
            continue
        if text[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
            continue
        if index >= len(args):
            raise CelValueError(f"index {index} out of range")
        if i + 1 >= len(text):
            raise CelValueError("unexpected end of string")
        j, precision = i + 1, None
        if text[j] == ".":
            k = j + 1
            while k < len(text) and text[k].isascii() and text[k].isdigit():
                k += 1
            if k >= len(text):
                raise CelValueError(
                    "could not parse formatting clause: error while parsing precision: could "
                    "not find end of precision specifier"
                )
            if k == j + 1:
                raise CelValueError("could not parse formatting clause: error while parsing "
                                    'precision: error while converting precision to integer: '
                                    'strconv.Atoi: parsing "": invalid syntax')  # fmt: skip
            precision, j = int(text[j + 1 : k]), k
        verb = text[j]
        if verb not in "sdfebxXo":
            raise CelValueError(
                f'could not parse formatting clause: unrecognized formatting clause "{verb}"'
            )
        out.append(_clause(verb, precision, args[index]))
        index += 1
        i = j + 1
    return "".join(out)
