"""The resources the operator serves: those found at start, and those of CRDs created later.

Every scope (the cluster, or one namespace) runs :func:`serve_group`, which starts one resource
task per served resource of that scope and starts more whenever :class:`ServedResources` grows.
:func:`follow_crds` makes it grow: when the handlers name resources that do not exist yet (or
select by category or ``EVERYTHING``), it watches CustomResourceDefinitions and re-resolves the
handlers' selectors after every change, so a CRD applied after the operator started is served
without a restart.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

import anyio
import anyio.abc

from anyop.engine.resources import ResourceScope, serve_resource
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import (
    ambiguous_message,
    nonpatchable_message,
    nonwatchable_message,
    resolve,
    unresolved_message,
)
from anyop.kube.client import KubeClient
from anyop.kube.discovery import discover
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent

__all__ = ["CRDS", "ServedResources", "follow_crds", "needs_following", "serve_group"]

logger = logging.getLogger("anyop.engine")

CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    kind="CustomResourceDefinition",
    namespaced=False,
    verbs=frozenset({"list", "watch"}),
)

SETTLE_DELAY = 1.0
"""Seconds to let a burst of CRD changes settle (and a new CRD get served) before rediscovery."""


class ServedResources:
    """The resources being served; it only grows (removed CRDs fail their watches, retried).

    Args:
        resources: The resources found at start.
    """

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.resources: list[Resource] = sorted(set(resources), key=str)
        self._changed = anyio.Event()

    @property
    def changed(self) -> anyio.Event:
        """Set at the next change (take it before reading :attr:`resources`)."""
        return self._changed

    def add(self, resources: Iterable[Resource]) -> list[Resource]:
        """Serve these resources too; return those that are new."""
        known = set(self.resources)
        new = sorted({r for r in resources if r not in known}, key=str)
        if new:
            self.resources = sorted([*self.resources, *new], key=str)
            self.wake()
        return new

    def wake(self) -> None:
        """Wake every group (to start new resources, or to notice the stop)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()


async def served_resources(client: KubeClient, registry: OperatorRegistry) -> list[Resource]:
    """Discover the cluster's resources and pick those the handlers select.

    Kopf's warnings name what is not served: unresolved selectors, ambiguous ones (several
    resources for one specific selector), resources that cannot be listed and watched, and those
    that cannot be patched while handlers keep state on their objects (changing handlers,
    daemons, timers); the latter are still served where only event handlers and indexes watch
    them, as those write nothing.
    """
    resolution = resolve(registry.watched_selectors(), await discover(client))
    messages = [unresolved_message(resolution), *ambiguous_message(resolution)]
    messages.append(nonwatchable_message(resolution))
    stateful = frozenset(r for r in resolution.nonpatchable if registry.keeps_state(r))
    if stateful:
        unpatchable = dataclasses.replace(resolution, nonpatchable=stateful)
        messages.append(nonpatchable_message(unpatchable))
    for message in messages:
        if message:
            logger.warning(message)
    return sorted(resolution.resources - stateful, key=str)


def needs_following(registry: OperatorRegistry, served: Iterable[Resource]) -> bool:
    """Whether CRDs created later could add resources: a selector is unresolved or not specific."""
    resources = list(served)
    return any(
        not selector.is_specific or not selector.select(resources)
        for selector in registry.watched_selectors()
    )


async def serve_group(
    template: ResourceScope,
    served: ServedResources,
    namespace: str | None,
    stopping: anyio.Event,
    *,
    namespaced: bool | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the resources of one scope until ``stopping`` is set.

    Args:
        template: The scope's settings, client and registry (its resource is replaced).
        served: The resources to serve; new ones are started as they come.
        namespace: The namespace, or ``None`` for the cluster.
        stopping: Once set (and ``served`` woken), the resource tasks stop and this returns.
        namespaced: Only namespaced (``True``) or cluster-scoped (``False``) resources;
            ``None``: all (cluster-wide serving).
        task_status: Reported ``started`` after the initial listing of every resource.
    """
    started: set[Resource] = set()
    reported = False
    async with anyio.create_task_group() as tg:
        while not stopping.is_set():
            changed = served.changed
            for resource in served.resources:
                if resource in started or not _belongs(resource, namespaced):
                    continue
                started.add(resource)
                where = namespace if resource.namespaced else None
                scope = dataclasses.replace(template, resource=resource, namespace=where)
                await tg.start(serve_resource, scope, stopping)
            if not reported:
                reported = True
                task_status.started()
            await changed.wait()


def _belongs(resource: Resource, namespaced: bool | None) -> bool:
    return namespaced is None or bool(resource.namespaced) is namespaced


async def follow_crds(
    client: KubeClient,
    registry: OperatorRegistry,
    served: ServedResources,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Watch CRDs and serve the resources that the handlers select once they exist (forever)."""
    dirty = anyio.Event()

    async def handle(event: WatchEvent) -> None:
        if not event.listed:
            dirty.set()

    async with anyio.create_task_group() as tg:
        await tg.start(Watcher(client, CRDS).run, handle)
        task_status.started()
        while True:
            await dirty.wait()
            await anyio.sleep(SETTLE_DELAY)
            dirty = anyio.Event()
            try:
                new = served.add(await served_resources(client, registry))
            except Exception as error:  # discovery may fail while the apiserver changes
                logger.warning(f"Rediscovery after a CRD change failed; will retry: {error}")
                dirty.set()
                continue
            if new:
                names = ", ".join(str(resource) for resource in new)
                logger.info(f"Serving resources created after the start: {names}.")
