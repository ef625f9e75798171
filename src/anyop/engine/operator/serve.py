"""The operator's root: startup handlers, login, discovery, every resource in every scope, cleanup.

:func:`serve` is the whole operator. It runs inside the caller's task group tree (it installs no
signal handlers) and returns when its stop event is set or when it is cancelled.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
import re
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from anyop.engine.coordination.pause_gate import Gate, first_of
from anyop.engine.cycle.handler_calls import current_lifecycle
from anyop.engine.cycle.object_memories import Memories
from anyop.engine.executor import current_execution
from anyop.engine.indexer import Indexer, operator_indexes
from anyop.engine.invocation import DEFAULT_MAX_WORKERS
from anyop.engine.operator.activities import run_activity
from anyop.engine.operator.event_poster import EventPoster
from anyop.engine.operator.health import Health, current_health, serve_probes
from anyop.engine.operator.login import authenticate, keep_logged_in
from anyop.engine.operator.loop_watchdog import watch_loop_lag
from anyop.engine.operator.metrics_serving import metrics_serving, served_metrics
from anyop.engine.operator.peering_scopes import hold_peering_where_served
from anyop.engine.resource.serve_resource import ResourceScope, current_reports
from anyop.engine.serving.namespace_follower import NamespacePatterns, serve_namespaces
from anyop.engine.serving.scope_groups import (
    INCOMPLETE_RETRY,
    ServedResources,
    follow_crds,
    serve_group,
    served_resources,
)
from anyop.errors import ConfigError, ServerError, TooManyRequestsError
from anyop.handlers.bodies import Memo
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import OperatorIndexes
from anyop.handlers.lifecycles import LifeCycleFn
from anyop.handlers.registry import OperatorRegistry, get_default_registry
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.config import pod_namespace
from anyop.kube.resources import Resource
from anyop.metrics import Metrics, current_metrics
from anyop.settings import OperatorSettings
from anyop.threads import DaemonThreads, current_threads

if TYPE_CHECKING:  # imported when used: only operators that serve metrics need them
    from anyop.engine.operator.metrics_access import MetricsAccess

__all__ = [
    "CLEANUP_TIMEOUT",
    "Starting",
    "clusterwide_unless_namespaced",
    "lease_namespace",
    "relay",
    "serve",
    "single_error",
]

logger = logging.getLogger("anyop.engine")


CLEANUP_TIMEOUT = 30.0
"""Seconds the cleanup handlers may take at exit."""


async def serve(
    registry: OperatorRegistry | None = None,
    *,
    settings: OperatorSettings | None = None,
    namespaces: Collection[str | re.Pattern[str]] = (),
    clusterwide: bool = False,
    memo: Any = None,
    stop_event: anyio.Event | None = None,
    ready_event: anyio.Event | None = None,
    vault: Vault | None = None,
    indexes: OperatorIndexes | None = None,
    liveness_endpoint: str | None = None,
    metrics_endpoint: str | None = None,
    lifecycle: LifeCycleFn | None = None,
) -> None:
    """Run the operator until ``stop_event`` is set or the caller cancels it.

    This is the whole operator, as ``anyop run`` runs it: startup handlers, login, peering and
    leadership, admission webhooks, probes and metrics (when asked), the handlers, daemons and
    timers, and the cleanup handlers at the end, all in one root task group opened in the
    caller's task. It installs no signal handlers, and leaves no task behind when it returns.

    Args:
        registry: The handlers; the default registry if ``None``.
        settings: The operator's settings; the defaults if ``None``.
        namespaces: The namespaces to serve: exact names, globs (see
            :mod:`anyop.engine.serving.namespace_follower`), regexps.
        clusterwide: Serve the whole cluster instead. With neither, the whole cluster is served
            after a ``FutureWarning``, as Kopf does.
        memo: The operator's memo; every object gets a shallow copy of it.
        stop_event: Set it to stop the operator: gracefully once it serves, at once before (a
            stop during the startup handlers, the login or the discovery cancels them).
        ready_event: Set once every resource's initial listing has been dispatched.
        vault: Credentials kept by the caller; by default, the login handlers (or the built-in
            logins from the kubeconfig and the service account) fill a new vault, and run again
            whenever the API server rejects all of its credentials (see :mod:`.login`).
        indexes: The indexes to fill, when the caller shares them with its own activities.
        liveness_endpoint: Serve ``/healthz`` and ``/readyz`` there (a URL such as
            ``http://0.0.0.0:8080/healthz``); ``settings.server.liveness_endpoint`` if ``None``.
        metrics_endpoint: Serve the metrics there (``https://0.0.0.0:8443/metrics``: to
            readers that the API server authorises; ``http://`` only with
            ``settings.server.metrics_insecure``); ``settings.server.metrics_endpoint`` if
            ``None``.
        lifecycle: Orders the handlers of this operator's cycles instead of the default one
            (:func:`anyop.set_default_lifecycle`).

    Raises:
        ActivityError: A startup handler failed for good: nothing is served.
        LoginError: No login handler returned usable credentials.
        ConfigError: The metrics endpoint is plain HTTP without ``metrics_insecure`` (or
            malformed), or its certificate cannot be loaded.

    Guarantees:
        The probes (if any) are served from before the startup handlers until the end. The
        cleanup handlers run once at the end if the startup handlers succeeded, shielded, for
        at most :data:`CLEANUP_TIMEOUT` seconds. On stop, the watches stop first; running cycles
        get ``queueing.exit_timeout`` seconds, then they are cancelled. While a peer of a higher
        priority is alive, or while another replica holds the leadership
        (``settings.leadership.enabled``), nothing is watched and no handler runs
        (``ready_event`` is set anyway: a standby is healthy).
    """
    clusterwide = clusterwide_unless_namespaced(namespaces, clusterwide)
    registry = registry if registry is not None else get_default_registry()
    settings = settings or OperatorSettings()
    memo = Memo() if memo is None else memo
    indexes = indexes if indexes is not None else operator_indexes(registry)
    stop = stop_event or anyio.Event()
    ready = ready_event or anyio.Event()
    health = Health(registry, settings, memo=memo, indexes=indexes)
    endpoint = liveness_endpoint or settings.server.liveness_endpoint
    metrics_at = metrics_serving(metrics_endpoint or settings.server.metrics_endpoint, settings)
    metrics = served_metrics(health) if metrics_at else current_metrics.get()
    activity = functools.partial(
        run_activity, registry, settings=settings, memo=memo, indexes=indexes
    )
    starting = Starting(stop)
    scopes = _scopes(settings, namespaces, clusterwide)
    access = metrics_at.access if metrics_at else None
    launch = Launch(registry, settings, memo, indexes, scopes, stop, ready, starting, access)
    health_token, metrics_token = current_health.set(health), current_metrics.set(metrics)
    reports_token = current_reports.set(health.watching)
    execution_token = current_execution.set(settings.execution)  # sync code runs in its executor
    lifecycle_token = current_lifecycle.set(lifecycle)
    threads = DaemonThreads()  # its own threads: none of them outlives it (see anyop.threads)
    threads_token = current_threads.set(threads)
    try:
        async with _unwrapped(), anyio.create_task_group() as root:
            root.start_soon(starting.watch)
            if endpoint:
                await root.start(serve_probes, health, endpoint)
            if metrics_at and metrics is not None:
                await root.start(metrics_at.serve, metrics)
            with starting.scope:
                await activity(Activity.STARTUP)
                lag = settings.execution.loop_lag_threshold  # as the startup handlers left it
                await root.start(watch_loop_lag, lag, metrics)
                now_ready = functools.partial(setattr, health, "ready", True)
                root.start_soon(relay, ready.wait, now_ready)
                try:
                    await _serve_logging_in(launch, vault)
                finally:
                    health.ready = False
                    with anyio.move_on_after(CLEANUP_TIMEOUT, shield=True):
                        await activity(Activity.CLEANUP)
            root.cancel_scope.cancel()
    finally:
        current_health.reset(health_token)
        current_reports.reset(reports_token)
        current_metrics.reset(metrics_token)
        current_execution.reset(execution_token)
        current_lifecycle.reset(lifecycle_token)
        current_threads.reset(threads_token)
        threads.close()


def clusterwide_unless_namespaced(
    namespaces: Collection[str | re.Pattern[str]], clusterwide: bool
) -> bool:
    """Kopf's default: with neither namespaces nor ``clusterwide``, the whole cluster, after a
    ``FutureWarning`` (attributed to the caller of the function that asks)."""
    if clusterwide or namespaces:
        return clusterwide
    warnings.warn(
        "Absence of either namespaces or the cluster-wide flag: serving the whole cluster. "
        "Pass clusterwide=True (or namespaces=[...]) to silence this.",
        FutureWarning,
        stacklevel=3,
    )
    return True


@contextlib.asynccontextmanager
async def _unwrapped() -> AsyncIterator[None]:
    """The operator's one error as itself, not in the task groups' exception groups."""
    try:
        yield
    except BaseExceptionGroup as group:
        error = single_error(group)
        if error is group or not isinstance(error, Exception):
            raise
        raise error from None


class Starting:
    """A stop that comes before the operator serves cancels what it is doing (startup handlers,
    login, discovery, peering): nothing is handled yet, and those may wait or retry for long.

    Once the serving rounds begin (:meth:`serving`), a stop is graceful: the rounds see it.
    """

    def __init__(self, stop: anyio.Event) -> None:
        self.stop = stop
        self.scope = anyio.CancelScope()
        self._serving = False

    def serving(self) -> None:
        """From now on, the serving rounds stop the operator gracefully."""
        self._serving = True

    async def watch(self) -> None:
        await self.stop.wait()
        if not self._serving:
            logger.info("Stop is requested while starting. Cancelling the start-up.")
            self.scope.cancel()


async def relay(wait: Callable[[], Awaitable[Any]], then: Callable[[], Any]) -> None:
    """Call ``then()`` once ``wait()`` returns (a task: a flag or an event passed on)."""
    await wait()
    then()


@dataclasses.dataclass(frozen=True, slots=True)
class Launch:
    """What one :func:`serve` call serves, and the events it is driven by, passed down as one."""

    registry: OperatorRegistry
    settings: OperatorSettings
    memo: Any
    indexes: OperatorIndexes
    scopes: Scopes
    stop: anyio.Event
    ready: anyio.Event
    starting: Starting
    metrics_access: MetricsAccess | None = None
    """The metrics' :class:`~anyop.engine.operator.metrics_access.MetricsAccess`, if they are
    served securely: it reviews their readers with the operator's client once logged in."""


async def _serve_logging_in(launch: Launch, vault: Vault | None) -> None:
    """Log in (unless given a vault), keep logged in, and serve."""
    logins = dict(settings=launch.settings, memo=launch.memo, indexes=launch.indexes)
    relogin = vault is None
    if vault is None:
        vault = Vault()
        await authenticate(vault, launch.registry, **logins)
    async with anyio.create_task_group() as relogins:
        if relogin:
            again = functools.partial(keep_logged_in, vault, launch.registry, **logins)
            relogins.start_soon(again)
        await _serve_logged_in(launch, vault)
        relogins.cancel_scope.cancel()


async def _serve_logged_in(launch: Launch, vault: Vault) -> None:
    settings = launch.settings
    metrics = current_metrics.get()
    observer = metrics.request if metrics is not None else None
    async with open_client(vault, settings=settings, observer=observer) as client:
        with _reviewing(launch.metrics_access, client):
            await _serve_with(launch, client, metrics)


async def _serve_with(launch: Launch, client: KubeClient, metrics: Metrics | None) -> None:
    """Serve with the operator's client (logged in): discovery, Events, admission, scopes."""
    registry, settings = launch.registry, launch.settings
    said: set[str] = set()  # discovery's warnings, not repeated by rediscoveries
    try:
        found, incomplete = await served_resources(client, registry, said)
    except (ServerError, TooManyRequestsError) as error:
        # The API server's own documents (/api, /apis) failed beyond the retries: the operator
        # serves nothing yet, and discovers again as after a group version that failed. (One
        # that cannot be reached at all ends the operator, naming it: a wrong address is
        # likelier than an outage at the very start.)
        logger.warning(f"Discovery failed at the start (will retry every "
                       f"{INCOMPLETE_RETRY:g} s): {error}")  # fmt: skip
        found, incomplete = [], True
    served = ServedResources(found, said=said, incomplete=incomplete)
    limiter = _thread_limiter(settings)
    if (health := current_health.get()) is not None:
        health.limiter = limiter  # its waiting calls go to /metrics
    new_memo = functools.partial(copy.copy, launch.memo)  # a shallow copy for every object
    template = ResourceScope(
        client,
        Resource("", "v1", "-"),
        None,
        registry,
        settings,
        new_memo=new_memo,
        memories=Memories(new_memo),  # kept across the pauses, as long as serve() runs
        limiter=limiter,
        indexer=Indexer(registry, settings, limiter=limiter, indexes=launch.indexes),
        metrics=metrics,
        stop_reason=functools.partial(_stop_reason, launch.stop),
    )
    poster = EventPoster(client, settings)
    posted = anyio.Event()
    with poster.installed():
        async with anyio.create_task_group() as posting:
            posting.start_soon(poster.run, posted)
            try:
                async with _admission(template, registry, limiter):
                    await _serve_gated(launch, template, served)
            finally:
                posted.set()  # queued Events get a moment to be posted


def _reviewing(
    access: MetricsAccess | None, client: KubeClient
) -> contextlib.AbstractContextManager[None]:
    """While the block runs, the metrics' readers are reviewed with ``client`` (if secure)."""
    return contextlib.nullcontext() if access is None else access.using(client)


def _admission(
    template: ResourceScope, registry: OperatorRegistry, limiter: anyio.CapacityLimiter
) -> contextlib.AbstractAsyncContextManager[None]:
    """Serve the admission webhooks while the block runs, if there are any.

    The webhook machinery (servers, TLS, reviews) is imported only by operators that use it.
    """
    if not registry.webhooks.handlers:
        return contextlib.nullcontext()
    from anyop.engine.operator.admission_reviews import open_admission

    return open_admission(
        template.client,
        registry,
        template.settings,
        new_memo=template.new_memo,
        memories=template.memories,
        indexer=template.indexer,
        limiter=limiter,
    )


def _stop_reason(stop: anyio.Event) -> DaemonStoppingReason:
    if stop.is_set():
        return DaemonStoppingReason.OPERATOR_EXITING
    return DaemonStoppingReason.OPERATOR_PAUSING


@dataclasses.dataclass(frozen=True)
class Scopes:
    """What to serve: namespace patterns or the whole cluster; whether CRDs are followed."""

    patterns: NamespacePatterns
    clusterwide: bool
    follow: bool


def _scopes(
    settings: OperatorSettings,
    namespaces: Collection[str | re.Pattern[str]],
    clusterwide: bool,
) -> Scopes:
    """The scopes to serve; with ``scanning.disabled``, nothing is discovered while running.

    Then CRDs created or deleted later are not noticed, and namespace patterns are ignored (Kopf's
    meaning): only the exact names among them are served, with a warning about the others.
    """
    patterns = NamespacePatterns(namespaces)
    follow = not settings.scanning.disabled
    if settings.scanning.disabled and not clusterwide and patterns.exact_names is None:
        names = patterns.plain_names
        ignored = [i for i in namespaces if not isinstance(i, str) or i not in names]
        logger.warning(
            f"Scanning is disabled (settings.scanning.disabled): the namespace patterns "
            f"{ignored!r} are ignored; serving only {names!r}."
        )
        patterns = NamespacePatterns(names)
    return Scopes(patterns, clusterwide, follow)


async def _serve_gated(launch: Launch, template: ResourceScope, served: ServedResources) -> None:
    """Peer and elect a leader beside the serving rounds; serve only while the gate is open."""
    scopes = launch.scopes
    clusterwide = scopes.clusterwide
    client, settings = template.client, template.settings
    exact = scopes.patterns.exact_names
    leadership = settings.leadership
    _check_sharding(template)
    gate = Gate(warm=leadership.enabled and leadership.keep_watching)
    template = dataclasses.replace(template, gate=gate)
    async with anyio.create_task_group() as holders:
        shared = settings.peering.shared or settings.sharding.enabled
        peering = settings.peering.model_copy(update={"clusterwide": clusterwide, "shared": shared})
        hold = functools.partial(
            hold_peering_where_served, client, peering, scopes.patterns,
            clusterwide=clusterwide, gate=gate,
        )  # fmt: skip
        await holders.start(hold)
        if settings.leadership.enabled:
            # Imported only by operators that elect a leader.
            from anyop.engine.coordination.lease_keeper import hold_leadership

            namespace = lease_namespace(settings.leadership.lease_namespace, exact)
            elect = functools.partial(
                hold_leadership, client, settings.leadership, namespace, gate=gate
            )
            await holders.start(elect)
        if settings.sharding.enabled:
            template = await _join_shards(template, holders, exact)
        serve_scopes = functools.partial(_serve_scopes, template, served, scopes)
        launch.starting.serving()  # from here, the rounds stop gracefully
        await _serve_rounds(launch, gate, serve_scopes)
        holders.cancel_scope.cancel()


async def _join_shards(
    template: ResourceScope, holders: anyio.abc.TaskGroup, exact: list[str] | None
) -> ResourceScope:
    """Be a member of the shard group beside the serving rounds; serve only our share."""
    from anyop.engine.coordination.shard_keeper import hold_shard  # only sharded operators

    settings = template.settings
    namespace = lease_namespace(settings.sharding.lease_namespace, exact)
    gate = template.gate
    assert gate is not None
    hold = functools.partial(hold_shard, template.client, settings.sharding, namespace, gate=gate)
    shard = await holders.start(hold)
    if (health := current_health.get()) is not None:
        health.shard = shard  # its size and members go to /metrics
    return dataclasses.replace(template, shard=shard)


def _check_sharding(template: ResourceScope) -> None:
    """Refuse what sharding cannot do, before any Lease is taken."""
    settings = template.settings
    if not settings.sharding.enabled:
        return
    settings.sharding.check()
    if settings.leadership.enabled:
        raise ConfigError(
            "settings.sharding.enabled and settings.leadership.enabled exclude each other: "
            "sharded replicas all serve (each its share), elected ones one at a time."
        )


async def _serve_rounds(
    launch: Launch, gate: Gate, serve_scopes: Callable[..., Awaitable[None]]
) -> None:
    """Serve in rounds: each starts with fresh listings and ends when stopped or paused."""
    stop, ready_event = launch.stop, launch.ready
    while not stop.is_set():
        if not gate.is_open():
            ready_event.set()  # paused, or standing by: healthy, and ready as such
            logger.debug(f"Paused: {gate.reasons or 'the leadership is not renewed'}.")
            await first_of(stop.wait, gate.wait_open)
            continue
        ending = anyio.Event()
        with gate.serving_round(), gate.round_scope():
            async with anyio.create_task_group() as tg:
                tg.start_soon(_set_after_first, ending, stop.wait, gate.wait_paused)
                await serve_scopes(stop_event=ending, ready_event=ready_event)
                tg.cancel_scope.cancel()


async def _set_after_first(event: anyio.Event, *waits: Callable[[], Awaitable[Any]]) -> None:
    await first_of(*waits)
    event.set()


def lease_namespace(configured: str | None, served: list[str] | None) -> str:
    """Where the leadership Lease lives: as configured, else the pod's namespace, else the first
    served namespace, else ``default``."""
    return configured or pod_namespace() or (served[0] if served else "default")


async def _serve_scopes(
    template: ResourceScope,
    served: ServedResources,
    scopes: Scopes,
    *,
    stop_event: anyio.Event,
    ready_event: anyio.Event | None,
) -> None:
    """Start every scope (and the namespace and CRD following), report readiness, wait for stop.

    A stop is graceful at any moment: even while the initial listings run, the resources stop
    their watches, and those listed stop their workers and daemons in turn.
    """
    patterns, clusterwide, follow = scopes.patterns, scopes.clusterwide, scopes.follow
    stopping = anyio.Event()
    following = anyio.CancelScope()

    async def stop_when_asked() -> None:
        await stop_event.wait()
        logger.info("Stop is requested. Stopping the watches and the workers.")
        following.cancel()
        stopping.set()
        served.wake()

    async def follow_crds_until_stopped() -> None:
        with following:
            await follow_crds(template.client, template.registry, served)

    group = functools.partial(serve_group, template, served, stopping=stopping)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_asked)
        if follow:
            tg.start_soon(follow_crds_until_stopped)
        if clusterwide:
            await tg.start(functools.partial(group, None))
        else:
            await tg.start(functools.partial(group, None, namespaced=False))
            exact = patterns.exact_names
            for namespace in exact or ():
                await tg.start(functools.partial(group, namespace, namespaced=True))
            if exact is None:
                await tg.start(
                    functools.partial(_discover, template, served, patterns, stopping=stopping)
                )
        if not stopping.is_set():
            if template.indexer is not None:
                template.indexer.ready.set()  # every resource is listed, and indexed if it is
            if ready_event is not None:
                ready_event.set()
            logger.debug("The operator is ready: %d resources.", len(served.resources))
        await stopping.wait()


async def _discover(
    template: ResourceScope,
    served: ServedResources,
    patterns: NamespacePatterns,
    *,
    stopping: anyio.Event,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the namespaced resources in every namespace matching the patterns."""

    async def serve_one(namespace: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        await serve_group(
            template, served, namespace, stopping=stopping, namespaced=True, task_status=task_status
        )

    await serve_namespaces(
        template.client,
        patterns,
        serve_one,
        stopping=stopping,
        settings=template.settings,
        task_status=task_status,
    )


def _thread_limiter(settings: OperatorSettings) -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(settings.execution.max_workers or DEFAULT_MAX_WORKERS)


def single_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real error inside nested task-group errors, or the group if there are several."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop()
        if isinstance(error, BaseExceptionGroup):
            pending.extend(error.exceptions)
        else:
            leaves.append(error)
    return leaves[0] if len(leaves) == 1 else group
