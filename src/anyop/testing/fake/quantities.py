"""Resource quantities (``100m``, ``1.5Gi``, ``1e3``) read and written as apimachinery's
``resource.Quantity`` does.

Pure. A quantity keeps the format of its suffix (decimal SI, binary SI, decimal exponent) and is
written in canonical form: ``0.5`` is ``500m``, ``1000`` is ``1k``, ``1.5Gi`` is ``1536Mi``;
what is smaller than a nano-unit is rounded up to one.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = [
    "QuantityError",
    "canonical_quantity",
    "formatted_quantity",
    "milli_rounded",
    "parsed_quantity",
    "quantity_value",
]

_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_NAMES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_NUMBER = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?")
_SUFFIX = re.compile(r"[eEinumkKMGTP]*[-+]?[0-9]*")
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A text that is not a quantity, with apimachinery's message."""


def _parsed(text: str) -> tuple[Fraction, str]:
    """The value of a quantity and its format: ``decimal``, ``binary`` or ``exponent``."""
    number = _NUMBER.match(text)
    assert number is not None  # every part of the pattern is optional
    sign, whole, fraction = number.groups()
    suffix = text[number.end() :]
    if not _SUFFIX.fullmatch(suffix):
        raise QuantityError(_FORMAT_WRONG)
    value = Fraction(int(whole or "0")) + (
        Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0
    )
    if sign == "-":
        value = -value
    if suffix in _DECIMAL:
        return value * Fraction(10) ** _DECIMAL[suffix], "decimal"
    if suffix in _BINARY:
        return value * 2 ** _BINARY[suffix], "binary"
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            exponent = int(suffix[1:])
        except ValueError:
            raise QuantityError("unable to parse quantity's suffix") from None
        return value * Fraction(10) ** exponent, "exponent"
    raise QuantityError("unable to parse quantity's suffix")


def _rounded_up(value: Fraction) -> Fraction:
    """Below a nano-unit, up (away from zero) to the next nano-unit."""
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    magnitude = -(-abs(scaled.numerator) // scaled.denominator)
    return Fraction(magnitude if value > 0 else -magnitude) * _NANO


def _decimal(value: Fraction, form: str) -> str:
    """``mantissa`` and a suffix for an exponent of 10 that is a multiple of 3."""
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa = value.numerator
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if form == "decimal" and exponent in _DECIMAL_NAMES:
        return f"{mantissa}{_DECIMAL_NAMES[exponent]}"
    return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"


def canonical_quantity(given: object) -> str:
    """A quantity (text, or a JSON number) in canonical form.

    Raises:
        QuantityError: It is not a quantity.
    """
    text = given if isinstance(given, str) else repr(given)
    text = text.strip()
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    if text == "0":
        return "0"
    value, form = _parsed(text)
    return formatted_quantity(_rounded_up(value), form)


def formatted_quantity(value: Fraction, form: str) -> str:
    """A value written as Go writes a quantity of that format (``decimal``, ``binary`` or
    ``exponent``: see :func:`parsed_quantity`)."""
    if value == 0:
        return "0"
    if (form == "binary" and -1024 < value < 1024) or value.denominator != 1:
        form = "decimal" if form == "binary" else form
    if form == "binary":
        magnitude, steps = abs(value.numerator), 0
        while magnitude % 1024 == 0 and steps < len(_BINARY_NAMES) - 1:
            magnitude //= 1024
            steps += 1
        return f"{'-' if value < 0 else ''}{magnitude}{_BINARY_NAMES[steps]}"
    return _decimal(value, form)


def parsed_quantity(given: object) -> tuple[Fraction, str]:
    """A quantity's value (rounded up to a nano-unit as it is kept) and format, as Go's
    arithmetic on quantities keeps them.

    Raises:
        QuantityError: It is not a quantity.
    """
    text = (given if isinstance(given, str) else repr(given)).strip()
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    value, form = _parsed(text)
    return _rounded_up(value), form


def quantity_value(given: object) -> Fraction:
    """A quantity's value, exactly (rounded up to a nano-unit as it is kept).

    Raises:
        QuantityError: It is not a quantity.
    """
    text = (given if isinstance(given, str) else repr(given)).strip()
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    return _rounded_up(_parsed(text)[0])


def milli_rounded(quantity: str) -> str:
    """A canonical quantity rounded up to a milli-unit, as Kubernetes' defaults do to every
    resource list (``1n`` is ``1m``); others as they are."""
    try:
        value = quantity_value(quantity)
    except QuantityError:
        return quantity
    milli = value * 1000
    if milli.denominator == 1:
        return quantity
    up = -(-abs(milli.numerator) // milli.denominator)
    return canonical_quantity(f"{'-' if value < 0 else ''}{up}m")
