"""Calling resource-changing handlers and their sub-handlers within one handling cycle.

:class:`HandlerCalls` is the part of the :class:`~anyop.engine.cycle.reconciler.Reconciler` that
builds the kwargs, runs the due handlers in the lifecycle's order, opens the sub-handler
:class:`~anyop.engine.cycle.subhandlers.Execution` around each call, and turns what happened into
outcomes. It never writes to the API: the cycle's one patch collects everything.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime
import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from anyop.clock import utcnow
from anyop.engine.cycle.object_slots import ObjectSlot
from anyop.engine.cycle.subhandlers import ChildrenRetry, Execution
from anyop.engine.indexer import Indexer
from anyop.engine.invocation import invoke
from anyop.handlers.causes import ChangingCause, ResourceCause
from anyop.handlers.filters import KwargsFactory
from anyop.handlers.idempotency import idempotency_key
from anyop.handlers.lifecycles import LifeCycleFn, get_default_lifecycle
from anyop.handlers.outcomes import (
    ChildrenPending,
    Decision,
    Failed,
    Happening,
    decide,
    deliver_results,
    insist,
    precheck,
    returned,
)
from anyop.handlers.progression import HandlerState, Outcome, Progress
from anyop.handlers.records import ResourceChangingHandler
from anyop.handlers.registry import SubRegistry
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings
from anyop.storage.defaults import Persistence

__all__ = [
    "Cycle",
    "HandlerCalls",
    "Logger",
    "common_kwargs",
    "current_lifecycle",
    "observe_handler",
    "utcnow",
]

Logger = logging.LoggerAdapter[logging.Logger]

current_lifecycle: contextvars.ContextVar[LifeCycleFn | None] = contextvars.ContextVar(
    "anyop_current_lifecycle", default=None
)
"""The running operator's ``lifecycle=``, if it was given one (else the default lifecycle)."""


def common_kwargs(
    base: Mapping[str, Any],
    *,
    logger: Logger,
    memo: Any,
    patch: Patch,
    settings: OperatorSettings,
    indexer: Indexer | None,
) -> dict[str, Any]:
    """The kwargs of every resource handler, daemon and timer, before its retry state.

    ``base`` is the cause's (``body``, ``spec``...); the indexes override the framework's
    kwargs, as in Kopf.
    """
    extra = {"logger": logger, "memo": memo, "patch": patch, "settings": settings}
    retry = {"retry": 0, "started": None, "runtime": datetime.timedelta(0), "param": None}
    indexes = indexer.kwargs() if indexer is not None else {}
    return {**base, **retry, **extra, **indexes}


def outcome_label(outcome: Outcome) -> str:
    """A handler run's outcome as metrics name it: ``success``, ``retry`` or ``failure``. Pure."""
    if not outcome.final:
        return "retry"
    return "failure" if outcome.exception is not None else "success"


def observe_handler(
    metrics: Metrics | None,
    resource: Resource,
    handler_id: str,
    *,
    outcome: Outcome,
    started: float,
) -> None:
    """Count a handler's run in the operator's metrics, if there are any."""
    if metrics is not None:
        seconds = time.monotonic() - started
        metrics.handler(str(resource), handler_id, outcome_label(outcome), seconds=seconds)


@dataclasses.dataclass(eq=False, slots=True)
class Cycle:
    """What the steps of one handling cycle of one object share.

    Attributes:
        slot: The object's slot (its memo, its marks, its worker).
        logger: The object's logger.
        patch: The handlers' patch (the event handlers' too), written in the cycle's one write.
        records: Where the engine's state goes (the handlers' and sub-handlers' progress): a
            patch of its own, sent first, once the cycle makes one; the handlers' patch before.
    """

    slot: ObjectSlot
    logger: Logger
    patch: Patch = dataclasses.field(default_factory=Patch)
    records: Patch | None = None

    @property
    def state(self) -> Patch:
        """Where the engine's state goes now (see :attr:`records`)."""
        return self.patch if self.records is None else self.records


