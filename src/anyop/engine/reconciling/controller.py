"""One reconciler of one resource in one scope: the children's watches and the calls.

:class:`Controller` keeps the latest body of every object (fed by the resource's own watch,
:meth:`Controller.observe`), watches the owned resources into a :class:`.ChildrenIndex`, and
dispatches an object to its worker (an :class:`~anyop.engine.resource.workers.ObjectWorkers`:
the latest state wins, one call at a time) whenever the object, or one of its children,
changes. :meth:`Controller.cycle` is one call: the finalizer, the wait for the previous call's
writes of children, the user's function, its ``patch``, and the verdict (:mod:`.decisions`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import random
import time
from collections.abc import Mapping
from typing import Any, Protocol

import anyio
import anyio.abc

from anyop.engine.cycle.handler_calls import common_kwargs
from anyop.engine.cycle.object_slots import CycleFn, CycleResult, ObjectSlot
from anyop.engine.indexer import Indexer
from anyop.engine.invocation import invoke
from anyop.engine.reconciling.child_api import ChildrenApi
from anyop.engine.reconciling.child_writes import Written, echoes, seen
from anyop.engine.reconciling.children import (
    ChildrenIndex,
    controller_uid,
    not_older,
    version_of,
)
from anyop.engine.reconciling.decisions import Verdict, finalizer_patch, judge, label_selector
from anyop.engine.reconciling.echoes import after_write, meaning
from anyop.errors import AnyopError, ConflictError
from anyop.handlers.causes import ResourceCause
from anyop.handlers.outcomes import Requeue
from anyop.handlers.records import ReconcilingHandler
from anyop.kube.client import KubeClient
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent
from anyop.logs import LocalObjectLogger, object_logger, object_ref
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings

__all__ = ["Controller", "ControllerScope", "Workers"]

logger = logging.getLogger("anyop.engine")


class Workers(Protocol):
    """What a controller needs of its objects' workers (``ObjectWorkers``)."""

    @property
    def busy(self) -> int:
        """How many objects have a call running or due."""
        ...

    def dispatch(self, body: Mapping[str, Any]) -> ObjectSlot:
        """Hand an object's latest body to its worker."""
        ...

    def close(self, deadline: float = math.inf) -> None:
        """Stop: waiting workers exit now, running calls are cancelled at the deadline."""
        ...

    @property
    def slots(self) -> Mapping[str, ObjectSlot]:
        """The objects that have a worker slot."""
        ...

    def release(self, uid: str, deadline: float = math.inf) -> None:
        """Hand an object over: no new call; a running one finishes or is cancelled at the
        deadline; then its slot goes."""
        ...


@dataclasses.dataclass(frozen=True)
class ControllerScope:
    """What a controller serves, and with what.

    Attributes:
        client: The API client.
        resource: The reconciled objects' resource.
        namespace: One namespace, or ``None`` for the cluster.
        owned: The owned resources, by the names the reconciler declared.
        settings: The operator's settings.
        limiter: Bounds the threads of sync reconcilers.
        indexer: The ``@anyop.index`` indexes (kwargs), if any.
        metrics: The operator's metrics, if it has any.
    """

    client: KubeClient
    resource: Resource
    namespace: str | None
    owned: Mapping[str, Resource]
    settings: OperatorSettings
    limiter: anyio.CapacityLimiter | None = None
    indexer: Indexer | None = None
    metrics: Metrics | None = None


@dataclasses.dataclass(eq=False, slots=True)
class _Object:
    """What a controller keeps about one object between its calls."""

    failures: int = 0
    """Failed calls in a row (the backoff's step)."""
    handled: Mapping[str, Any] | None = None
    """The meaning (:func:`.meaning`) of the state that the running or last call saw, as its
    own writes left it: a state that means this calls nothing."""
    writing: list[Mapping[str, Any]] = dataclasses.field(default_factory=list)
    """The meanings that our writes in flight will leave (their echoes may come first)."""
    writes: list[Written] = dataclasses.field(default_factory=list)
    """The running or previous call's writes of children, until the watch shows them."""
    deadline: float = 0.0
    """When to stop waiting for them and read the children from the API."""


