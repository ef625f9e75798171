"""Calling resource-changing handlers and their sub-handlers within one handling cycle.

:class:`HandlerCalls` is the part of the :class:`~anyop.engine.reconcile.Reconciler` that builds
the kwargs, runs the due handlers in the lifecycle's order, opens the sub-handler
:class:`~anyop.engine.subhandlers.Execution` around each call, and turns what happened into
outcomes. It never writes to the API: the cycle's one patch collects everything.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from anyop.engine.indexes import Indexer
from anyop.engine.invocation import invoke
from anyop.engine.objects import ObjectSlot
from anyop.engine.subhandlers import ChildrenRetry, Execution
from anyop.handlers.causes import ChangingCause, ResourceCause
from anyop.handlers.filters import KwargsFactory
from anyop.handlers.lifecycles import LifeCycleFn, get_default_lifecycle
from anyop.handlers.outcomes import (
    ChildrenPending,
    Decision,
    Failed,
    Happening,
    decide,
    deliver_results,
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


def utcnow() -> datetime.datetime:
    """The current time as handler progress records it (aware UTC)."""
    return datetime.datetime.now(datetime.UTC)


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
    metrics: Metrics | None, resource: Resource, handler_id: str, outcome: Outcome, started: float
) -> None:
    """Count a handler's run in the operator's metrics, if there are any."""
    if metrics is not None:
        seconds = time.monotonic() - started
        metrics.handler(str(resource), handler_id, outcome_label(outcome), seconds)


class HandlerCalls:
    """Invoking the handlers of one cycle (a base of the reconciler, which has the attributes)."""

    settings: OperatorSettings
    persistence: Persistence
    limiter: anyio.CapacityLimiter | None
    indexer: Indexer | None
    resource: Resource
    metrics: Metrics | None

    def _kwargs(
        self, base: Mapping[str, Any], slot: ObjectSlot, logger: Logger, patch: Patch
    ) -> dict[str, Any]:
        """The kwargs common to all handlers (filters get them too)."""
        return common_kwargs(
            base, logger=logger, memo=slot.memo, patch=patch, settings=self.settings,
            indexer=self.indexer,
        )  # fmt: skip

    def _factory(
        self, cause: ResourceCause, slot: ObjectSlot, logger: Logger, patch: Patch
    ) -> KwargsFactory:
        """Makes the kwargs for filters, on their first call only: most cycles have none."""
        base: dict[str, Any] | None = None

        def factory() -> dict[str, Any]:
            nonlocal base
            if base is None:
                base = cause.kwargs
            return self._kwargs(base, slot, logger, patch)

        return factory

    async def _attempt(
        self,
        slot: ObjectSlot,
        cause: ChangingCause,
        handlers: Sequence[ResourceChangingHandler],
        progress: Progress,
        patch: Patch,
        logger: Logger,
        lifecycle: LifeCycleFn | None = None,
        *,
        records: Patch | None = None,
    ) -> dict[str, Outcome]:
        """Invoke the handlers that are due now, in the order of the lifecycle.

        ``records``: where the sub-handlers' progress goes (the cycle's patch of the engine's
        state; ``patch`` if ``None``), so that the cycle's purge sees it.
        """
        lifecycle = lifecycle or current_lifecycle.get() or get_default_lifecycle()
        due = lifecycle(progress.awakened(handlers, now=utcnow()), state=progress)
        outcomes: dict[str, Outcome] = {}
        for handler in due:
            state = progress[handler.id]
            decision = precheck(handler, state, now=utcnow())
            if decision is None:
                started = time.monotonic()
                happening = await self._invoke(
                    slot,
                    cause,
                    handler,
                    state,
                    patch,
                    logger,
                    patch if records is None else records,
                )
                backoff = self.settings.execution.default_backoff
                decision = decide(handler, state, happening, now=utcnow(), default_backoff=backoff)
                observe_handler(self.metrics, self.resource, handler.id, decision.outcome, started)
            self._log(decision, logger)
            outcomes[handler.id] = decision.outcome
        return outcomes

    async def _invoke(
        self,
        slot: ObjectSlot,
        cause: ChangingCause,
        handler: ResourceChangingHandler,
        state: HandlerState,
        patch: Patch,
        logger: Logger,
        records: Patch,
    ) -> Happening:
        """Call one handler with its kwargs; its errors become a :class:`Failed`."""
        narrowed = cause.narrowed(handler.field) if handler.field else cause
        kwargs = self._kwargs(narrowed.kwargs, slot, logger, patch)
        kwargs.update(retry=state.retries, started=state.started, param=handler.param)
        kwargs.update(runtime=state.runtime(utcnow()))
        children = functools.partial(self._run_children, slot, narrowed, patch, records, logger)
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
        slot: ObjectSlot,
        cause: ChangingCause,
        patch: Patch,
        records: Patch,
        logger: Logger,
        handlers: Sequence[ResourceChangingHandler],
        registry: SubRegistry,
        lifecycle: LifeCycleFn | None,
    ) -> Progress:
        """Run a parent's due sub-handlers once; their progress goes into the cycle's patch."""
        storage = self.persistence.progress
        factory = self._factory(cause, slot, logger, patch)
        selected = registry.select(cause, factory)
        now = utcnow()
        progress = Progress.from_storage(
            body=cause.body, storage=storage, handlers=handlers, now=now
        )
        progress = progress.with_purpose(cause.reason).with_handlers(selected, now=now)
        outcomes = await self._attempt(
            slot, cause, selected, progress, patch, logger, lifecycle, records=records
        )
        progress = progress.with_outcomes(outcomes, now=utcnow())
        deliver_results(outcomes, patch)
        progress.store(body=cause.body, patch=records, storage=storage)
        return progress

    @staticmethod
    def _log(decision: Decision, logger: Logger) -> None:
        logger.log(decision.level, decision.message, exc_info=decision.exc_info)
