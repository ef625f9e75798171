"""Timestamps parsed as kube-apiserver parses them (Go's ``time.Parse``), with its error texts.

Pure. ``metav1.Time`` takes RFC 3339 (a fraction of a second optional), ``metav1.MicroTime``
exactly six digits of fraction; a refused value is reported as Go reports it, e.g.
``parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"``.
"""

from __future__ import annotations

import calendar
import functools
import json

__all__ = ["RFC3339", "RFC3339_MICRO", "time_error"]

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
# (literal prefix, element) pairs of each layout, as Go's parser walks them.
_STEPS: dict[str, tuple[tuple[str, str], ...]] = {
    RFC3339: (
        ("", "2006"),
        ("-", "01"),
        ("-", "02"),
        ("T", "15"),
        (":", "04"),
        (":", "05"),
        ("", "Z07:00"),
    ),
    RFC3339_MICRO: (
        ("", "2006"),
        ("-", "01"),
        ("-", "02"),
        ("T", "15"),
        (":", "04"),
        (":", "05"),
        ("", ".000000"),
        ("", "Z07:00"),
    ),
}
_RANGES = {
    "01": ("month", 1, 12),
    "15": ("hour", 0, 23),
    "04": ("minute", 0, 59),
    "05": ("second", 0, 59),
}


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Bad(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _number(value: str, *, fixed: bool) -> tuple[int, str] | None:
    if not value[:1].isdigit():
        return None
    if not value[1:2].isdigit():
        return None if fixed else (int(value[0]), value[1:])
    return int(value[:2]), value[2:]


def _element(element: str, value: str, *, fraction_next: bool) -> tuple[int | None, str] | None:
    """Parse one layout element off ``value``: (its number, the rest), or ``None`` if bad."""
    if element == "2006":
        head = value[:4]
        if len(head) < 4 or not head.lstrip("+-").isdigit():
            return None
        return int(head), value[4:]
    if element == ".000000":
        if len(value) < 7 or value[0] not in ".," or not value[1:7].isdigit():
            return None
        return None, value[7:]
    if element == "Z07:00":
        if value.startswith("Z"):
            return None, value[1:]
        zone = value[:6]
        ok = len(zone) == 6 and zone[0] in "+-" and zone[3] == ":"
        return (None, value[6:]) if ok and (zone[1:3] + zone[4:6]).isdigit() else None
    parsed = _number(value, fixed=element != "15")
    if parsed is None:
        return None
    number, rest = parsed
    if element == "05" and not fraction_next and rest[:1] in (".", ",") and rest[1:2].isdigit():
        digits = 1
        while rest[1 + digits : 2 + digits].isdigit():
            digits += 1
        rest = rest[1 + digits :]
    return number, rest


def _walk(layout: str, text: str) -> None:
    value = text
    numbers: dict[str, int] = {}
    steps = _STEPS[layout]
    for index, (prefix, element) in enumerate(steps):
        if not value.startswith(prefix):
            raise _Bad(f"cannot parse {_quote(value)} as {_quote(prefix)}")
        value = value[len(prefix) :]
        fraction_next = index + 1 < len(steps) and steps[index + 1][1] == ".000000"
        parsed = _element(element, value, fraction_next=fraction_next)
        if parsed is None:
            raise _Bad(f"cannot parse {_quote(value)} as {_quote(element)}")
        number, value = parsed
        if number is not None:
            numbers[element] = number
            if element in _RANGES:
                what, low, high = _RANGES[element]
                if not low <= number <= high:
                    raise _Bad(f"\0{what} out of range")
    if value:
        raise _Bad(f"\0extra text: {_quote(value)}")
    year, month, day = numbers["2006"], numbers["01"], numbers["02"]
    if not 1 <= day <= calendar.monthrange(year if year > 0 else 2000, month)[1]:
        raise _Bad("\0day out of range")


@functools.lru_cache(maxsize=4096)
def time_error(layout: str, text: str) -> str | None:
    """Go's error for parsing ``text`` with ``layout`` (:data:`RFC3339` or
    :data:`RFC3339_MICRO`), or ``None`` if it parses (remembered: an object's times come back
    with every write of it)."""
    try:
        _walk(layout, text)
    except _Bad as exc:
        if exc.message.startswith("\0"):
            return f"parsing time {_quote(text)}: {exc.message[1:]}"
        return f"parsing time {_quote(text)} as {_quote(layout)}: {exc.message}"
    return None
