"""The resources the operator serves: those found at start, and those of CRDs created later.

Every scope (the cluster, or one namespace) runs :func:`serve_group`, which starts one resource
task per served resource of that scope, starts more whenever :class:`ServedResources` grows, and
stops those it no longer has. :func:`follow_crds` changes it: it watches CustomResourceDefinitions
and re-resolves the handlers' selectors after every change, so a CRD applied after the operator
started is served without a restart; and when a CRD is deleted (or stops serving a version),
the watches of its resources stop at once, instead of failing with 404 until it comes back.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import anyio.abc

from anyop.engine.resource.serve_resource import ResourceScope, serve_resource
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
from anyop.kube.persistence import until_answered
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent, may_list

__all__ = ["CRDS", "ServedResources", "follow_crds", "serve_group", "withdrawn"]

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
INCOMPLETE_RETRY = 10.0
"""Seconds before an incomplete discovery is tried again (see :class:`ServedResources`)."""


class ServedResources:
    """The resources being served: more as CRDs appear, fewer as they are deleted.

    Args:
        resources: The resources found at start.
        said: The warnings of the discovery that found them (not repeated by rediscoveries
            while they hold).
        incomplete: Some group version did not answer that discovery while some selector is
            unresolved: :func:`follow_crds` discovers again (with a backoff) until it is not.
    """

    def __init__(
        self, resources: Iterable[Resource], *, said: set[str] | None = None,
        incomplete: bool = False,
    ) -> None:  # fmt: skip
        self.resources: list[Resource] = sorted(set(resources), key=str)
        self.said: set[str] = said if said is not None else set()
        self.incomplete = incomplete
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

    def remove(self, resources: Iterable[Resource]) -> list[Resource]:
        """Stop serving these resources; return those that were served."""
        gone = set(resources)
        removed = [r for r in self.resources if r in gone]
        if removed:
            self.resources = [r for r in self.resources if r not in gone]
            self.wake()
        return removed

    def wake(self) -> None:
        """Wake every group (to start new resources, or to notice the stop)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()


async def served_resources(
    client: KubeClient, registry: OperatorRegistry, said: set[str] | None = None
) -> tuple[list[Resource], bool]:
    """Discover the cluster's resources and pick those the handlers select; and whether the
    discovery was incomplete where it matters: a group version did not answer while some
    selector is unresolved (it may be that group's).

    Kopf's warnings name what is not served: unresolved selectors, ambiguous ones (several
    resources for one specific selector), resources that cannot be listed and watched, and those
    that cannot be patched while handlers keep state on their objects (changing handlers,
    daemons, timers); the latter are still served where only event handlers and indexes watch
    them, as those write nothing.

    Args:
        client: The API client.
        registry: The handlers.
        said: The warnings of the previous discovery: those are not logged again (it is
            updated in place to the warnings of this one).
    """
    failed: list[str] = []
    discovered = await discover(client, failed=failed)
    resolution = resolve(registry.watched_selectors(), discovered)
    unresolved = unresolved_message(resolution, discovered)
    messages = [unresolved, *ambiguous_message(resolution)]
    messages.append(nonwatchable_message(resolution))
    stateful = frozenset(r for r in resolution.nonpatchable if registry.keeps_state(r))
    if stateful:
        unpatchable = dataclasses.replace(resolution, nonpatchable=stateful)
        messages.append(nonpatchable_message(unpatchable))
    current = {message for message in messages if message}
    for message in messages:
        if message and (said is None or message not in said):
            logger.warning(message)
    if said is not None:
        said.clear()
        said.update(current)
    return sorted(resolution.resources - stateful, key=str), bool(failed and unresolved)


