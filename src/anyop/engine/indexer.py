"""Keeping the ``@anyop.index`` indexes current from the watch-streams.

Indexing runs in the resource's watch handler, before the event is dispatched to the object's
worker: when a watch reports its initial listing as dispatched, every listed object is indexed.
The operator opens :attr:`Indexer.ready` once every watch has listed, and resource handlers wait
for it, so no handler ever sees a half-built index at startup.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from anyop.engine.invocation import invoke
from anyop.handlers.causes import ResourceCause
from anyop.handlers.indexes import Index, ObjectKey, OperatorIndexes, failure_of
from anyop.handlers.records import ResourceIndexingHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.logs import object_logger
from anyop.settings import OperatorSettings

__all__ = ["Indexer", "object_key", "operator_indexes"]


_NO_TIME = datetime.timedelta(0)


def object_key(body: Mapping[str, Any]) -> ObjectKey:
    """How the indexes know an object: its namespace, name and uid."""
    meta = body.get("metadata") or {}
    return (meta.get("namespace"), str(meta.get("name", "")), str(meta.get("uid", "")))


def operator_indexes(registry: OperatorRegistry) -> OperatorIndexes:
    """Empty indexes for every ``@anyop.index`` function of the registry."""
    return OperatorIndexes([handler.id for handler in registry.indexing.handlers])


class Indexer:
    """Runs the indexing functions of an operator and holds its indexes.

    Args:
        registry: Where the ``@anyop.index`` handlers are.
        settings: Given to the functions as ``settings``.
        limiter: Bounds the threads of sync functions (the handlers' limiter).
        indexes: The indexes to fill (shared with the activities); new empty ones if ``None``.

    Guarantees:
        An object's values are replaced on every event, and removed when it is deleted, stops
        matching the filters, or fails for good (Kopf's error modes; see
        :func:`~anyop.handlers.indexes.failure_of`). A failing function never stops the watch.
    """

    def __init__(
        self,
        registry: OperatorRegistry,
        settings: OperatorSettings,
        *,
        limiter: anyio.CapacityLimiter | None = None,
        indexes: OperatorIndexes | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.limiter = limiter
        self.indexes = indexes if indexes is not None else operator_indexes(registry)
        self.ready = anyio.Event()
        """Set when every watched resource was listed (and indexed, where it is indexed)."""

    def kwargs(self) -> dict[str, Index]:
        """The indexes as handler kwargs, by name."""
        return self.indexes.kwargs()

    def serves(self, resource: Resource) -> bool:
        """Whether any indexing function wants objects of this resource."""
        return self.registry.indexing.has_handlers(resource)

    def forget(self, objects: Iterable[ObjectKey]) -> None:
        """Drop these objects from every index (their watch stopped; a new one lists again)."""
        for obj in objects:
            self.indexes.forget(obj)

    async def index(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        *,
        deleted: bool,
        memo: Callable[[], Any] = dict,
    ) -> None:
        """Update the indexes from one event of an object."""
        obj = object_key(body)
        if deleted:
            self.indexes.forget(obj)
            return
        cause = ResourceCause(resource=resource, body=body)
        logger = object_logger(body)
        base: dict[str, Any] = {**cause.kwargs, "logger": logger, "settings": self.settings}
        base.update(memo=memo(), param=None, retry=0, started=None, runtime=_NO_TIME)
        base.update(self.kwargs())  # indexes override other kwargs, as in Kopf

        def factory() -> dict[str, Any]:
            return base

        selected = {handler.id for handler in self.registry.indexing.select(cause, factory)}
        for handler in self.registry.indexing.for_resource(resource):
            if handler.id not in selected:
                self.indexes.index(handler.id).discard(obj)
            elif not self.indexes.excluded(handler.id, obj, now=anyio.current_time()):
                kwargs = {**base, "param": handler.param, **self.kwargs()}
                await self._call(handler, obj, kwargs, body=body, logger=logger)

    async def _call(
        self,
        handler: ResourceIndexingHandler,
        obj: ObjectKey,
        kwargs: dict[str, Any],
        *,
        body: Mapping[str, Any],
        logger: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        try:
            result = await invoke(handler.fn, kwargs, limiter=self.limiter, body=body)
        except Exception as error:
            failure = failure_of(error, errors=handler.errors, backoff=handler.backoff)
            if not failure.remove:
                outcome = "the stale values are kept"
            elif failure.exclude_for == float("inf"):
                outcome = "the object is removed from the index for good"
            else:
                outcome = f"the object is removed from the index for {failure.exclude_for}s"
            logger.exception(f"{handler} failed: {outcome}.")
            self.indexes.fail(handler.id, obj, failure, now=anyio.current_time())
            return
        self.indexes.index(handler.id).replace(obj, result)
