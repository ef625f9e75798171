"""Daemons and timers: tasks in their object's own task group, stopped through cancel scopes.

Every handling cycle calls :meth:`Spawner.sync` with the object's latest state: daemons and timers
whose filters match are spawned (once per object and handler), those that no longer match are
stopped, and all of them are stopped when the object is being deleted. Each runs in a cancel scope
of its own inside the object's task group, which exists while any of them runs::

    resource's daemons group
    ├─ object group (one per object while a daemon or a timer of it runs)
    │  └─ run scope: stopped -> cancellation_backoff -> cancel -> cancellation_timeout -> abandon
    └─ the timers' schedule: one task that wakes the sleeping timers when they are due

A daemon's task lives as long as the daemon. A timer has a task only while it runs: between its runs
it is an entry in the resource's :class:`~anyop.engine.schedule.Schedule` (an idle-only
timer that waits for a change is not even that), so thousands of sleeping timers cost no tasks. It
still holds its object (and its finalizer) while it sleeps; stopping it then ends it at once.

The body they see is live: one dict per object, replaced in place on every event. What they
return and put into ``patch`` is applied after each attempt.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import warnings
from collections.abc import Iterable
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from anyop.engine.cycle.handler_calls import Cycle, common_kwargs, observe_handler, utcnow
from anyop.engine.cycle.patch_writer import apply_patch
from anyop.engine.daemons.daemon_runs import ObjectDaemons, Run, RunEvent, TimerClock
from anyop.engine.indexer import Indexer
from anyop.engine.invocation import asyncio_on_trio, calling, invoke, is_async, use_context
from anyop.engine.object_groups import ObjectHosts
from anyop.engine.schedule import Schedule
from anyop.errors import ApiError, InvalidError
from anyop.handlers.bodies import Body
from anyop.handlers.causes import ChangingCause, SpawningCause
from anyop.handlers.filters import KwargsFactory
from anyop.handlers.outcomes import (
    Decision,
    Failed,
    Happening,
    decide,
    deliver_results,
    precheck,
    returned,
)
from anyop.handlers.progression import HandlerState
from anyop.handlers.records import DaemonHandler, ResourceSpawningHandler, TimerHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.schedules import REAP_TIMEOUT, Termination, timer_due, timer_pause
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.kube.client import KubeClient
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings

__all__ = ["Spawner", "reaping_deadline"]

Reason = DaemonStoppingReason


@dataclasses.dataclass(eq=False)
class Spawner:
    """The daemons and timers of one resource in one scope.

    Args:
        client: The API client (for the runs' patches).
        resource: The resource.
        registry: The handlers.
        settings: The operator's settings.
        task_group: The resource's group: the timers' schedule lives there.
        limiter: Bounds the threads of sync timers (sync daemons have threads of their own).
        indexer: Gives the index kwargs.
        metrics: Counts the runs (the operator's metrics, if any).
        hosts: The objects' own task groups, where the runs and their terminations live
            (shared with the objects' workers).

    Guarantees:
        * At most one run per object and handler; a terminating run is not replaced until its
          task has exited.
        * A run that exited for good (returned, or failed permanently) is never spawned again
          for that object in this process.
        * A timer never overlaps with itself, and has no task between its runs.
        * Memory is dropped with the object's last run once the object is gone.
    """

    client: KubeClient
    resource: Resource
    registry: OperatorRegistry
    settings: OperatorSettings
    task_group: anyio.abc.TaskGroup
    limiter: anyio.CapacityLimiter | None = None
    indexer: Indexer | None = None
    metrics: Metrics | None = None
    hosts: ObjectHosts = dataclasses.field(kw_only=True)
    objects: dict[str, ObjectDaemons] = dataclasses.field(default_factory=dict)
    closing: bool = False
    timers: Schedule[tuple[ObjectDaemons, Run]] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.timers = Schedule(
            self.task_group, lambda due: self._start(*due), name=f"anyop timers of {self.resource}"
        )

    # -- decisions per event -----------------------------------------------------------------

    def sync(self, cycle: Cycle, cause: ChangingCause, factory: KwargsFactory) -> bool:
        """Spawn or stop the object's runs for its latest state; say if any still holds it.

        Args:
            cycle: The object's cycle (its slot: uid, memo and worker; its logger).
            cause: The cycle's cause (the body and its essence).
            factory: The filters' kwargs.
        """
        slot, logger = cycle.slot, cycle.logger
        obj = self.objects.get(slot.uid)
        if obj is None:
            if cause.deleted or self.closing:
                return False
            finished = slot.memory.finished
            obj = ObjectDaemons(slot.uid, {}, slot.memo, logger, slot.wake, finished=finished)
            self.objects[slot.uid] = obj
        obj.gone = False  # seen again (e.g. back in the watch's label selection)
        obj.wake = slot.wake  # its slot may be a new one (it left the selection and came back)
        if obj.update(cause.body, cause.new):
            for run in list(obj.runs.values()):
                idle = isinstance(run.handler, TimerHandler) and run.handler.idle is not None
                if idle and not run.busy:
                    self._plan(obj, run)  # its idle clock was reset
        if cause.deleted:
            self._stop(obj, list(obj.runs.values()), Reason.RESOURCE_DELETED)
            return obj.alive
        spawning = SpawningCause(resource=self.resource, body=cause.body)
        wanted = self.registry.spawning.select(spawning, factory, excluded=obj.finished)
        wanted_ids = {handler.id for handler in wanted}
        stale = [run for run_id, run in obj.runs.items() if run_id not in wanted_ids]
        self._stop(obj, stale, Reason.FILTERS_MISMATCH)
        if not self.closing:
            self._spawn(obj, [h for h in wanted if h.id not in obj.runs])
        # A wanted run that is still stopping (its filters matched again meanwhile) is spawned
        # anew once it has exited: its exit wakes the worker, whose next cycle comes here.
        obj.respawning = any(obj.runs[h.id].stopper.is_set() for h in wanted if h.id in obj.runs)
        return obj.alive

    def respawning(self, uid: str) -> bool:
        """Whether a run of the object waits to exit before it is spawned anew."""
        obj = self.objects.get(uid)
        return obj is not None and obj.respawning

    async def exit_instantly(self, uid: str) -> bool:
        """Give the object's stopped runs an instant to exit; say if any still holds it.

        The instant is ``background.instant_exit_timeout`` seconds, or, when that is ``None``,
        ``background.instant_exit_zero_time_cycles`` turns of the event loop (Kopf's "instant
        exit"): a run that exits on its stop flag at once lets its deletion's cycle release the
        finalizer itself, with no second cycle and no second write.
        """
        obj = self.objects.get(uid)
        if obj is None:
            return False
        background = self.settings.background
        if background.instant_exit_timeout is not None:
            with anyio.move_on_after(background.instant_exit_timeout):
                for run in list(obj.runs.values()):
                    if run.alive:
                        await run.exits_within(math.inf)
        else:
            for _ in range(background.instant_exit_zero_time_cycles):
                if not obj.alive:
                    break
                await anyio.lowlevel.checkpoint()
        return obj.alive

    def forget(self, uid: str, reason: DaemonStoppingReason = Reason.RESOURCE_DELETED) -> None:
        """The object is gone (or left the watch): stop its runs; its memory goes with them."""
        obj = self.objects.get(uid)
        if obj is None:
            return
        obj.gone = True
        self._stop(obj, list(obj.runs.values()), reason)
        if not obj.runs:
            self.objects.pop(uid, None)

    def stop_all(self, reason: DaemonStoppingReason) -> float:
        """Stop every run (the operator exits or pauses); spawn no more if it exits.

        Returns:
            The seconds their terminations may take, if all of them are bounded; ``None``
            timeouts count as 0 (the caller reaps them after :data:`REAP_TIMEOUT`).
        """
        if reason & Reason.OPERATOR_EXITING:
            self.closing = True
        polling = self.settings.background.cancellation_polling
        budget = 0.0
        for obj in list(self.objects.values()):
            runs = list(obj.runs.values())
            self._stop(obj, runs, reason)
            for run in runs:
                budget = max(budget, Termination.of(run.handler, polling=polling).budget)
        return budget

    @property
    def alive(self) -> int:
        """How many runs hold their objects now."""
        return sum(1 for obj in self.objects.values() for run in obj.runs.values() if run.alive)

    # -- spawning ----------------------------------------------------------------------------

    def _spawn(self, obj: ObjectDaemons, handlers: Iterable[ResourceSpawningHandler]) -> None:
        for handler in handlers:
            run = obj.runs[handler.id] = Run(handler)
            if not isinstance(handler, TimerHandler):
                self._start(obj, run)
                continue
            run.clock = TimerClock()
            if callable(handler.initial_delay):
                run.clock.delay_pending = True  # called in the timer's first task
                self._start(obj, run)
            else:
                run.clock.not_before = anyio.current_time() + (handler.initial_delay or 0.0)
                self._plan(obj, run)

    def _start(self, obj: ObjectDaemons, run: Run) -> None:
        """Give the run a task in the object's own group (see
        :mod:`anyop.engine.object_groups`)."""
        run.happen(RunEvent.START)
        self.hosts.start(obj.uid, self._run, obj, run, name=f"anyop {run.handler} {obj.uid}")

    async def _run(self, obj: ObjectDaemons, run: Run) -> None:
        """The run's task: a daemon's whole life, or one turn of a timer."""
        over = True
        try:
            with anyio.CancelScope() as run.scope:
                if run.cancelled:
                    run.scope.cancel()
                if isinstance(run.handler, TimerHandler):
                    over = not await self._tick(obj, run, run.handler)
                else:
                    await self._daemon(obj, run)
        except Exception:
            obj.finish(run.handler)
            obj.logger.exception(f"{run.handler} failed unexpectedly and will not be restarted.")
        finally:
            run.scope = None
            if over or run.stopper.is_set():
                self._retire(obj, run)
            else:
                run.happen(RunEvent.REST)
                self._plan(obj, run)

    def _retire(self, obj: ObjectDaemons, run: Run) -> None:
        """The run has exited: it no longer holds its object; the object's worker is woken."""
        run.stopper.done()
        run.happen(RunEvent.EXIT)
        if obj.runs.get(run.handler.id) is run:
            del obj.runs[run.handler.id]
        if not obj.runs and obj.gone:
            self.objects.pop(obj.uid, None)
        obj.wake()

    # -- the timers' schedule ----------------------------------------------------------------

    def _plan(self, obj: ObjectDaemons, run: Run) -> None:
        """Run a timer that has no task now, put it in the schedule, or let it wait for a change.

        See :func:`~anyop.handlers.schedules.timer_due`.
        """
        clock = run.clock
        assert clock is not None
        assert isinstance(run.handler, TimerHandler)
        self._unplan(run)
        due = timer_due(
            run.handler, not_before=clock.not_before, reset=obj.reset, ran_for=clock.ran_for
        )
        now = anyio.current_time()
        if math.isnan(due):
            obj.logger.warning(f"{run.handler} got a delay that is not a number: it runs now.")
            clock.not_before = due = now
        if due <= now:
            self._start(obj, run)
        elif due != math.inf:
            clock.entry = self.timers.add((obj, run), due)

    def _unplan(self, run: Run) -> None:
        if run.clock is not None and run.clock.entry is not None:
            self.timers.discard(run.clock.entry)
            run.clock.entry = None

    # -- the loops ---------------------------------------------------------------------------

    async def _daemon(self, obj: ObjectDaemons, run: Run) -> None:
        """Run a daemon until it exits for good or is stopped; retry it after errors."""
        handler = run.handler
        if not await run.sleep(await self._initial_delay(obj, run)):
            return
        state = HandlerState.from_scratch(now=utcnow())
        patch = Patch()
        while not run.stopper.is_set():
            decision = await self._attempt(obj, run, state=state, patch=patch)
            state = decision.state
            if decision.outcome.final:
                if not run.stopper.is_set():
                    self._finish(obj, handler)
                return
            await run.sleep(decision.delay or 0.0)

    async def _tick(self, obj: ObjectDaemons, run: Run, handler: TimerHandler) -> bool:
        """One turn of a timer: one attempt (or its callable initial delay); say if it goes on.

        What comes next is written into its clock: after an error, the retry's delay; after a
        success, the pause until the next run (``interval``, ``sharp``) and a new round of
        retries; a permanent failure or a one-shot's success ends it.
        """
        clock = run.clock
        assert clock is not None
        if run.stopper.is_set():  # stopped before its task started
            return False
        if clock.delay_pending:
            clock.delay_pending = False
            clock.not_before = anyio.current_time() + await self._initial_delay(obj, run)
            return True
        started = anyio.current_time()
        patch = clock.patch or Patch()
        state = clock.state or HandlerState.from_scratch(now=utcnow())
        decision = await self._attempt(obj, run, state=state, patch=patch)
        clock.patch = patch or None  # functions to retry after a conflict
        now = anyio.current_time()
        outcome = decision.outcome
        if not outcome.final:
            clock.state = decision.state
            clock.not_before = now + (decision.delay or 0.0)
            return True
        clock.state = None  # retries count per success; the next round starts with its attempt
        if outcome.exception is not None:
            self._finish(obj, handler)
            return False
        clock.ran_for = obj.reset
        pause = timer_pause(handler, started=started, now=now)
        if pause is None and handler.idle is None:
            obj.finish(handler)  # a one-shot timer
            return False
        clock.not_before = now + (pause or 0.0)
        return True

    @staticmethod
    def _finish(obj: ObjectDaemons, handler: ResourceSpawningHandler) -> None:
        obj.finish(handler)
        obj.logger.info(f"{handler} has exited on its own and will not be retried or restarted.")

    async def _initial_delay(self, obj: ObjectDaemons, run: Run) -> float:
        """The handler's ``initial_delay`` in seconds (a callable gets the handler's kwargs)."""
        delay = run.handler.initial_delay
        if callable(delay):
            kwargs = self._kwargs(obj, run, patch=Patch(), state=HandlerState(), sync=False)
            delay = await invoke(delay, kwargs, limiter=self.limiter, body=obj.raw)
        return float(delay or 0.0)

    async def _attempt(
        self, obj: ObjectDaemons, run: Run, *, state: HandlerState, patch: Patch
    ) -> Decision:
        """One invocation with Kopf's error semantics; its result and patch are applied.

        The call is made here, not in a helper coroutine: a daemon stays in this frame for its
        whole life, and every frame more is held by every daemon for as long.
        """
        handler = run.handler
        decision = precheck(handler, state, now=utcnow())
        if decision is None:
            started = time.monotonic()
            sync = not is_async(handler.fn)
            # Sync daemons hold a thread for their whole life: never under the handlers' limit.
            limiter = None if sync and isinstance(handler, DaemonHandler) else self.limiter
            happening: Happening
            try:
                # Awaited here (not in invoke()), the kwargs in no local: a daemon's frames and
                # the kwargs that it holds (its own dict of them) live as long as it does.
                with use_context(obj.raw):
                    result = await calling(
                        handler.fn,
                        self._kwargs(obj, run, patch=patch, state=state, sync=sync),
                        limiter=limiter,
                    )
            except Exception as error:
                happening = Failed(asyncio_on_trio(handler.fn, error) or error)
            else:
                happening = returned(result)
            backoff = self.settings.execution.default_backoff
            decision = decide(handler, state, happening, now=utcnow(), default_backoff=backoff)
            observe_handler(
                self.metrics, self.resource, handler.id, outcome=decision.outcome, started=started
            )
        obj.logger.log(decision.level, decision.message, exc_info=decision.exc_info)
        deliver_results({handler.id: decision.outcome}, patch)
        await self._apply(obj, patch)
        return decision

    def _kwargs(
        self, obj: ObjectDaemons, run: Run, *, patch: Patch, state: HandlerState, sync: bool
    ) -> dict[str, Any]:
        """Live ``body``/``spec``/... views, ``stopped``, and the rest as handlers get them."""
        cause = SpawningCause(resource=self.resource, body=Body(obj.raw))
        kwargs = common_kwargs(
            cause.kwargs,
            logger=obj.logger,
            memo=obj.memo,
            patch=patch,
            settings=self.settings,
            indexer=self.indexer,
        )
        now = utcnow()
        kwargs.update(retry=state.retries, started=state.started or now, param=run.handler.param)
        kwargs.update(runtime=state.runtime(now), stopped=run.stopper.checker(sync=sync))
        return kwargs

    async def _apply(self, obj: ObjectDaemons, patch: Patch) -> None:
        """Send the patch of one attempt; keep its functions if the object changed meanwhile."""
        if not patch:
            return
        try:
            response = await apply_patch(self.client, self.resource, obj.raw, patch=patch)
        except InvalidError as error:
            obj.logger.warning(f"The patch is retried on the next attempt: {error}")
            patch.clear()  # the merge part is lost; the functions are applied to a fresh body
            return
        except ApiError as error:
            obj.logger.error(f"The patch could not be applied and is dropped: {error}")
            patch.clear()
            patch.fns.clear()
            return
        patch.clear()
        patch.fns.clear()
        if response is not None:
            obj.update(response, None)  # fresher for the next attempt; the idle clock stays

    # -- stopping ----------------------------------------------------------------------------

    def _stop(self, obj: ObjectDaemons, runs: Iterable[Run], reason: DaemonStoppingReason) -> None:
        for run in runs:
            if run.exited:
                continue
            first = not run.stopper.is_set()
            run.stopper.set(reason)
            run.happen(RunEvent.STOP)
            if not run.busy:  # a timer between its runs: nothing to wait for
                self._unplan(run)
                self._retire(obj, run)
                continue
            run.poke()
            if first:
                name = f"anyop stopping {run.handler} {obj.uid}"
                self.hosts.start(obj.uid, self._terminate, obj, run, name=name)

    async def _terminate(self, obj: ObjectDaemons, run: Run) -> None:
        """Stop one run: flag, backoff, cancel, timeout, abandon; or wait and log if unbounded."""
        handler = run.handler
        logger = obj.logger
        polling = self.settings.background.cancellation_polling
        termination = Termination.of(handler, polling=polling)
        logger.debug(f"{handler} is signalled to exit gracefully.")
        if await run.exits_within(termination.backoff or 0.0):
            logger.debug(f"{handler} has exited gracefully.")
            return
        if termination.timeout is None:
            polling = termination.polling
            while not await run.exits_within(polling):
                logger.info(f"{handler} is still exiting. The next check is in {polling} seconds.")
            logger.debug(f"{handler} has exited gracefully.")
            return
        logger.debug(f"{handler} is signalled to exit by force.")
        run.stopper.set(Reason.DAEMON_CANCELLED)
        if is_async(handler.fn):
            run.cancel()
            logger.debug(f"{handler} is cancelled.")
        if await run.exits_within(termination.timeout):
            logger.debug(f"{handler} has exited.")
            return
        self._abandon(obj, run)

    def _abandon(self, obj: ObjectDaemons, run: Run) -> None:
        message = f"{run.handler} did not exit in time. Leaving it orphaned."
        obj.logger.warning(message)
        run.stopper.set(Reason.DAEMON_ABANDONED)
        run.abandon()  # a sync daemon's thread is left running; its task exits
        obj.wake()
        try:
            warnings.warn(f"{message} (object {obj.uid})", ResourceWarning, stacklevel=1)
        except Warning:  # warnings turned into errors must not break the operator
            logging.getLogger("anyop.engine").debug("The ResourceWarning was raised as an error.")


def reaping_deadline(budget: float) -> float:
    """When to cancel what is left of the daemons after the operator started exiting."""
    return anyio.current_time() + budget + REAP_TIMEOUT
