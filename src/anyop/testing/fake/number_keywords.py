"""``multipleOf``, ``minimum`` and ``maximum`` as kube-openapi's ``numberValidator`` checks them,
quirks included: a bound that fits the schema's type and format is compared in the value's own
Go type, so against an integer value (``int64``) it is truncated to an integer first (an
integer against ``multipleOf: 0.5`` is refused: ``factor MultipleOf declared for <path> must be
positive: 0``); one that does not fit is reported (without a field) and compared as a float.

Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_float
from anyop.testing.fake.statuses import Cause

__all__ = ["number_causes"]

_LIMITS = {"int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1)}
_MAX_JSON = 2.0**53
_EPSILON = 1e-9


def number_causes(
    value: float, schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    """The errors of a number's ``multipleOf``, ``minimum`` and ``maximum``, in kube-openapi's
    order (multiple, minimum, maximum)."""
    integral = isinstance(value, int)
    for keyword, prefix in (("multipleOf", "MultipleOf"), ("minimum", "Minimum boundary"),
                            ("maximum", "Maximum boundary")):  # fmt: skip
        bound = schema.get(keyword)
        if bound is None or isinstance(bound, bool) or not isinstance(bound, (int, float)):
            continue
        fits = _fits(float(bound), schema)
        if not fits:
            detail = _range_error(prefix, schema, path)
            yield (
                "<nil>",
                {"reason": "FieldValueInvalid", "message": f'Invalid value: "": {detail}'},
            )
        native: float = math.trunc(bound) if fits and integral else float(bound)
        data: float = value if fits and integral else float(value)
        if keyword == "multipleOf":
            yield from _multiple(data, native, path, integral and fits)
        elif keyword == "minimum":
            exclusive = bool(schema.get("exclusiveMinimum"))
            if (data < native) if not exclusive else (data <= native):
                word = "greater than" if exclusive else "greater than or equal to"
                yield _invalid(path, value, f"{path} in body should be {word} {_shown(native)}")
        else:
            exclusive = bool(schema.get("exclusiveMaximum"))
            if (data > native) if not exclusive else (data >= native):
                word = "less than" if exclusive else "less than or equal to"
                yield _invalid(path, value, f"{path} in body should be {word} {_shown(native)}")


def _multiple(data: float, factor: float, path: str, integers: bool) -> Iterator[tuple[str, Cause]]:
    if factor <= 0:
        detail = f"factor MultipleOf declared for {path} must be positive: {_shown(factor)}"
        yield _invalid(path, factor, detail)
        return
    if integers:
        quotient = abs(int(data)) // int(factor) * (1 if data >= 0 else -1)  # Go's int64 `/`
        if quotient * int(factor) != data:
            yield _invalid(path, data, f"{path} in body should be a multiple of {_shown(factor)}")
        return
    mult = 1 / factor * data if factor < 1 else data / factor
    if not _json_integer(mult):
        yield _invalid(path, data, f"{path} in body should be a multiple of {_shown(factor)}")


def _json_integer(number: float) -> bool:
    """swag's ``IsFloat64AJSONInteger``."""
    if math.isnan(number) or math.isinf(number) or abs(number) > _MAX_JSON:
        return False
    whole = float(math.trunc(number))
    if number == whole:
        return True
    difference = abs(number - whole)
    if whole == 0:
        return difference < _EPSILON * 5e-324
    return difference / (abs(number) + abs(whole)) < _EPSILON


def _fits(bound: float, schema: Mapping[str, Any]) -> bool:
    """``IsValueValidAgainstRange``: the bound, printed, parses as the schema's integer type."""
    if schema.get("type") != "integer":
        return True
    if not bound.is_integer():
        return False
    low, high = _LIMITS.get(str(schema.get("format") or ""), (-(2**63), 2**63 - 1))
    return low <= bound <= high


def _range_error(prefix: str, schema: Mapping[str, Any], path: str) -> str:
    format_ = schema.get("format") or ""
    kind = schema.get("type")
    if format_ in _LIMITS or format_ == "int64":
        return f"{prefix} value must be of type {kind} with format {format_} in {path}"
    return f"{prefix} value must be of type {kind} (default format) in {path}"


def _shown(number: float) -> str:
    if isinstance(number, int):
        return str(number)
    return go_float(number)


def _invalid(path: str, value: float, detail: str) -> tuple[str, Cause]:
    return path, {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {_shown(value)}: {detail}",
    }
