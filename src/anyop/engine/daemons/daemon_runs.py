"""The records of daemons and timers: one run, a timer's place in its schedule, one object's runs.

They hold state and answer questions about it; :class:`~anyop.engine.daemons.spawner.Spawner`
decides and starts the tasks. A run's ``nap``/``sleep``/``exits_within`` are the only waits here.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from anyop.engine.cycle.handler_calls import Logger
from anyop.engine.daemons.stop_flags import DaemonStopper
from anyop.engine.schedule import Entry
from anyop.handlers.bodies import Body
from anyop.handlers.progression import HandlerState
from anyop.handlers.records import ResourceSpawningHandler
from anyop.kube.patches import Patch

__all__ = ["ObjectDaemons", "Run", "RunEvent", "RunState", "TimerClock", "transition"]


class RunState(enum.Enum):
    """Where a daemon or timer run is in its life (see :func:`transition`)."""

    WAITING = "waiting"
    """No task: a new run, or a timer between its turns."""
    RUNNING = "running"
    """Its task runs (a daemon all its life, a timer during a turn)."""
    STOPPING = "stopping"
    """Its task runs after it was told to stop (its stop flag is set)."""
    CANCELLED = "cancelled"
    """Its task is cancelled, now or as soon as it starts (it did not stop in its backoff)."""
    ABANDONED = "abandoned"
    """It did not exit within its cancellation timeout: left to itself, it no longer holds its
    object (its task, cancelled, may still run)."""
    EXITED = "exited"
    """Its task has ended, or it was stopped while it had none. Final."""


class RunEvent(enum.Enum):
    """What happens to a run."""

    START = "start"
    """It gets a task."""
    REST = "rest"
    """A timer's turn ends without a stop: it waits for its next turn."""
    STOP = "stop"
    """It is told to stop (deletion, a filter mismatch, the operator pausing or exiting)."""
    CANCEL = "cancel"
    """Its task is cancelled."""
    ABANDON = "abandon"
    """Its cancellation timeout is over."""
    EXIT = "exit"
    """Its task ends, or it is stopped while it has none."""


_S, _E = RunState, RunEvent
TRANSITIONS: Mapping[tuple[RunState, RunEvent], RunState] = {
    (_S.WAITING, _E.START): _S.RUNNING,
    (_S.WAITING, _E.STOP): _S.EXITED,  # nothing to wait for: it exits as it is stopped
    (_S.WAITING, _E.EXIT): _S.EXITED,
    (_S.RUNNING, _E.REST): _S.WAITING,
    (_S.RUNNING, _E.STOP): _S.STOPPING,
    (_S.RUNNING, _E.EXIT): _S.EXITED,
    (_S.STOPPING, _E.STOP): _S.STOPPING,  # told again (e.g. pausing, then exiting)
    (_S.STOPPING, _E.CANCEL): _S.CANCELLED,
    (_S.STOPPING, _E.ABANDON): _S.ABANDONED,  # a sync daemon: threads cannot be cancelled
    (_S.STOPPING, _E.EXIT): _S.EXITED,
    (_S.CANCELLED, _E.STOP): _S.CANCELLED,
    (_S.CANCELLED, _E.CANCEL): _S.CANCELLED,
    (_S.CANCELLED, _E.ABANDON): _S.ABANDONED,
    (_S.CANCELLED, _E.EXIT): _S.EXITED,
    (_S.ABANDONED, _E.STOP): _S.ABANDONED,
    (_S.ABANDONED, _E.CANCEL): _S.ABANDONED,
    (_S.ABANDONED, _E.EXIT): _S.EXITED,
    (_S.EXITED, _E.STOP): _S.EXITED,
    (_S.EXITED, _E.EXIT): _S.EXITED,
}
"""Every transition a run may make; any other pair is a bug of the engine."""


def transition(state: RunState, event: RunEvent) -> RunState:
    """The state a run in ``state`` is in after ``event``.

    Raises:
        ValueError: The event cannot happen in that state (a bug of the engine).
    """
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise ValueError(f"A run that is {state.value} cannot {event.value}.") from None


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
        state: Where it is in its life; changed only through :meth:`happen`.

    Its events are made only when something waits for them: an idle daemon costs its task
    and its stop flag's one event; a sleeping timer costs this record and its clock.
    """

    handler: ResourceSpawningHandler
    stopper: DaemonStopper = dataclasses.field(default_factory=DaemonStopper)
    scope: anyio.CancelScope | None = None
    clock: TimerClock | None = None
    state: RunState = RunState.WAITING
    _exit: anyio.Event | None = None
    _nap: anyio.CancelScope | None = None

    def happen(self, event: RunEvent) -> RunState:
        """Move to the state after ``event`` (see :func:`transition`), and return it."""
        self.state = transition(self.state, event)
        if self.state is RunState.EXITED and self._exit is not None:
            self._exit.set()
        return self.state

    @property
    def alive(self) -> bool:
        """Whether it still holds its object (neither exited nor abandoned)."""
        return self.state not in (RunState.ABANDONED, RunState.EXITED)

    @property
    def busy(self) -> bool:
        """Whether it has a task now (or is about to get one)."""
        return self.state not in (RunState.WAITING, RunState.EXITED)

    @property
    def exited(self) -> bool:
        """Whether it has exited."""
        return self.state is RunState.EXITED

    @property
    def cancelled(self) -> bool:
        """Whether its task is to be cancelled as soon as it starts."""
        return self.state in (RunState.CANCELLED, RunState.ABANDONED)

    def cancel(self) -> None:
        """Cancel its task, now or as soon as it starts."""
        self.happen(RunEvent.CANCEL)
        if self.scope is not None:
            self.scope.cancel()

    def abandon(self) -> None:
        """Leave it to itself: it no longer holds its object; its task is cancelled."""
        self.happen(RunEvent.ABANDON)
        if self.scope is not None:
            self.scope.cancel()

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
            of its memory, which outlives this: see :mod:`anyop.engine.cycle.object_memories`).
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
