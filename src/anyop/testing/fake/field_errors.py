"""apimachinery's field errors (``field.Required``, ``field.Forbidden``, ``field.Duplicate``,
``field.TooLong``) as the causes of a 422, and ``IsValidPathSegmentName``: shared by the kinds'
rules modules.

Pure.
"""

from __future__ import annotations

from anyop.testing.fake.go_json import go_quoted

__all__ = ["duplicate", "forbidden", "path_segment_errors", "required_because", "too_long"]

Cause = dict[str, str]


def forbidden(field: str, detail: str) -> tuple[str, Cause]:
    """``field.Forbidden``."""
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}


def required_because(field: str, detail: str = "") -> tuple[str, Cause]:
    """``field.Required``, with its detail if any."""
    message = f"Required value: {detail}" if detail else "Required value"
    return field, {"reason": "FieldValueRequired", "message": message}


def duplicate(field: str, value: str) -> tuple[str, Cause]:
    """``field.Duplicate`` of a string."""
    message = f"Duplicate value: {go_quoted(value)}"
    return field, {"reason": "FieldValueDuplicate", "message": message}


def too_long(field: str, limit: int) -> tuple[str, Cause]:
    """``field.TooLong`` (in bytes)."""
    message = f"Too long: may not be more than {limit} bytes"
    return field, {"reason": "FieldValueTooLong", "message": message}


def path_segment_errors(name: str) -> list[str]:
    """``IsValidPathSegmentName``: what a name that is a path segment may not be."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in name]
