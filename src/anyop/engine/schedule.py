"""Due times in a heap, woken by one task: how timers sleep between their runs.

A sleeping timer is an entry here, not a task. AnyIO keeps a task, its handle, a cancel scope and an
event alive for every ``start_soon``; with the frames of a sleeping timer, an operator with a timer
on each of thousands of objects would hold that many tasks that do nothing (docs/benchmarks.md).
One task per schedule sleeps until the earliest due time instead, moves its own deadline when an
earlier one arrives, and exits when nothing is scheduled.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
import anyio.abc

__all__ = ["Entry", "Schedule"]

T = TypeVar("T")


@dataclasses.dataclass(eq=False, slots=True)
class Entry(Generic[T]):
    """One scheduled item.

    Attributes:
        due: When it is due (on :func:`anyio.current_time`'s clock).
        item: What is handed to the schedule's ``fire`` when it is due; ``None`` once fired or
            discarded, so that an entry left in the heap holds nothing.
    """

    due: float
    item: T | None

    @property
    def live(self) -> bool:
        """Not yet fired or discarded."""
        return self.item is not None


class Schedule(Generic[T]):
    """Items that are due at given times; ``fire`` is called with each one when its time comes.

    Args:
        task_group: Where the waking task runs while anything is scheduled.
        fire: Called with the item of each entry that is due, in the order of due times; it must
            not block (it may start tasks, or add entries). Items are never ``None``.
        name: The waking task's name.

    Guarantees:
        * Each entry is fired at most once, and never before it is due nor once discarded.
        * At most one waking task runs, and only while a live entry exists: an empty schedule
          costs no task, and a discarded entry no longer holds its item.
        * The heap holds at most about twice as many entries as are live (plus 64).
    """

    def __init__(
        self, task_group: anyio.abc.TaskGroup, fire: Callable[[T], None], *, name: str
    ) -> None:
        self._task_group = task_group
        self._fire = fire
        self._name = name
        self._heap: list[tuple[float, int, Entry[T]]] = []
        self._order = itertools.count()
        self._live = 0
        self._waking: anyio.CancelScope | None = None  # the waking task's scope while it runs
        self._nap: anyio.CancelScope | None = None  # its sleep until the earliest due time

    def __len__(self) -> int:
        """How many entries are live."""
        return self._live

    def add(self, item: T, due: float) -> Entry[T]:
        """Schedule ``item`` at ``due``; the entry can be discarded until it fires."""
        entry = Entry(due, item)
        heapq.heappush(self._heap, (due, next(self._order), entry))
        self._live += 1
        if self._waking is None:
            self._waking = anyio.CancelScope()
            self._task_group.start_soon(self._wake, self._waking, name=self._name)
        elif self._nap is not None and due < self._nap.deadline:
            self._nap.deadline = due
        return entry

    def discard(self, entry: Entry[T]) -> None:
        """Never fire ``entry`` (if it has not fired yet); the last one ends the waking task."""
        if entry.item is None:
            return
        entry.item = None
        self._live -= 1
        if len(self._heap) > 2 * self._live + 64:
            self._heap = [queued for queued in self._heap if queued[2].item is not None]
            heapq.heapify(self._heap)  # discarded entries never outnumber the live ones by much
        if not self._live:
            self._heap.clear()
            if self._waking is not None:
                self._waking.cancel()
            self._waking = self._nap = None

    async def _wake(self, waking: anyio.CancelScope) -> None:
        try:
            with waking:
                while self._waking is waking and self._heap:
                    self._fire_due(anyio.current_time())
                    if self._heap:  # a replaced task's scope is cancelled: it ends here
                        with anyio.CancelScope(deadline=self._heap[0][0]) as self._nap:
                            await anyio.sleep_forever()
        finally:
            if self._waking is waking:
                self._waking = self._nap = None

    def _fire_due(self, now: float) -> None:
        # self._heap each time: a discard from within fire() may compact it into a new list
        while self._heap and (self._heap[0][2].item is None or self._heap[0][0] <= now):
            entry = heapq.heappop(self._heap)[2]
            item, entry.item = entry.item, None
            if item is not None:
                self._live -= 1
                self._fire(item)
