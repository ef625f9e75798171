"""One resource in one scope: a list+watch stream whose events go to per-object workers.

The watcher runs in a cancel scope of its own inside the resource's task group, so stopping first
stops the stream (nothing new is dispatched) and then gives the running cycles a grace period.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from anyop.engine.coordination.pause_gate import Gate, first_of
from anyop.engine.coordination.shards import Shard
from anyop.engine.cycle.object_memories import Memories
from anyop.engine.cycle.object_slots import Backpressure, CycleFn
from anyop.engine.cycle.reconciler import Observed, Reconciler
from anyop.engine.daemons.spawner import Spawner, reaping_deadline
from anyop.engine.indexer import Indexer, object_key
from anyop.engine.object_groups import ObjectHosts
from anyop.engine.reconciling.controller import ControllerScope
from anyop.engine.reconciling.reconcilers import Controllers, open_controllers
from anyop.engine.resource.shard_parts import ResourceShard
from anyop.engine.resource.workers import ObjectWorkers
from anyop.handlers.indexes import ObjectKey
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.kube.client import KubeClient
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent
from anyop.kube.watchstate import WatchState
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings, QueueingSettings
from anyop.storage.defaults import Persistence, anyop_storages, status_storages

__all__ = [
    "ResourceScope",
    "WatchReports",
    "Watched",
    "current_reports",
    "persistence_for",
    "serve_resource",
]

logger = logging.getLogger("anyop.engine")


@dataclasses.dataclass
class Watched:
    """One served resource in one scope, as the probes and the metrics see it.

    Attributes:
        resource: The resource.
        namespace: The namespace, or ``None`` for the whole cluster.
        watcher: Its watch-stream (``watcher.state`` is a :class:`WatchState`).
        workers: Its objects' workers (an :class:`~anyop.engine.resource.workers.ObjectWorkers`),
            while it handles them (a standby that keeps watching does not).
        spawner: Its daemons and timers (a :class:`~anyop.engine.daemons.spawner.Spawner`), if any.
        reconcilers: Its reconcilers' controllers
            (:class:`~anyop.engine.reconciling.controller.Controller`), while they run.
    """

    resource: Resource
    namespace: str | None
    watcher: Any = None
    workers: Any = None
    spawner: Any = None
    reconcilers: Any = None

    @property
    def state(self) -> WatchState:
        """The watch-stream's state."""
        state: WatchState = self.watcher.state
        return state


WatchReports = Callable[[str, Watched], contextlib.AbstractContextManager[object]]
"""Reports a served resource while a block runs (the operator's probes: ``Health.watching``)."""

current_reports: contextvars.ContextVar[WatchReports | None] = contextvars.ContextVar(
    "anyop.current_reports", default=None
)
"""Where the running operator's watches report themselves (set by ``serve()``)."""


def persistence_for(resource: Resource, settings: OperatorSettings) -> Persistence:
    """Where to keep state on the resource's objects.

    Explicit storages in ``settings.persistence`` win; otherwise everything goes to
    ``status.anyop`` for resources with the status subresource (one ``/status`` request per
    simple cycle), and to ``anyop.dev/`` annotations for the others.
    """
    default = status_storages() if "status" in resource.subresources else anyop_storages()
    options = settings.persistence
    return Persistence(
        progress=options.progress_storage or default.progress,
        diffbase=options.diffbase_storage or default.diffbase,
        finalizer=options.finalizer,
    )