class HandlerCalls:
    """Invoking the handlers of one cycle (a base of the reconciler, which has the attributes)."""

    settings: OperatorSettings
    persistence: Persistence
    limiter: anyio.CapacityLimiter | None
    indexer: Indexer | None
    resource: Resource
    metrics: Metrics | None

    def _kwargs(self, base: Mapping[str, Any], cycle: Cycle) -> dict[str, Any]:
        """The kwargs common to all handlers (filters get them too)."""
        return common_kwargs(
            base,
            logger=cycle.logger,
            memo=cycle.slot.memo,
            patch=cycle.patch,
            settings=self.settings,
            indexer=self.indexer,
        )

    def _factory(self, cause: ResourceCause, cycle: Cycle) -> KwargsFactory:
        """Makes the kwargs for filters, on their first call only: most cycles have none."""
        base: dict[str, Any] | None = None

        def factory() -> dict[str, Any]:
            nonlocal base
            if base is None:
                base = cause.kwargs
            return self._kwargs(base, cycle)

        return factory

    async def _attempt(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        handlers: Sequence[ResourceChangingHandler],
        *,
        progress: Progress,
        lifecycle: LifeCycleFn | None = None,
    ) -> dict[str, Outcome]:
        """Invoke the handlers that are due now, in the order of the lifecycle."""
        lifecycle = lifecycle or current_lifecycle.get() or get_default_lifecycle()
        due = lifecycle(progress.awakened(handlers, now=utcnow()), state=progress)
        outcomes: dict[str, Outcome] = {}
        for handler in due:
            state = progress[handler.id]
            backoff = self.settings.execution.default_backoff
            decision = precheck(handler, state, now=utcnow())
            if decision is None:
                started = time.monotonic()
                happening = await self._invoke(cycle, cause, handler, state=state)
                decision = decide(handler, state, happening, now=utcnow(), default_backoff=backoff)
                observe_handler(
                    self.metrics,
                    self.resource,
                    handler.id,
                    outcome=decision.outcome,
                    started=started,
                )
            if cause.deleted and handler.keeps_finalizer_on_failure:
                decision = insist(handler, state, decision, now=utcnow(), default_backoff=backoff)
            self._log(decision, cycle.logger)
            outcomes[handler.id] = decision.outcome
        return outcomes

    async def _invoke(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        handler: ResourceChangingHandler,
        *,
        state: HandlerState,
    ) -> Happening:
        """Call one handler with its kwargs; its errors become a :class:`Failed`."""
        narrowed = cause.narrowed(handler.field) if handler.field else cause
        kwargs = self._kwargs(narrowed.kwargs, cycle)
        kwargs.update(retry=state.retries, started=state.started, param=handler.param)
        kwargs.update(runtime=state.runtime(utcnow()))
        kwargs["idempotency_key"] = idempotency_key(handler.id, cause.body, kwargs)
        children = functools.partial(self._run_children, cycle, narrowed)
        execution = Execution(parent=handler, run_children=children)
        with execution.active():
            try:
                result = await invoke(handler.fn, kwargs, limiter=self.limiter, body=cause.body)
                await execution.finish()
            except ChildrenRetry as pending:
                return ChildrenPending(delay=pending.delay, subrefs=tuple(execution.subrefs))
            except Exception as error:
                return Failed(error, subrefs=tuple(execution.subrefs))
        return returned(result, tuple(execution.subrefs))

    async def _run_children(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        handlers: Sequence[ResourceChangingHandler],
        *,
        registry: SubRegistry,
        lifecycle: LifeCycleFn | None,
    ) -> Progress:
        """Run a parent's due sub-handlers once; their progress goes into the cycle's state."""
        storage = self.persistence.progress
        factory = self._factory(cause, cycle)
        selected = registry.select(cause, factory)
        now = utcnow()
        progress = Progress.from_storage(
            body=cause.body, storage=storage, handlers=handlers, now=now
        )
        progress = progress.with_purpose(cause.reason).with_handlers(selected, now=now)
        outcomes = await self._attempt(
            cycle, cause, selected, progress=progress, lifecycle=lifecycle
        )
        progress = progress.with_outcomes(outcomes, now=utcnow())
        deliver_results(outcomes, cycle.patch)
        progress.store(body=cause.body, patch=cycle.state, storage=storage)
        return progress

    @staticmethod
    def _log(decision: Decision, logger: Logger) -> None:
        logger.log(decision.level, decision.message, exc_info=decision.exc_info)
