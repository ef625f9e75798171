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
import itertools
import json
import marshal
from collections import deque
from collections.abc import Mapping
from typing import Any

__all__ = ["Trace"]

_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _digest(document: Any) -> str:
    """A digest of a JSON document's contents: of its :mod:`marshal` bytes (version 0, which
    does not mark interned strings), so equal documents built in the same order digest the
    same."""
    try:
        data = marshal.dumps(document, 0)
    except ValueError:  # a part marshal does not take (a subclass): its JSON text, sorted
        data = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class Trace:
    """Lines of what happened, as compact JSON documents.

    Args:
        limit: How many of the latest lines are kept in :attr:`lines` (at least 1).

    A line is kept as its parts and written out as JSON when it is read (:attr:`lines`) or
    hashed (:meth:`digest`, or before it is dropped): a request costs the fake no formatting
    while nobody reads its trace.
    """

    def __init__(self, limit: int = 100_000) -> None:
        if limit < 1:
            raise ValueError(f"A trace keeps at least one line; trace_limit={limit!r}.")
        self._entries: deque[tuple[Any, ...]] = deque(maxlen=limit)
        self._unhashed = 0  # the newest entries not in the hash yet
        self._hash = hashlib.sha256()
        self._count = 0

    def __len__(self) -> int:
        """How many lines were traced since the start (kept or not)."""
        return self._count

    @property
    def lines(self) -> list[str]:
        """One JSON text per request, change or fault, oldest first: the latest ``limit``
        (a copy; :meth:`clear` forgets them)."""
        return [_encode(entry) for entry in self._entries]

    def clear(self) -> None:
        """Forget the kept lines; the digest still covers them."""
        self._fold()
        self._entries.clear()

    def _add(self, *entry: Any) -> None:
        if self._unhashed == self._entries.maxlen:
            self._fold()  # the oldest would go unhashed
        self._entries.append(entry)
        self._unhashed += 1
        self._count += 1

    def _fold(self) -> None:
        """Put the unhashed entries into the hash, oldest first."""
        newest = list(itertools.islice(reversed(self._entries), self._unhashed))
        for entry in reversed(newest):  # from the end: as many steps as entries to hash
            self._hash.update(_encode(entry).encode())
            self._hash.update(b"\n")
        self._unhashed = 0

    def request(self, method: str, path: str, *, query: Mapping[str, str]) -> None:
        """A request as it arrived (its query sorted)."""
        self._add("request", method, path, tuple(sorted(query.items())))  # untracked by gc

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
        self._fold()
        return self._hash.hexdigest()