@dataclasses.dataclass(frozen=True)
class ResourceScope:
    """What one resource task serves.

    Attributes:
        client: The API client.
        resource: The resource to watch.
        namespace: One namespace, or ``None`` for the whole cluster.
        registry: The handlers.
        settings: The operator's settings.
        new_memo: Makes the memo of a newly seen object (when there are no ``memories``).
        memories: The objects' memories (their memos among them), kept across the serving
            rounds of the operator.
        limiter: Bounds the sync handlers' threads.
        indexer: Keeps the ``@anyop.index`` indexes (fed before each dispatch).
        stop_reason: Why the daemons and timers are stopped when the watch stops: the operator
            exits, or it pauses (peering, leadership).
        gate: The pause gate, when standbys keep watching (``settings.leadership.keep_watching``):
            then the watch runs on a standby too, and handling only while it leads.
        metrics: The operator's metrics, if it has any.
        shard: This replica's share of the objects, when the operator is sharded
            (``settings.sharding.enabled``): only those are handled.
    """

    client: KubeClient
    resource: Resource
    namespace: str | None
    registry: OperatorRegistry
    settings: OperatorSettings
    new_memo: Callable[[], Any] = dict
    memories: Memories | None = None
    limiter: anyio.CapacityLimiter | None = None
    indexer: Indexer | None = None
    stop_reason: Callable[[], DaemonStoppingReason] = lambda: DaemonStoppingReason.OPERATOR_EXITING
    gate: Gate | None = None
    metrics: Metrics | None = None
    shard: Shard | None = None

    def reconciler(
        self, spawner: Spawner | None = None, backpressure: Backpressure | None = None
    ) -> Reconciler:
        """The handling cycle for this resource's objects."""
        persistence = persistence_for(self.resource, self.settings)
        return Reconciler(
            self.client,
            self.resource,
            self.registry,
            self.settings,
            persistence,
            self.limiter,
            self.indexer,
            spawner,
            self.metrics,
            backpressure,
        )

    def spawner(self, task_group: anyio.abc.TaskGroup, hosts: ObjectHosts) -> Spawner | None:
        """The daemons and timers of this resource's objects, if it has any."""
        if not self.registry.spawning.has_handlers(self.resource):
            return None
        return Spawner(
            self.client,
            self.resource,
            self.registry,
            self.settings,
            task_group,
            limiter=self.limiter,
            indexer=self.indexer,
            metrics=self.metrics,
            hosts=hosts,
        )

    def watcher(self) -> Watcher:
        """The list+watch stream, filtered by the handlers' common label and field selectors,
        and by this replica's shard where the API server can (a resource with indexes is
        watched whole: its indexes hold every object, whoever handles it)."""
        labels = self.registry.label_selector(self.resource)
        fields = self.registry.field_selector(self.resource)
        indexed = self.indexer is not None and self.indexer.serves(self.resource)
        return Watcher(
            self.client,
            self.resource,
            namespace=self.namespace,
            label_selector=str(labels) if labels else None,
            field_selector=str(fields) if fields else None,
            settings=self.settings,
            shard=self.shard.share if self.shard and not indexed else None,
        )


