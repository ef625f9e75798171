"""Compact JSON text, as anyop writes it to the API (request bodies, stored state)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact"]

_COMPACT = json.JSONEncoder(separators=(",", ":"))
"""One encoder for all: ``json.dumps`` with any non-default option builds a new one per call."""


def compact(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))``, without making an encoder each time.

    Raises:
        TypeError: For a value that JSON cannot express (as ``json.dumps``).
    """
    return _COMPACT.encode(value)
