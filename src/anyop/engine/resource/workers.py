"""Per-object workers: the latest state wins, handling cycles run one at a time.

Events of one object never queue up: a new body replaces the pending one (bursts coalesce), and one
worker task per busy object runs the handling cycles serially, in the object's own task group
(:mod:`anyop.engine.object_groups`, with its daemons). The worker exits when the object is
idle; what must outlive it (the memo, the read-your-own-writes mark, the daemons) stays in the
object's :class:`ObjectSlot`, which is dropped when the object is gone.

Backpressure: while the API server is behind (too many requests in flight), objects that need a
worker wait in a queue, as their latest bodies only, and start in order as it catches up; objects
seen before go ahead of new ones. A backlog of thousands of objects then costs their bodies, not
thousands of cycles that ran their handlers and wait to write the results. Where objects must not
wait before their first cycle (their daemons start in it), a cycle may ask to be run again from
the queue instead of waiting to write.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from anyop.engine.cycle.object_memories import Memories, ObjectMemory
from anyop.engine.cycle.object_slots import (
    Backpressure,
    CycleFn,
    CycleResult,
    ObjectSlot,
    SlotState,
)
from anyop.engine.object_groups import ObjectHosts
from anyop.engine.schedule import Schedule
from anyop.kube.inflight import claiming
from anyop.logs import object_logger

__all__ = ["FATAL_MESSAGE", "ObjectWorkers"]

FATAL_MESSAGE = (
    "Event processing has failed with an unrecoverable error. This seems to be a framework bug."
)
"""Kopf's line when a handling cycle fails beyond its own error handling; the operator stops."""


