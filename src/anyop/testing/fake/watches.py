"""Watch streams: the async shell that turns a :class:`~anyop.testing.fake.api.WatchPlan` and the
store's later changes into the lines of a watch response.

Time is AnyIO's (``anyio.current_time``): under Trio's ``MockClock`` the timeouts and bookmark
intervals pass in virtual time.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from anyop.testing.fake.api import WatchPlan
from anyop.testing.fake.event_conversion import storage_resource
from anyop.testing.fake.history import Change, visible_change
from anyop.testing.fake.json_copy import compact_json
from anyop.testing.fake.store import Store, shown

__all__ = ["BOOKMARK_INTERVAL", "WatchStream", "bookmark_line", "event_line"]

BOOKMARK_INTERVAL = 60.0
"""Seconds between bookmarks of a quiet watch (the API server's is about a minute)."""
_DEFAULT_TIMEOUTS = (1800, 3600)  # the server's choice when the client sends no timeout
_INITIAL_END = "k8s.io/initial-events-end"


def event_line(type_: str, obj: Any) -> bytes:
    """One watch event as a line of JSON."""
    return compact_json({"type": type_, "object": obj}) + b"\n"


def bookmark_line(plan: WatchPlan, rv: int, *, initial_end: bool = False) -> bytes:
    """A ``BOOKMARK`` event at ``rv`` (annotated as the end of the initial events if asked)."""
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        metadata["annotations"] = {_INITIAL_END: "true"}
    obj = {"kind": plan.kind.kind, "apiVersion": plan.kind.api_version, "metadata": metadata}
    return event_line("BOOKMARK", plan.render("BOOKMARK", obj) if plan.render else obj)


class WatchStream:
    """The lines of one watch response, as an async iterator of bytes.

    Create it right after :func:`~anyop.testing.fake.api.handle` returned the plan, with no
    ``await`` in between, so that no change falls between the first events and the live ones.

    Args:
        store: Where the changes come from.
        plan: The watch's first events and options.
        rng: Picks the timeout when the client sent none.
    """

    def __init__(self, store: Store, plan: WatchPlan, rng: random.Random) -> None:
        self._store = store
        self._plan = plan
        self._pending: list[bytes] = []
        send: MemoryObjectSendStream[Change]
        receive: MemoryObjectReceiveStream[Change]
        send, receive = anyio.create_memory_object_stream(math.inf)
        self._send, self._receive = send, receive
        self._closed = False
        timeout = plan.timeout if plan.timeout is not None else rng.uniform(*_DEFAULT_TIMEOUTS)
        self._timeout = timeout
        self._deadline: float | None = None
        self._marked = 0.0  # when the last bookmark was sent (or the watch started)
        self._last_rv = store.rv  # of the resource's latest change seen (matched or not)
        if plan.error is not None:
            self._pending.append(event_line("ERROR", plan.error))
            self._closed = True
            return
        assert plan.start is not None
        self._pending.extend(self._line(type_, obj) for type_, obj in plan.start.events)
        if plan.initial_end:
            self._pending.append(bookmark_line(plan, plan.start.rv, initial_end=True))
        store.listeners.append(self._listen)

    def _line(self, type_: str, obj: Any) -> bytes:
        render = self._plan.render
        return event_line(type_, render(type_, obj) if render is not None else obj)

    def _listen(self, change: Change) -> None:
        kind = self._plan.kind
        if not self._closed and change.resource == storage_resource((kind.group, kind.plural)):
            self._send.send_nowait(change)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._deadline is None:
            self._marked = anyio.current_time()
            self._deadline = self._marked + self._timeout
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            await self._wait()
        return self._pending.pop(0)

    async def _wait(self) -> None:
        """Wait for the next change, a bookmark's time, or the end of the watch."""
        assert self._deadline is not None
        now = anyio.current_time()
        mark = self._next_bookmark()
        until = self._deadline if mark is None else min(self._deadline, mark)
        with anyio.move_on_after(max(0.0, until - now)):
            change = await self._receive.receive()
            self._last_rv = change.rv
            if (seen := visible_change(change, self._plan.query.matches)) is not None:
                self._pending.append(self._line(seen[0], shown(self._plan.kind, seen[1])))
            return
        now = anyio.current_time()
        if mark is not None and now >= mark:
            self._marked = now
            if self._plan.bookmarks:
                self._pending.append(bookmark_line(self._plan, self._store.rv))
        if now >= self._deadline:
            self._stop()

    def _next_bookmark(self) -> float | None:
        """When the next bookmark is due, as the watch cache schedules them (``nextBookmarkTime``):
        a minute after the last (or the start), or two seconds before the watch's end if that is
        sooner; none if that is already past (a watch of two seconds or less gets none). It is
        sent at the store's version whether the resource changed or not: the watch cache sends
        one only once its version passed the watch's last event (a change of the resource, or
        etcd's progress notification), see ``docs/fake-cluster.md``."""
        assert self._deadline is not None
        due = min(self._marked + BOOKMARK_INTERVAL, self._deadline - 2.0)
        return None if due <= self._marked else due

    def _stop(self) -> None:
        self._closed = True
        if self._listen in self._store.listeners:
            self._store.listeners.remove(self._listen)

    async def aclose(self) -> None:
        """Stop the watch: no more changes are taken."""
        self._stop()
        self._pending.clear()
        self._send.close()
        self._receive.close()
