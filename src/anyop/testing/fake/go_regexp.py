"""Regular expressions as Go's ``regexp`` reads them (RE2 syntax and semantics), for the
``pattern`` of CRD schemas.

Pure. Go's engine is RE2's design, and so is google-re2 (cel-python's own engine for
``matches()``), which this uses: ``$`` is the end of the text (not before a last line break),
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII's, and there are no lookarounds, backreferences or
possessive repetitions. Errors are worded as Go's ``regexp/syntax`` words them
(``error parsing regexp: invalid or unsupported Perl syntax: `(?=```).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["GoRegexpError", "go_compiled", "go_regexp_error", "go_search"]

_GO_CODES = {
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "trailing \\": "trailing backslash at end of expression",
    "invalid named capture group": "invalid named capture",
    "duplicate capture group name": "duplicate capture group name",
}
"""RE2's words for its errors, as Go's ``regexp/syntax`` has them (the same otherwise)."""


class GoRegexpError(ValueError):
    """The pattern does not compile; its error as Go words it."""


@functools.lru_cache(maxsize=512)
def go_compiled(pattern: str) -> Any:
    """The pattern compiled (an RE2 pattern object: ``search``, ``finditer``...).

    Raises:
        GoRegexpError: Go refuses it (its words).
    """
    import re2  # google-re2 (anyop[test], as cel-python)

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise GoRegexpError(_go_words(pattern, exc)) from None


def _go_words(pattern: str, exc: Exception) -> str:
    raw = exc.args[0] if exc.args else str(exc)
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    code, _, expr = text.partition(": ")
    if code == "invalid perl operator" and expr.startswith("(?<"):
        # Go takes ``(?<`` for a named capture, up to its ``>`` (the rest if there is none).
        start = pattern.find(expr)
        rest = pattern[start:] if start >= 0 else expr
        end = rest.find(">")
        return (
            f"error parsing regexp: invalid named capture: `{rest if end < 0 else rest[: end + 1]}`"
        )
    if code == "trailing \\":
        expr = ""
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{expr}`"


def go_regexp_error(pattern: str) -> str | None:
    """Why Go's ``regexp.Compile`` refuses ``pattern``, in its words (``None``: it compiles)."""
    try:
        go_compiled(pattern)
    except GoRegexpError as exc:
        return str(exc)
    return None


def go_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (one Go compiles: see :func:`go_regexp_error`) matches somewhere in
    ``text``, as Go's ``MatchString``."""
    return go_compiled(pattern).search(text) is not None
