"""The operator's root: log in, discover, and serve every resource in every scope.

:func:`serve` runs inside the caller's task group tree (it installs no signal handlers) and
returns when its stop event is set or when it is cancelled.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from collections.abc import Callable, Collection
from typing import Any

import anyio
import anyio.abc

from anyop.engine.indexes import Indexer
from anyop.engine.invocation import DEFAULT_MAX_WORKERS
from anyop.engine.namespaces import NamespacePatterns, serve_namespaces
from anyop.engine.posting import EventPoster
from anyop.engine.probes import current_health
from anyop.engine.resources import ResourceScope
from anyop.engine.served import (
    ServedResources,
    follow_crds,
    needs_following,
    serve_group,
    served_resources,
)
from anyop.errors import ConfigError
from anyop.handlers.bodies import Memo
from anyop.handlers.registry import OperatorRegistry, get_default_registry
from anyop.kube.auth import Vault, login_with_kubeconfig, login_with_service_account
from anyop.kube.client import open_client
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings

__all__ = ["login", "serve"]

logger = logging.getLogger("anyop.engine")


async def serve(
    *,
    registry: OperatorRegistry | None = None,
    settings: OperatorSettings | None = None,
    namespaces: Collection[str | re.Pattern[str]] = (),
    clusterwide: bool = False,
    memo: Any = None,
    stop_event: anyio.Event | None = None,
    ready_event: anyio.Event | None = None,
    vault: Vault | None = None,
) -> None:
    """Run the operator until ``stop_event`` is set or the caller cancels it.

    Args:
        registry: The handlers; the default registry if ``None``.
        settings: The operator's settings; the defaults if ``None``.
        namespaces: The namespaces to serve: exact names, globs (see :mod:`.namespaces`), regexps.
        clusterwide: Serve the whole cluster instead.
        memo: The operator's memo; every object gets a shallow copy of it.
        stop_event: Set it to stop the operator gracefully.
        ready_event: Set once every resource's initial listing has been dispatched.
        vault: Credentials; by default filled from the kubeconfig or the service account.

    Raises:
        ConfigError: Neither namespaces nor ``clusterwide`` is given, or no login works.

    Guarantees:
        On stop, the watches stop first; running cycles get ``queueing.exit_timeout`` seconds,
        then they are cancelled.
    """
    if not clusterwide and not namespaces:
        raise ConfigError("Either namespaces or clusterwide=True must be given to serve().")
    registry = registry if registry is not None else get_default_registry()
    settings = settings or OperatorSettings()
    vault = vault if vault is not None else await login()
    async with open_client(vault, settings=settings) as client:
        served = ServedResources(await served_resources(client, registry))
        limiter = _thread_limiter(settings)
        indexer = Indexer(registry, settings, limiter)
        if (health := current_health.get()) is not None:
            health.indexes = indexer.kwargs  # the probes see the live indexes from now on
        template = ResourceScope(
            client,
            Resource("", "v1", "-"),
            None,
            registry,
            settings,
            new_memo=_memo_factory(Memo() if memo is None else memo),
            limiter=limiter,
            indexer=indexer,
        )
        follow = needs_following(registry, served.resources)
        scopes = (namespaces, clusterwide, follow)
        poster = EventPoster(client, settings)
        posted = anyio.Event()
        with poster.installed():
            async with anyio.create_task_group() as posting:
                posting.start_soon(poster.run, posted)
                try:
                    await _serve_scopes(template, served, scopes, stop_event, ready_event)
                finally:
                    posted.set()  # queued Events get a moment to be posted


async def login() -> Vault:
    """A vault with the credentials of the kubeconfig, or else of the pod's service account.

    Raises:
        ConfigError: Neither is available.
    """
    vault = Vault()
    for key, login_fn in (
        ("kubeconfig", login_with_kubeconfig),
        ("service-account", login_with_service_account),
    ):
        info = await login_fn()
        if info is not None:
            await vault.populate({key: info})
            return vault
    raise ConfigError("No credentials: neither a kubeconfig nor a service account was found.")


async def _serve_scopes(
    template: ResourceScope,
    served: ServedResources,
    scopes: tuple[Collection[str | re.Pattern[str]], bool, bool],
    stop_event: anyio.Event | None,
    ready_event: anyio.Event | None,
) -> None:
    """Start every scope (and the namespace and CRD following), report readiness, wait for stop."""
    namespaces, clusterwide, follow = scopes
    stopping = anyio.Event()
    patterns = NamespacePatterns(namespaces)
    group = functools.partial(serve_group, template, served, stopping=stopping)
    async with anyio.create_task_group() as tg, anyio.create_task_group() as followers:
        if follow:
            await followers.start(follow_crds, template.client, template.registry, served)
        if clusterwide:
            await tg.start(functools.partial(group, None))
        else:
            await tg.start(functools.partial(group, None, namespaced=False))
            exact = patterns.exact_names
            for namespace in exact or ():
                await tg.start(functools.partial(group, namespace, namespaced=True))
            if exact is None:
                await tg.start(_discover, template, served, patterns, stopping)
        if template.indexer is not None:
            template.indexer.ready.set()  # every resource is listed, and indexed if it is
        if ready_event is not None:
            ready_event.set()
        logger.debug("The operator is ready: %d resources.", len(served.resources))
        if stop_event is None:
            await anyio.sleep_forever()
        else:
            await stop_event.wait()
        logger.info("Stop is requested. Stopping the watches and the workers.")
        followers.cancel_scope.cancel()
        stopping.set()
        served.wake()


async def _discover(
    template: ResourceScope,
    served: ServedResources,
    patterns: NamespacePatterns,
    stopping: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the namespaced resources in every namespace matching the patterns."""

    async def serve_one(namespace: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        group = functools.partial(serve_group, template, served, namespace, stopping)
        await group(namespaced=True, task_status=task_status)

    await serve_namespaces(
        template.client,
        patterns,
        serve_one,
        stopping,
        settings=template.settings,
        task_status=task_status,
    )


def _memo_factory(memo: Any) -> Callable[[], Any]:
    """Each object gets a shallow copy of the operator's memo."""

    def new() -> Any:
        return copy.copy(memo)

    return new


def _thread_limiter(settings: OperatorSettings) -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(settings.execution.max_workers or DEFAULT_MAX_WORKERS)