class ObjectWorkers:
    """The workers of one watched resource in one scope.

    Args:
        cycle: Runs one handling cycle for an object's latest body.
        task_group: Where worker tasks live (the resource's task group).
        limiter: Bounds how many objects are handled at once (``queueing.worker_limit``).
        idle_timeout: How long a worker waits for more events before it exits.
        new_memo: Makes the memo of a new object (when there are no ``memories``).
        memories: The objects' memories that outlive this instance (the operator's, across
            pauses): a deleted object's is forgotten.
        hosts: The objects' own task groups, where the workers run (shared with the daemons);
            by default, groups of its own in ``task_group``.
        backpressure: When queued objects must wait; ``None``: never.
        hold_new: Whether an object that has no worker waits in the queue for one; if not, only
            objects whose cycles ask to be requeued wait there (resources with daemons: their
            daemons start at once, their finalizers are written in turn).
        ready: Queued workers start once it is set (the cycles would wait for it anyway: the
            indexes are built at startup).

    Guarantees:
        At most one cycle per object runs at a time; the cycle always gets the newest body.
        Memory is bounded by the live objects: a slot is dropped when its object is gone.
        Queued objects start in order, objects seen before ahead of new ones.
    """

    def __init__(
        self,
        cycle: CycleFn,
        task_group: anyio.abc.TaskGroup,
        *,
        limiter: anyio.CapacityLimiter | None = None,
        idle_timeout: float = 5.0,
        new_memo: Callable[[], Any] = lambda: None,
        memories: Memories | None = None,
        hosts: ObjectHosts | None = None,
        backpressure: Backpressure | None = None,
        hold_new: bool = True,
        ready: anyio.Event | None = None,
    ) -> None:
        self._cycle = cycle
        self._tg = task_group
        self._limiter = limiter
        self._idle_timeout = idle_timeout
        self._new_memo = new_memo
        self._memories = memories
        self._hosts = hosts if hosts is not None else ObjectHosts(task_group)
        self._backpressure = backpressure
        self._hold_new = hold_new
        self._ready = ready
        self._closing = False
        self._feed_scope: anyio.CancelScope | None = None
        """The scope of the task that starts queued workers, while it runs."""
        self._timeouts = Schedule(task_group, ObjectSlot.wake, name="anyop object timeouts")
        """When waiting workers are woken without an event (their delay or idle time is up)."""
        self._seen: deque[ObjectSlot] = deque()
        self._new: deque[ObjectSlot] = deque()
        self.slots: dict[str, ObjectSlot] = {}

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def hosts(self) -> ObjectHosts:
        """The objects' own task groups (shared with their daemons)."""
        return self._hosts

    @property
    def busy(self) -> int:
        """How many objects have a worker or wait for one (the work-queue depth)."""
        return sum(1 for slot in self.slots.values() if slot.state is not SlotState.IDLE)

    def dispatch(self, body: Mapping[str, Any]) -> ObjectSlot:
        """Hand the newest body of an object to its worker, starting or queueing one if needed."""
        uid = str((body.get("metadata") or {}).get("uid", ""))
        slot = self.slots.get(uid)
        seen = slot is not None
        if slot is None:
            memory = self._recall(uid)
            slot = self.slots[uid] = ObjectSlot(uid=uid, memory=memory)
        slot.pending = body
        if self._closing:
            return slot
        if slot.state is SlotState.BUSY:
            slot.wake()
        elif slot.state is SlotState.IDLE:
            if self._backpressure is not None and self._hold_new:
                self._enqueue(slot, seen=seen)
            else:
                self._start(slot)
        return slot

    def _recall(self, uid: str) -> ObjectMemory:
        if self._memories is None:
            return ObjectMemory(self._new_memo())
        return self._memories.recall(uid)

    def _enqueue(self, slot: ObjectSlot, *, seen: bool) -> None:
        slot.state = SlotState.QUEUED
        (self._seen if seen else self._new).append(slot)
        if self._feed_scope is None:
            self._feed_scope = anyio.CancelScope()
            self._tg.start_soon(self._feed, self._feed_scope, name="anyop object queue")

    def _start(self, slot: ObjectSlot) -> None:
        slot.state = SlotState.BUSY
        slot.scope = anyio.CancelScope()
        self._hosts.start_worker(slot.uid, self._work, slot, name=f"anyop object {slot.uid}")

    async def _feed(self, scope: anyio.CancelScope) -> None:
        """Start the queued workers in order, each once the API server is not behind."""
        assert self._backpressure is not None
        try:
            with scope:
                while not self._closing:
                    if self._ready is not None:
                        await self._ready.wait()
                    await self._backpressure.eased()
                    for _ in range(self._backpressure.room):
                        slot = self._next_queued()
                        if slot is None:
                            return
                        # A started cycle sends its first request only later: hold its place
                        # now, or the same room would be found again before it is counted.
                        slot.reservation = self._backpressure.reserve()
                        self._start(slot)
                    await anyio.lowlevel.checkpoint()
        finally:
            self._feed_scope = None

    def _next_queued(self) -> ObjectSlot | None:
        for queue in (self._seen, self._new):
            while queue:
                slot = queue.popleft()
                if slot.state is SlotState.QUEUED and self.slots.get(slot.uid) is slot:
                    return slot
        return None

    def close(self, deadline: float = math.inf) -> None:
        """Stop dispatching: waiting workers exit now, running cycles finish and then exit.

        Args:
            deadline: When the cycles still running are cancelled (the event loop's clock).

        Caveats:
            Bodies dispatched after this are kept in their slots but never handled.
        """
        self._closing = True
        if self._feed_scope is not None:
            self._feed_scope.cancel()
        for slot in self.slots.values():
            if slot.scope is not None:
                slot.scope.deadline = deadline
            slot.wake()

    def cancel(self, uid: str) -> None:
        """Cancel everything of the object now: its worker, and its group (daemons, timers)."""
        slot = self.slots.get(uid)
        if slot is not None and slot.scope is not None:
            slot.scope.cancel()
        self._hosts.cancel(uid)

    def forget(self, uid: str) -> None:
        """Drop an object's slot (it stopped matching or its scope closes)."""
        self.slots.pop(uid, None)

    def release(self, uid: str, deadline: float = math.inf) -> None:
        """Hand the object over: no new cycle; a running one finishes (or is cancelled at
        ``deadline``); then its slot and memory are dropped. Its daemons are the caller's.

        Its state stays on the object (progress, diff-base), so whoever handles it next goes
        on from there.
        """
        slot = self.slots.get(uid)
        if slot is None:
            return
        slot.pending = None
        if self._memories is not None:
            self._memories.forget(uid)
        if slot.state is SlotState.BUSY and slot.scope is not None:
            if not slot.leaving:
                slot.leaving = True
                slot.scope.deadline = min(slot.scope.deadline, deadline)
            slot.wake()
        else:  # idle or queued: nothing runs (a queued slot is skipped once it is not here)
            slot.state = SlotState.GONE
            del self.slots[uid]

    def _leaving(self, slot: ObjectSlot) -> bool:
        """Whether the slot's worker is to exit: all of them close, or this one is handed over."""
        return self._closing or slot.leaving

    async def _work(self, slot: ObjectSlot) -> None:
        """The worker of a busy object, in its ``slot.scope`` (cancelled by :meth:`cancel`, and
        at the deadline of :meth:`close`)."""
        assert slot.scope is not None
        try:
            with slot.scope:
                delay: float | None = 0.0
                held = False
                while True:
                    body = await self._next_body(slot, delay, held=held)
                    if body is None and slot.leaving:
                        slot.state = SlotState.GONE
                        if self.slots.get(slot.uid) is slot:
                            del self.slots[slot.uid]
                        return
                    if body is None:
                        slot.state = SlotState.IDLE
                        slot.last = None
                        return
                    try:
                        result = await self._run_cycle(slot, body)
                    except Exception:
                        object_logger(body).exception(FATAL_MESSAGE)
                        raise  # the operator stops, as Kopf's does
                    held = result.throttled
                    if result.gone and slot.pending is not None and not self._closing:
                        # It came back meanwhile (back in the watch's label selection): handle it.
                        delay, held = 0.0, False
                        continue
                    if result.gone:
                        slot.state = SlotState.GONE
                        self.slots.pop(slot.uid, None)
                        if result.deleted and self._memories is not None:
                            self._memories.forget(slot.uid)
                        return
                    if (
                        result.requeue
                        and self._backpressure is not None
                        and not self._leaving(slot)
                    ):
                        if slot.pending is None:
                            slot.pending = body
                        slot.last = None
                        self._enqueue(slot, seen=True)
                        return
                    if (
                        result.quiet
                        and result.delay is None
                        and slot.pending is None
                        and not self._leaving(slot)  # a hand-over ends as one (below)
                    ):
                        slot.state = SlotState.IDLE  # nothing to wait for: no idle worker
                        slot.last = None
                        return
                    slot.last = result.body or body
                    delay = (
                        0.0 if result.requeue else result.delay
                    )  # no queue: run it again at once
        finally:
            if slot.reservation is not None:  # it exits before its first cycle
                slot.reservation.release()
                slot.reservation = None
            slot.scope = None  # an idle object keeps no scope
            if slot.state is SlotState.BUSY:  # cancelled mid-cycle: the next body starts anew
                slot.state = SlotState.IDLE

    async def _next_body(
        self, slot: ObjectSlot, delay: float | None, *, held: bool = False
    ) -> Mapping[str, Any] | None:
        """The next body to handle: a new one, or the last one when a delay has run out.

        ``held``: new bodies do not end the delay early (the object is throttled).
        """
        if slot.leaving:
            return None
        if held and delay is not None and not self._closing:
            until = anyio.current_time() + delay
            while not self._leaving(slot) and (left := until - anyio.current_time()) > 0:
                await self._wait(slot, left)
        elif slot.pending is None and not self._closing:
            wait = self._idle_timeout if delay is None else delay
            if wait > 0:  # not NaN either
                await self._wait(slot, wait)
            else:
                await anyio.lowlevel.checkpoint()
        if self._leaving(slot):
            return None
        if slot.pending is not None:
            body, slot.pending = slot.pending, None
            return body
        return slot.last if delay is not None else None

    async def _wait(self, slot: ObjectSlot, seconds: float) -> None:
        """Wait until woken (a new body, closing) or the seconds are over."""
        # One schedule of timeouts, not a cancel scope with a deadline per wait: a heap entry
        # is cheaper than a scope's deadline bookkeeping, and every object waits twice (after
        # its cycle, after its echo).
        slot.wakeup = anyio.Event()
        timeout = self._timeouts.add(slot, anyio.current_time() + seconds)
        try:
            await slot.wakeup.wait()
        finally:
            slot.wakeup = None
            self._timeouts.discard(timeout)

    async def _run_cycle(self, slot: ObjectSlot, body: Mapping[str, Any]) -> CycleResult:
        reservation, slot.reservation = slot.reservation, None
        if self._limiter is None:
            with claiming(reservation):  # its first request takes the place held at its start
                return await self._cycle(slot, body)
        if reservation is not None:
            # Waiting for a worker slot of this resource is no request: the place would keep
            # other resources' objects waiting behind this resource's backlog.
            reservation.pause()
        async with self._limiter:
            if reservation is not None:
                reservation.resume()
            with claiming(reservation):
                return await self._cycle(slot, body)
