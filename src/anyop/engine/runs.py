"""The records of daemons and timers: one run, a timer's place in its schedule, one object's runs.

They hold state and answer questions about it; :class:`~anyop.engine.daemons.Spawner` decides
and starts the tasks. A run's ``nap``/``sleep``/``exits_within`` are the only waits here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from anyop.engine.handling import Logger
from anyop.engine.schedule import Entry
from anyop.handlers.bodies import Body
from anyop.handlers.progression import HandlerState
from anyop.handlers.records import ResourceSpawningHandler
from anyop.handlers.stopping import DaemonStopper
from anyop.kube.patches import Patch

__all__ = ["ObjectDaemons", "Run", "TimerClock"]


@dataclasses.dataclass(eq=False, slots=True)
class TimerClock:
    """Where a timer is in its schedule; kept between its runs, when it has no task.

    Attributes:
        state: The retries of the current round of attempts, from its first attempt on
            (``None`` before it: ``started``, ``runtime`` and ``timeout`` count from there, not
            from the initial delay or the pause after the last success).
        not_before: The end of its current wait: the initial delay, a retry's delay, or the
            pause after a success (on :func:`anyio.current_time`'s clock).
        ran_for: The object's idle-clock reset that it last succeeded after.
        patch: Transformation functions carried to the next attempt (after a conflict).
        delay_pending: Its ``initial_delay`` is a callable that has not been called yet.
        entry: Its entry in the schedule while it sleeps there.
    """

    state: HandlerState | None = None
    not_before: float = 0.0
    ran_for: float | None = None
    patch: Patch | None = None
    delay_pending: bool = False
    entry: Entry[tuple[ObjectDaemons, Run]] | None = None


@dataclasses.dataclass(eq=False, slots=True)
class Run:
    """One daemon or timer of one object, from its spawning until it exits.

    Attributes:
        handler: The daemon or timer.
        stopper: Its ``stopped`` flag.
        scope: The cancel scope of its task, while it has one.
        clock: A timer's schedule (``None`` for a daemon).
        busy: It has a task (a daemon all its life; a timer while it runs).
        cancelled: Its task is cancelled (now, or as soon as it starts).
        exited: It has exited.
        abandoned: It did not exit within its cancellation timeout and is left to itself.

    Its events are made only when something waits for them: an idle daemon costs its task
    and its stop flag's one event; a sleeping timer costs this record and its clock.
    """

    handler: ResourceSpawningHandler
    stopper: DaemonStopper = dataclasses.field(default_factory=DaemonStopper)
    scope: anyio.CancelScope | None = None
    clock: TimerClock | None = None
    busy: bool = False
    cancelled: bool = False
    exited: bool = False
    abandoned: bool = False
    _exit: anyio.Event | None = None
    _nap: anyio.CancelScope | None = None

    @property
    def alive(self) -> bool:
        """Whether it still holds its object (neither exited nor abandoned)."""
        return not self.exited and not self.abandoned

    def cancel(self) -> None:
        """Cancel its task, now or as soon as it starts."""
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()

    def finish(self) -> None:
        """Mark it as exited."""
        self.exited = True
        if self._exit is not None:
            self._exit.set()

    def poke(self) -> None:
        """End its current nap early (it was stopped)."""
        if self._nap is not None:
            self._nap.cancel()

    async def nap(self, seconds: float) -> None:
        """Sleep up to ``seconds``, less if poked or stopped.

        A nap is one cancel scope, which a poke cancels: no event per sleeping daemon.
        """
        if self.stopper.is_set():
            return
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + seconds) as self._nap:
                await anyio.sleep_forever()
        finally:
            self._nap = None

    async def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped (pokes do not shorten it); say if not stopped."""
        deadline = anyio.current_time() + seconds
        while not self.stopper.is_set() and (left := deadline - anyio.current_time()) > 0:
            await self.nap(left)
        return not self.stopper.is_set()

    async def exits_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for its task to exit; say if it has."""
        if not self.exited:
            if self._exit is None:
                self._exit = anyio.Event()
            with anyio.move_on_after(seconds):
                await self._exit.wait()
        return self.exited


@dataclasses.dataclass(eq=False, slots=True)
class ObjectDaemons:
    """The daemons and timers of one object, and what they share.

    Attributes:
        uid: The object's uid.
        raw: The live body: replaced in place on every event, seen through ``body``/``spec``.
        memo: The object's memo (the same as its handlers').
        logger: The object's logger.
        wake: Wakes the object's worker (when a run exits, deletion may proceed).
        runs: The runs by handler id, until they exit.
        finished: Handlers that exited for good: never spawned again for this object (the set
            of its memory, which outlives this: see :mod:`anyop.engine.memories`).
        essence: The last essence seen; a different one resets the timers' idle clocks.
        reset: When the essence last changed (monotonic).
        gone: The object is deleted; forget it when its last run exits.
        respawning: A wanted run is still stopping: spawn it anew once it has exited.
    """

    uid: str
    raw: dict[str, Any]
    memo: Any
    logger: Logger
    wake: Callable[[], None]
    runs: dict[str, Run] = dataclasses.field(default_factory=dict)
    finished: set[str] = dataclasses.field(default_factory=set)
    essence: Any = None
    reset: float = dataclasses.field(default_factory=anyio.current_time)
    gone: bool = False
    respawning: bool = False

    @property
    def alive(self) -> bool:
        """Whether any run still holds the object."""
        return any(run.alive for run in self.runs.values())

    def update(self, body: Mapping[str, Any], essence: Any) -> bool:
        """Show the latest body to the runs; say if a changed essence reset the idle clocks."""
        Body(self.raw).replace_with(body)
        if essence is None or essence == self.essence:
            return False
        self.essence = essence
        self.reset = anyio.current_time()
        return True

    def finish(self, handler: ResourceSpawningHandler) -> None:
        """Never spawn ``handler`` again for this object."""
        self.finished.add(handler.id)