class Controller:
    """One reconciler for one resource in one scope.

    Args:
        scope: What it serves.
        handler: The reconciler.

    Guarantees:
        An object is dispatched on each change of it, of a child (by controller reference) or a
        child's disappearance, and once after the children are listed. A change of the object
        is decided by content (:mod:`.echoes`): the echoes of its own calls' writes call
        nothing, any other change does, whatever its resourceVersion. Calls see every child
        that earlier calls wrote through ``api``; no call starts for an object whose deletion
        the watch has shown.
    """

    def __init__(self, scope: ControllerScope, handler: ReconcilingHandler) -> None:
        self.scope = scope
        self.handler = handler
        self.name = f"{scope.resource}/{handler.id}"
        self.index = ChildrenIndex(handler.owned_names)
        self.workers: Workers | None = None
        self._parents: dict[str, Mapping[str, Any]] = {}
        self._objects: dict[str, _Object] = {}
        self._ready = False
        self._changed = anyio.Event()

    @property
    def cycle(self) -> CycleFn:
        """One call for an object (what its worker runs)."""
        return self._cycle

    # -- feeding --------------------------------------------------------------------------------

    def observe(self, body: Mapping[str, Any], *, deleted: bool) -> None:
        """Take the object's new state from its resource's watch; dispatch it if it changed
        more than our own write did."""
        uid = _uid(body)
        if deleted:
            self._parents.pop(uid, None)
            self._dispatch(uid, body)
            return
        self._parents[uid] = body
        if not self._handled(uid, body):
            self._dispatch(uid, body)

    def _handled(self, uid: str, body: Mapping[str, Any]) -> bool:
        """Whether a state means what a call has seen or what our own writes leave."""
        state = self._objects.get(uid)
        if state is None or state.handled is None:
            return False
        now = meaning(body, status=self.handler.status_changes)
        return now == state.handled or now in state.writing

    def release(self, uid: str, deadline: float = math.inf) -> None:
        """Hand the object over to another replica (sharding): its children's events no longer
        call it, and a running call finishes (or is cancelled at ``deadline``)."""
        self._parents.pop(uid, None)
        self._objects.pop(uid, None)
        if self.workers is not None:
            self.workers.release(uid, deadline)

    def held(self) -> set[str]:
        """The objects it knows or has workers for."""
        return {*self._parents, *(self.workers.slots if self.workers is not None else ())}

    def holds(self, uid: str) -> bool:
        """Whether it knows the object or has a worker for it (as :meth:`held`, for one)."""
        return uid in self._parents or (self.workers is not None and uid in self.workers.slots)

    def _dispatch(self, uid: str, body: Mapping[str, Any]) -> None:
        if self._ready and self.workers is not None:
            self.workers.dispatch(self._parents.get(uid, body))

    async def _child_event(self, name: str, event: WatchEvent) -> None:
        deleted = event.type == "DELETED"
        for parent in self.index.update(name, event.object, deleted=deleted):
            state = self._objects.get(parent)
            if state is not None and echoes(state.writes, name, event.object, deleted=deleted):
                continue  # our own write: the call that waits for it sees it
            if parent in self._parents:
                self._dispatch(parent, self._parents[parent])
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Watch the children until cancelled; ``started`` once they are listed (then the known
        objects are dispatched: every object is reconciled once at start)."""
        selector = label_selector(self.handler.child_labels)
        async with anyio.create_task_group() as tg:
            for name, resource in self.scope.owned.items():
                namespace = self.scope.namespace if resource.namespaced else None
                watcher = Watcher(
                    self.scope.client,
                    resource,
                    namespace=namespace,
                    label_selector=selector,
                    settings=self.scope.settings,
                )
                await tg.start(watcher.run, functools.partial(self._child_event, name))
            self._ready = True
            for uid, body in list(self._parents.items()):
                self._dispatch(uid, body)
            task_status.started()

    # -- one call -------------------------------------------------------------------------------

    async def _cycle(self, slot: ObjectSlot, dispatched: Mapping[str, Any]) -> CycleResult:
        body = self._parents.get(slot.uid)
        if body is None:
            self._objects.pop(slot.uid, None)
            return CycleResult(gone=True, deleted=True)
        state = self._objects.setdefault(slot.uid, _Object())
        state.handled = meaning(body, status=self.handler.status_changes)
        started = time.monotonic()
        try:
            verdict = await self._call(slot, body, state)
        except ConflictError:  # our finalizer's write met a newer state: its event comes
            return CycleResult()
        except AnyopError as e:  # the engine's own writes failed: a failure like any other
            state.failures += 1
            verdict = self._judge(e, state)
            object_logger(body).log(verdict.level, verdict.message, exc_info=True)
        if verdict is None:
            return CycleResult(body=self._parents.get(slot.uid))
        if self.scope.metrics is not None:
            self.scope.metrics.cycle(self.name, time.monotonic() - started, verdict.result)
        return CycleResult(verdict.delay, throttled=verdict.throttled)

    async def _call(
        self, slot: ObjectSlot, body: Mapping[str, Any], state: _Object
    ) -> Verdict | None:
        """Call the reconciler for the object, if it wants a call; ``None`` if not."""
        finalizer = self.scope.settings.reconciling.finalizer
        deleting = bool((body.get("metadata") or {}).get("deletionTimestamp"))
        holds = finalizer in ((body.get("metadata") or {}).get("finalizers") or ())
        if deleting and not (self.handler.finalizer and holds):
            return None  # the garbage collector takes the children
        if self.handler.finalizer and not deleting and not holds:
            body = await self._write(slot.uid, body, finalizer_patch(body, finalizer, keep=True))
        if self.scope.indexer is not None:
            await self.scope.indexer.ready.wait()
        children = await self._children(slot.uid, body, state)
        if slot.uid not in self._parents:
            return None  # its deletion came while the call waited for its children
        api = ChildrenApi(
            self.scope.client, body, self.scope.owned, labels=self.handler.child_labels
        )
        state.writes = api.writes  # their echoes call nothing while the call runs, too
        patch = Patch()
        kwargs = self._kwargs(slot, body, patch=patch) | {"children": children, "api": api}
        outcome: object
        try:
            outcome = await invoke(self.handler.fn, kwargs, limiter=self.scope.limiter, body=body)
        except Exception as e:
            outcome = e
        finally:
            state.writes, state.deadline = api.writes, self._writes_deadline()
        state.failures = 0 if _succeeded(outcome) else state.failures + 1
        verdict = self._judge(outcome, state)
        self._log(body, verdict, outcome)
        if patch:
            body = await self._patch(slot.uid, body, patch)
        if verdict.succeeded and deleting:
            await self._write(slot.uid, body, finalizer_patch(body, finalizer, keep=False))
        return verdict

    def _judge(self, outcome: object, state: _Object) -> Verdict:
        return judge(
            str(self.handler),
            outcome,
            failures=state.failures,
            resync=self.handler.resync,
            settings=self.scope.settings.reconciling,
            jitter=random.random(),
        )

    def _log(self, body: Mapping[str, Any], verdict: Verdict, outcome: object) -> None:
        exc_info = outcome if verdict.exc_info and isinstance(outcome, BaseException) else None
        if verdict.succeeded:  # every call of a level-triggered reconciler: no Event for each
            LocalObjectLogger(object_ref(body)).log(verdict.level, verdict.message)
        else:
            object_logger(body).log(verdict.level, verdict.message, exc_info=exc_info)

    def _kwargs(self, slot: ObjectSlot, body: Mapping[str, Any], *, patch: Patch) -> dict[str, Any]:
        base = ResourceCause(resource=self.scope.resource, body=body).kwargs
        settings, indexer = self.scope.settings, self.scope.indexer
        kwargs = common_kwargs(
            base,
            logger=object_logger(body),
            memo=slot.memo,
            patch=patch,
            settings=settings,
            indexer=indexer,
        )
        return kwargs | {"param": self.handler.param, "retry": self._objects[slot.uid].failures}

    def _writes_deadline(self) -> float:
        return anyio.current_time() + self.scope.settings.reconciling.writes_timeout

    async def _children(
        self, uid: str, body: Mapping[str, Any], state: _Object
    ) -> dict[str, list[Mapping[str, Any]]]:
        """The object's children, once the watch shows the previous call's writes of them (or,
        after ``writes_timeout``, as read from the API)."""
        while state.writes and not all(seen(write, self.index) for write in state.writes):
            changed = self._changed
            left = state.deadline - anyio.current_time()
            if left <= 0:
                object_logger(body).debug(
                    f"The watch has not shown the children written by {self.handler} "
                    f"in time; reading them from the API."
                )
                await self._read_children(uid)
                break
            with anyio.move_on_after(left):
                await changed.wait()
        state.writes = []
        return self.index.children(uid)

    async def _read_children(self, uid: str) -> None:
        selector = label_selector(self.handler.child_labels)
        for name, resource in self.scope.owned.items():
            namespace = self.scope.namespace if resource.namespaced else None
            found = await self.scope.client.list(
                resource, namespace=namespace, label_selector=selector
            )
            mine = [child for child in found.items if controller_uid(child) == uid]
            self.index.replace(uid, name, mine)

    async def _patch(self, uid: str, body: Mapping[str, Any], patch: Patch) -> Mapping[str, Any]:
        """Write the call's ``patch``: ``status`` to the status subresource where there is one."""
        if patch.fns:
            raise AnyopError(f"{self.handler}: patch.fns are not supported by reconcilers.")
        main = dict(patch)
        status = main.pop("status", None) if "status" in self.scope.resource.subresources else None
        if main:
            body = await self._write(uid, body, main)
        if status is not None:
            body = await self._write(uid, body, {"status": status}, subresource="status")
        return body

    async def _write(
        self,
        uid: str,
        called: Mapping[str, Any],
        patch: Mapping[str, Any] | None,
        *,
        subresource: str | None = None,
    ) -> Mapping[str, Any]:
        """Patch the object; its echo calls nothing, but any other change does: one that came
        meanwhile, or one that the answer carries (a write that changes nothing answers with the
        current state, whoever made it)."""
        body = self._parents.get(uid) or called
        if patch is None:
            return body
        state = self._objects.setdefault(uid, _Object())
        metadata = body.get("metadata") or {}
        status = self.handler.status_changes
        expected = after_write(state.handled or meaning(body, status=status), patch, status=status)
        state.writing.append(expected)
        try:
            answer = await self.scope.client.patch(
                self.scope.resource,
                patch,
                name=str(metadata.get("name")),
                namespace=metadata.get("namespace"),
                subresource=subresource,
            )
        finally:
            state.writing.remove(expected)
        if _uid(answer) != uid:  # deleted, and another object made under its name meanwhile
            self._redo(_uid(answer))  # which our write has just changed
            return body
        state.handled = expected
        if uid in self._parents and not_older(version_of(answer), version_of(self._parents[uid])):
            self._parents[uid] = answer
        if meaning(answer, status=status) != expected:
            self._dispatch(uid, answer)  # someone else's change landed before ours
        return answer

    def _redo(self, uid: str) -> None:
        """Call an object again, if it is known: a write meant for another one changed it."""
        if uid in self._parents:
            self._dispatch(uid, self._parents[uid])


def _uid(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("uid", ""))


def _succeeded(outcome: object) -> bool:
    return outcome is None or isinstance(outcome, Requeue)
