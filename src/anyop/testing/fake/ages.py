"""Ages of timestamps as kube-apiserver writes them in Tables (``duration.HumanDuration``).

Pure. An age is counted from a timestamp to the server's "now" (the fake's own clock, given).
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from anyop.testing.fake.go_times import RFC3339, time_error
from anyop.testing.fake.printers import Age

__all__ = ["ager", "human_duration", "parsed_time"]


def human_duration(seconds: float) -> str:
    """An age as kube-apiserver writes it (``duration.HumanDuration``): ``42s``, ``3m5s``,
    ``5h10m``, ``3d4h``, ``400d``, ``2y10d``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return f"{minutes}m{whole % 60}s" if whole % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years, rest = days // 365, days % 365
    if hours < 24 * 365 * 8:
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


_PLAIN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$")  # as servers write them


def parsed_time(text: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp; ``None`` if unset, ``ValueError`` if unreadable."""
    if not text or text == "null":
        return None
    if not isinstance(text, str):
        raise ValueError(text)
    if not _PLAIN.match(text) and time_error(RFC3339, text) is not None:
        raise ValueError(text)
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return None if moment.year == 1 else moment


def ager(now: str) -> Age:
    """The ages of timestamps at ``now`` (RFC 3339): ``<unknown>`` for none, ``<invalid>`` for
    an unreadable one or one more than a second ahead."""
    current = parsed_time(now)
    assert current is not None

    def age(timestamp: Any) -> str:
        try:
            moment = parsed_time(timestamp)
        except ValueError:
            return "<invalid>"
        if moment is None:
            return "<unknown>"
        return human_duration((current - moment).total_seconds())

    return age