async def serve_resource(
    scope: ResourceScope,
    stopping: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Watch one resource and handle its objects until ``stopping`` is set.

    Args:
        scope: What to serve.
        stopping: Once set: stop the watch; stop the daemons and timers (each with its own
            backoff and timeout); let running cycles finish within ``queueing.exit_timeout``;
            cancel what is left of the cycles then, and of the daemons
            :data:`~anyop.handlers.schedules.REAP_TIMEOUT` seconds after their timeouts.
        task_status: Reported ``started`` after the initial listing has been dispatched.
    """
    watched = Watched(scope.resource, scope.namespace)
    if scope.gate is not None and scope.gate.warm:
        await _serve_warm(scope, scope.gate, stopping, watched=watched, task_status=task_status)
        return
    # A shard's part is left only once the workers, daemons and reconcilers are all done: a
    # replica that stops (its watch ended, its cycles finishing) still hands its objects over
    # by the rules, and acknowledges no view while it handles something outside its share.
    with contextlib.ExitStack() as membership:
        async with _handling(scope, watched) as workers, _reconciling(scope) as controllers:
            watched.reconcilers = controllers.running
            dispatch = _dispatcher(scope, workers, controllers)
            if scope.shard is not None:
                part = _shard_part(scope, scope.shard, watched, dispatch, controllers)
                membership.enter_context(scope.shard.joined(part))
                dispatch = part.dispatch
            await _watch_until(scope, dispatch, stopping, watched=watched, task_status=task_status)


def _shard_part(
    scope: ResourceScope,
    shard: Shard,
    watched: Watched,
    dispatch: Callable[[Observed], object],
    controllers: Controllers,
) -> ResourceShard:
    """The resource's filter when the operator is sharded (see :mod:`anyop.sharding`)."""

    def relist() -> None:
        if watched.watcher is not None:
            watched.watcher.relist()

    def listings() -> int:
        return watched.watcher.listings if watched.watcher is not None else 0

    def reshard() -> None:
        if watched.watcher is not None and watched.watcher.server_sharded:
            watched.watcher.relist()

    return ResourceShard(
        shard,
        watched.workers,
        dispatch,
        spawner=watched.spawner,
        hosts=watched.workers.hosts,
        relist=relist,
        reshard=reshard,
        listings=listings,
        exit_timeout=scope.settings.queueing.exit_timeout,
        controllers=controllers if controllers.running else None,
    )


def _reconciling(scope: ResourceScope) -> contextlib.AbstractAsyncContextManager[Controllers]:
    """The resource's reconcilers (``@anyop.reconcile``), with workers of their own."""
    handlers = scope.registry.reconciling.for_resource(scope.resource)
    queueing = scope.settings.queueing
    where = ControllerScope(
        scope.client,
        scope.resource,
        scope.namespace,
        {},
        scope.settings,
        limiter=scope.limiter,
        indexer=scope.indexer,
        metrics=scope.metrics,
    )

    def workers(cycle: CycleFn, group: anyio.abc.TaskGroup) -> ObjectWorkers:
        memo, memories, idle = scope.new_memo, scope.memories, queueing.idle_timeout
        return ObjectWorkers(cycle, group, new_memo=memo, memories=memories, idle_timeout=idle)

    return open_controllers(where, handlers, workers=workers, exit_timeout=queueing.exit_timeout)


def _dispatcher(
    scope: ResourceScope, workers: ObjectWorkers, controllers: Controllers
) -> Callable[[Observed], object]:
    """Where the resource's events go: its Kopf-style handling (if it has handlers of that
    kind) and its reconcilers."""
    if not controllers.running:
        return workers.dispatch
    handled = scope.registry.has_handlers(scope.resource)

    def dispatch(observed: Observed) -> None:
        controllers.observe(observed, deleted=observed.type == "DELETED")
        if handled:
            workers.dispatch(observed)

    return dispatch


@contextlib.asynccontextmanager
async def _handling(scope: ResourceScope, watched: Watched) -> AsyncIterator[ObjectWorkers]:
    """Per-object workers with their daemons and timers; stopped gracefully on the way out.

    An object's daemons, timers' turns and terminations run in the object's own task group
    (:mod:`anyop.engine.object_groups`) inside this resource's group; its worker in that
    group if it is open, else beside it.
    """
    queueing = scope.settings.queueing
    async with anyio.create_task_group() as group:
        hosts = ObjectHosts(group)
        spawner = scope.spawner(group, hosts)
        backpressure = _backpressure(scope.client, queueing)
        workers = ObjectWorkers(
            scope.reconciler(spawner, backpressure),
            group,
            limiter=_worker_limiter(queueing.worker_limit),
            idle_timeout=queueing.idle_timeout,
            new_memo=scope.new_memo,
            memories=scope.memories,
            hosts=hosts,
            backpressure=backpressure,
            hold_new=spawner is None,
            ready=scope.indexer.ready if scope.indexer is not None else None,
        )
        watched.workers, watched.spawner = workers, spawner
        try:
            yield workers
        finally:
            watched.workers = watched.spawner = None
        exiting = anyio.current_time() + queueing.exit_timeout
        workers.close(exiting)  # the running cycles get exit_timeout seconds
        budget = spawner.stop_all(scope.stop_reason()) if spawner else 0
        group.cancel_scope.deadline = max(exiting, reaping_deadline(budget))


async def _serve_warm(
    scope: ResourceScope,
    gate: Gate,
    stopping: anyio.Event,
    *,
    watched: Watched,
    task_status: anyio.abc.TaskStatus[None],
) -> None:
    """A replica's watch that runs while it stands by: handling runs only while it leads.

    The latest body of every object is kept; when this replica becomes the leader, they are
    handled as if just listed, with no new listing. Handling is fenced by the leadership.
    """
    latest: dict[str, Observed] = {}
    leading: list[Callable[[Observed], object]] = []

    def dispatch(observed: Observed) -> None:
        uid = str((observed.get("metadata") or {}).get("uid", ""))
        if observed.type == "DELETED":
            latest.pop(uid, None)
        else:
            latest[uid] = observed
        if leading:
            leading[0](observed)

    async with anyio.create_task_group() as tg:
        await tg.start(functools.partial(_watch_until, scope, dispatch, stopping, watched=watched))
        task_status.started()
        while not stopping.is_set():
            await first_of(stopping.wait, gate.wait_leading)
            if stopping.is_set():
                break
            with gate.fenced():
                async with _handling(scope, watched) as workers, _reconciling(scope) as rc:
                    watched.reconcilers = rc.running
                    handle = _dispatcher(scope, workers, rc)
                    for body in list(latest.values()):
                        handle(Observed(body, type="ADDED", listed=True))
                    leading.append(handle)
                    try:
                        await stopping.wait()
                    finally:
                        leading.clear()


async def _watch_until(
    scope: ResourceScope,
    dispatch: Callable[[Observed], object],
    stopping: anyio.Event,
    *,
    watched: Watched,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the watch-stream until ``stopping`` is set."""

    indexer = scope.indexer if scope.indexer and scope.indexer.serves(scope.resource) else None
    indexed: set[ObjectKey] = set()  # forgotten when the watch stops: a later one lists anew

    async def handle(event: WatchEvent) -> None:
        if indexer is not None:
            deleted = event.type == "DELETED"
            memo = _memo_of(scope, event.object)
            await indexer.index(scope.resource, event.object, deleted=deleted, memo=memo)
            if deleted:
                indexed.discard(object_key(event.object))
            else:
                indexed.add(object_key(event.object))
        dispatch(Observed(event.object, type=event.type, listed=event.listed))

    watcher = scope.watcher()
    report = current_reports.get()
    where = f"{scope.resource} in {scope.namespace or 'the cluster'}"
    watched.watcher = watcher
    reporting = report(where, watched) if report else contextlib.nullcontext()
    listed = False
    with reporting:
        try:
            async with anyio.create_task_group() as watch_group:
                watch_group.start_soon(_cancel_when_set, stopping, watch_group.cancel_scope)
                await watch_group.start(watcher.run, handle)
                logger.debug("Watching %s.", where)
                listed = True
                task_status.started()
        finally:
            if indexer is not None:
                indexer.forget(indexed)
    if not listed:
        task_status.started()  # stopped while listing: nothing is to be waited for


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _memo_of(scope: ResourceScope, body: Mapping[str, Any]) -> Callable[[], Any]:
    """Makes the memo for an index function: the object's own, if the operator has seen it."""
    if scope.memories is None:
        return scope.new_memo
    uid = str((body.get("metadata") or {}).get("uid", ""))
    return functools.partial(scope.memories.memo_of, uid)


def _backpressure(client: KubeClient, queueing: QueueingSettings) -> Backpressure | None:
    """Backpressure for the workers, unless disabled.

    Objects with daemons or timers are not held back before their first cycle (their daemons
    start in it, before its write: held back, a thousand daemons would start only as fast as
    the API server takes a thousand writes); their cycles defer the finalizer's write instead.
    """
    level = queueing.max_requests_in_flight
    return Backpressure(client.in_flight, level) if level else None


def _worker_limiter(limit: int | None) -> anyio.CapacityLimiter | None:
    return anyio.CapacityLimiter(limit) if limit else None
