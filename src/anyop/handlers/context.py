"""Ambient facts of the handler that runs now, for helpers it calls (``adopt``)."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

__all__ = ["current_body"]

current_body: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "anyop_current_body", default=None
)
"""The body of the object whose handler runs now (the default owner in ``anyop.adopt``)."""