async def serve_group(
    template: ResourceScope,
    served: ServedResources,
    namespace: str | None,
    *,
    stopping: anyio.Event,
    namespaced: bool | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the resources of one scope until ``stopping`` is set.

    Args:
        template: The scope's settings, client and registry (its resource is replaced).
        served: The resources to serve: new ones are started as they come; those removed are
            stopped as at the operator's exit (daemons stopped, running cycles finished).
        namespace: The namespace, or ``None`` for the cluster.
        stopping: Once set (and ``served`` woken), the resource tasks stop and this returns.
        namespaced: Only namespaced (``True``) or cluster-scoped (``False``) resources;
            ``None``: all (cluster-wide serving).
        task_status: Reported ``started`` after the initial listing of every resource.
    """
    running: dict[Resource, _Serving] = {}
    stopped: dict[Resource, anyio.Event] = {}  # set when a removed resource's task has ended
    reported = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_all_when_set, stopping, running)
        while not stopping.is_set():
            changed = served.changed
            wanted = {r for r in served.resources if _belongs(r, namespaced)}
            for resource in [r for r in running if r not in wanted]:
                serving = running.pop(resource)
                serving.stop.set()
                stopped[resource] = serving.ended
            for resource in served.resources:
                if stopping.is_set():
                    break
                if resource in running or resource not in wanted:
                    continue
                where = namespace if resource.namespaced else None
                scope = dataclasses.replace(template, resource=resource, namespace=where)
                serving = running[resource] = _Serving(scope, after=stopped.pop(resource, None))
                if reported:  # not to hold the others while a previous task of it stops
                    tg.start_soon(serving.run)
                else:
                    await tg.start(serving.run)
            if not reported:
                reported = True
                task_status.started()
            await changed.wait()
        for serving in running.values():
            serving.stop.set()


async def _stop_all_when_set(stopping: anyio.Event, running: Mapping[Resource, _Serving]) -> None:
    """Stop every resource task of a group once the group is stopping, even one still at its
    first listing: the group waits for that listing, which may never succeed (a 403, say)."""
    await stopping.wait()
    for serving in running.values():
        serving.stop.set()


class _Serving:
    """One resource task of a group: it starts after the previous task of its resource ended."""

    def __init__(self, scope: ResourceScope, *, after: anyio.Event | None) -> None:
        self.scope = scope
        self.after = after
        self.stop = anyio.Event()
        self.ended = anyio.Event()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            if self.after is not None:
                await self.after.wait()
            await serve_resource(self.scope, self.stop, task_status=task_status)
        finally:
            self.ended.set()


def _belongs(resource: Resource, namespaced: bool | None) -> bool:
    return namespaced is None or bool(resource.namespaced) is namespaced


async def follow_crds(
    client: KubeClient,
    registry: OperatorRegistry,
    served: ServedResources,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Watch CRDs: serve the resources that the handlers select once they exist, and stop
    serving those whose CRD is deleted or no longer serves their version (forever).

    Without the permission to list CRDs, it warns and returns: the resources found at the start
    are served, and CRDs created or deleted later are noticed only at the next start.
    """
    listed = functools.partial(may_list, client, CRDS)
    if not await until_answered(listed, what="Listing the CRDs", logger=logger):
        logger.warning(
            "CustomResourceDefinitions cannot be listed (forbidden): resources whose CRDs are "
            "created or deleted while the operator runs are noticed only at its next start."
        )
        task_status.started()
        while served.incomplete:  # a group version that did not answer: asked again
            await anyio.sleep(INCOMPLETE_RETRY)
            await _rediscover(client, registry, served)
        return
    dirty = anyio.Event()

    async def handle(event: WatchEvent) -> None:
        gone = withdrawn(event.object, served.resources, deleted=event.type == "DELETED")
        if removed := served.remove(gone):
            names = ", ".join(str(resource) for resource in removed)
            logger.info(f"Stopped serving resources whose CRD is deleted or changed: {names}.")
        terminating = bool((event.object.get("metadata") or {}).get("deletionTimestamp"))
        if not event.listed and not terminating:  # a terminating CRD adds nothing to serve
            dirty.set()

    async with anyio.create_task_group() as tg:
        await tg.start(Watcher(client, CRDS).run, handle)
        task_status.started()
        while True:
            # An incomplete discovery (a group version that did not answer) is tried again
            # after INCOMPLETE_RETRY, even without a CRD change: its resources may be wanted.
            with anyio.move_on_after(INCOMPLETE_RETRY if served.incomplete else math.inf):
                await dirty.wait()
            await anyio.sleep(SETTLE_DELAY)
            dirty = anyio.Event()
            if not await _rediscover(client, registry, served):
                dirty.set()


async def _rediscover(
    client: KubeClient, registry: OperatorRegistry, served: ServedResources
) -> bool:
    """Discover again and serve what is new; ``False`` if the discovery failed (to retry)."""
    try:
        found, served.incomplete = await served_resources(client, registry, served.said)
    except Exception as error:  # discovery may fail while the apiserver changes
        logger.warning(f"Rediscovery after a CRD change failed; will retry: {error}")
        return False
    if new := served.add(found):
        names = ", ".join(str(resource) for resource in new)
        logger.info(f"Serving resources created after the start: {names}.")
    return True


def withdrawn(
    crd: Mapping[str, Any], served: Iterable[Resource], *, deleted: bool
) -> list[Resource]:
    """The served resources that this CRD no longer provides: all of its own when it is deleted,
    else those of the versions it does not serve (any more)."""
    spec = crd.get("spec") or {}
    if not deleted and not spec.get("versions"):
        return []  # not a CRD of apiextensions.k8s.io/v1: nothing to judge by
    group, plural = spec.get("group"), (spec.get("names") or {}).get("plural")
    versions = {v.get("name") for v in spec.get("versions") or () if v.get("served", True)}
    return [
        resource
        for resource in served
        if resource.group == group
        and resource.plural == plural
        and (deleted or resource.version not in versions)
    ]
