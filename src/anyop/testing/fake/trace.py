"""The trace of a fake cluster: every request, every change and every fault, in order, and a hash.

Pure. Two runs of the same test on the same seed give the same trace (so the same
:meth:`Trace.digest`); a different seed with faults gives another one. What a trace leaves out on
purpose: timestamps (real time is not repeatable unless the clock is fake) and bodies other than
the changed objects' contents (their digests stand for them).

Bounded: it keeps the latest lines only (``limit``), while its digest covers every line since
the start, so that a long test does not hold every request it ever made.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Mapping
from typing import Any

__all__ = ["Trace"]


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Trace:
    """Lines of what happened, as compact JSON documents.

    Args:
        limit: How many of the latest lines are kept in :attr:`lines` (at least 1).

    Attributes:
        lines: One JSON text per request, change or fault, oldest first: the latest ``limit``.
    """

    def __init__(self, limit: int = 100_000) -> None:
        if limit < 1:
            raise ValueError(f"A trace keeps at least one line; trace_limit={limit!r}.")
        self.lines: deque[str] = deque(maxlen=limit)
        self._hash = hashlib.sha256()
        self._count = 0

    def __len__(self) -> int:
        """How many lines were traced since the start (kept or not)."""
        return self._count

    def _add(self, *entry: Any) -> None:
        line = json.dumps(entry, separators=(",", ":"), default=str)
        self.lines.append(line)
        self._hash.update(line.encode())
        self._hash.update(b"\n")
        self._count += 1

    def request(self, method: str, path: str, *, query: Mapping[str, str]) -> None:
        """A request as it arrived (its query sorted)."""
        self._add("request", method, path, sorted(query.items()))

    def answer(self, status: int) -> None:
        """The status of the request just traced (a watch's is its first line's: 200)."""
        self._add("answer", status)

    def fault(self, kind: str) -> None:
        """A fault struck the request just traced."""
        self._add("fault", kind)

    def change(self, rv: int, type_: str, *, obj: Mapping[str, Any]) -> None:
        """A stored change: its resourceVersion, type, object and a digest of its contents."""
        metadata = obj.get("metadata") or {}
        contents = {key: value for key, value in obj.items() if key != "metadata"}
        where = f"{metadata.get('namespace') or ''}/{metadata.get('name')}"
        self._add("change", rv, type_, obj.get("kind"), where, _digest(contents))

    def digest(self) -> str:
        """A SHA-256 of the whole trace since the start, the lines no longer kept included:
        equal traces, equal digests."""
        return self._hash.hexdigest()
