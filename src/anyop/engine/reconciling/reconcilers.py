"""The reconcilers of one resource in one scope, opened beside its Kopf-style handling.

:func:`open_controllers` resolves the owned resources, starts a :class:`.Controller` per
reconciler (its children's watches listed before it yields), and stops them at the exit as the
resource's workers stop: running calls get ``queueing.exit_timeout``, then they are cancelled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from anyop.engine.cycle.object_slots import CycleFn
from anyop.engine.reconciling.controller import Controller, ControllerScope
from anyop.handlers.records import ReconcilingHandler
from anyop.handlers.selectors import resolve
from anyop.kube.client import KubeClient
from anyop.kube.discovery import discover
from anyop.kube.resources import Resource

__all__ = ["Controllers", "MakeWorkers", "open_controllers", "owned_resources"]

logger = logging.getLogger("anyop.engine")

MakeWorkers = Callable[[CycleFn, anyio.abc.TaskGroup], Any]
"""Makes an object's workers (an ``ObjectWorkers``) for a controller's calls in a task group."""


class Controllers:
    """The running reconcilers of one resource in one scope.

    Attributes:
        running: The controllers (one per reconciler whose owned resources all resolved).
    """

    def __init__(self, running: Sequence[Controller]) -> None:
        self.running = list(running)

    def observe(self, body: Mapping[str, Any], *, deleted: bool) -> None:
        """Give every reconciler the object's new state (from the resource's watch)."""
        for controller in self.running:
            controller.observe(body, deleted=deleted)

    def release(self, uid: str, deadline: float = math.inf) -> None:
        """Hand the object over to another replica (sharding) in every reconciler."""
        for controller in self.running:
            controller.release(uid, deadline)

    def held(self) -> set[str]:
        """The objects that any reconciler knows or has workers for."""
        return {uid for controller in self.running for uid in controller.held()}

    def holds(self, uid: str) -> bool:
        """Whether any reconciler knows the object or has a worker for it."""
        return any(controller.holds(uid) for controller in self.running)


async def owned_resources(
    client: KubeClient, handlers: Sequence[ReconcilingHandler]
) -> dict[ReconcilingHandler, dict[str, Resource]]:
    """The owned resources of each reconciler, by the names it declared. A reconciler whose
    ``owns`` names a resource that is not served, or several, is left out with an error."""
    if not any(handler.owns for handler in handlers):
        return {handler: {} for handler in handlers}
    selectors = [selector for handler in handlers for selector in handler.owns]
    resolution = resolve(selectors, await discover(client))
    found: dict[ReconcilingHandler, dict[str, Resource]] = {}
    for handler in handlers:
        owned: dict[str, Resource] = {}
        for name, selector in zip(handler.owned_names, handler.owns, strict=True):
            resources = sorted(resolution.served.get(selector, frozenset()), key=str)
            if len(resources) != 1:
                problem = "no served resource" if not resources else f"several: {resources}"
                logger.error(f"{handler} is not served: owns={name!r} matches {problem}.")
                break
            owned[name] = resources[0]
        else:
            found[handler] = owned
    return found


@contextlib.asynccontextmanager
async def open_controllers(
    scope: ControllerScope,
    handlers: Sequence[ReconcilingHandler],
    *,
    workers: MakeWorkers,
    exit_timeout: float,
) -> AsyncIterator[Controllers]:
    """Run the resource's reconcilers while the block runs.

    Args:
        scope: The resource and scope (its ``owned`` is filled per reconciler).
        handlers: The resource's reconcilers.
        workers: Makes each controller's workers.
        exit_timeout: Seconds the running calls get at the exit.
    """
    if not handlers:
        yield Controllers([])
        return
    owned = await owned_resources(scope.client, handlers)
    async with anyio.create_task_group() as tg:
        watching = anyio.CancelScope()
        controllers = [
            Controller(_with_owned(scope, resources), handler)
            for handler, resources in owned.items()
        ]
        for controller in controllers:
            controller.workers = workers(controller.cycle, tg)
        tg.start_soon(_watch_all, controllers, watching)
        try:
            yield Controllers(controllers)
        finally:
            watching.cancel()
            exiting = anyio.current_time() + exit_timeout
            for controller in controllers:
                if controller.workers is not None:
                    controller.workers.close(exiting)
            tg.cancel_scope.deadline = exiting


async def _watch_all(controllers: Sequence[Controller], scope: anyio.CancelScope) -> None:
    with scope:
        async with anyio.create_task_group() as tg:
            for controller in controllers:
                await tg.start(controller.run)
            await anyio.sleep(math.inf)


def _with_owned(scope: ControllerScope, owned: Mapping[str, Resource]) -> ControllerScope:
    return dataclasses.replace(scope, owned=owned)
