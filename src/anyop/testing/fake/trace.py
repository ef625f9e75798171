"""The trace of a fake cluster: every request, every change and every fault, in order, and a hash.

Pure. Two runs of the same test on the same seed give the same trace (so the same
:meth:`Trace.digest`); a different seed with faults gives another one. What a trace leaves out on
purpose: timestamps (real time is not repeatable unless the clock is fake) and bodies other than
the changed objects' contents (their digests stand for them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["Trace"]


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Trace:
    """Lines of what happened, as compact JSON documents.

    Attributes:
        lines: One JSON text per request, change or fault, oldest first.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _add(self, *entry: Any) -> None:
        self.lines.append(json.dumps(entry, separators=(",", ":"), default=str))

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
        """A SHA-256 of the whole trace: equal traces, equal digests."""
        return hashlib.sha256("\n".join(self.lines).encode()).hexdigest()
