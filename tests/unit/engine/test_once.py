"""Each handler runs once per cause, whatever becomes of the echoes of the engine's own writes.

The real :class:`Reconciler` against an in-memory API that behaves as kube-apiserver does where it
matters here: the ``/status`` endpoint takes only ``status``, the main one everything else; a
JSON patch's ``resourceVersion`` test fails with 422; releasing the last finalizer of a deleted
object deletes it and answers with the version the object had before (as kube-apiserver 1.36
does). Every state that a cycle's requests leave behind is recorded; then, for every order of
every subset of those states (any of them lost), they come back as watch events, and no handler
may be called again for the cause it ran for. Where the consistency timeout is zero, nothing is
held back as older than our echo: every intermediate state gets its full cycle.
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest

from anyop import OperatorSettings, TemporaryError, on, subhandler
from anyop.engine.cycle.object_slots import CycleResult, ObjectSlot
from anyop.engine.cycle.reconciler import Observed, Reconciler
from anyop.engine.resource.serve_resource import persistence_for
from anyop.errors import InvalidError, NotFoundError, ServerError
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import ObjectList, PatchType
from anyop.kube.jsonpatch import apply_json_patch
from anyop.kube.patches import merge
from anyop.kube.resources import Resource
from anyop.storage.defaults import (
    Persistence,
    anyop_storages,
    kopf_compatible_storages,
    status_storages,
)
from anyop.storage.diffbase import MultiDiffBaseStorage
from anyop.storage.finalizers import RELEASING_MESSAGE as RELEASING
from anyop.storage.progress import MultiProgressStorage

WITH_STATUS = Resource(
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", subresources=frozenset({"status"}),
    namespaced=True,
)  # fmt: skip
WITHOUT_STATUS = Resource(
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", subresources=frozenset(),
    namespaced=True,
)  # fmt: skip


def mixed(*, status_first: bool) -> Persistence:
    """Both places at once, read in the given order (a custom combination of anyop's storages)."""
    status, annotations = status_storages(), anyop_storages()
    progress = [status.progress, annotations.progress]
    diffbase = [status.diffbase, annotations.diffbase]
    if not status_first:
        progress.reverse()
        diffbase.reverse()
    return Persistence(
        MultiProgressStorage(progress), MultiDiffBaseStorage(diffbase), status.finalizer
    )


STORAGES = {
    "status": status_storages,
    "annotations": anyop_storages,
    "kopf": kopf_compatible_storages,
    "mixed-status-first": functools.partial(mixed, status_first=True),
    "mixed-annotations-first": functools.partial(mixed, status_first=False),
    "split": lambda: Persistence(  # records in the status, the diff-base in the annotations
        status_storages().progress, anyop_storages().diffbase, status_storages().finalizer
    ),
}

Body = dict[str, Any]


class Server:
    """One object in an in-memory API server; every state it goes through is recorded.

    ``fail``: the 1-based numbers of the requests to refuse with a 500 (nothing written).
    """

    def __init__(self, resource: Resource, fail: Sequence[int] = ()) -> None:
        self.resource = resource
        self.version = 1
        self.current: Body | None = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "kex", "namespace": "ns", "uid": "u1", "resourceVersion": "1"},
            "spec": {"field": "value"},
        }
        self.states: list[Body] = []
        """Each state written, in order (a deletion is not a state: the object is gone)."""
        self.requests = 0
        self.reads = 0
        self.fail = set(fail)

    def body(self) -> Body:
        assert self.current is not None
        return copy.deepcopy(self.current)

    def _write(self, new: Body) -> Body:
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.current = None  # deleted: the answer carries the version it had before
            return new
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        self.current = new
        self.states.append(copy.deepcopy(new))
        return copy.deepcopy(new)

    def change(self, fn: Callable[[Body], None]) -> Body:
        """Another client's write."""
        new = self.body()
        fn(new)
        return self._write(new)

    def delete(self) -> Body:
        def mark(body: Body) -> None:
            body["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"

        return self.change(mark)

    async def get(self, resource: Resource, *, name: str, **_: Any) -> Body:
        if self.current is None:
            raise NotFoundError("not found", status=404)
        return self.body()

    async def list(self, resource: Resource, *, field_selector: str, **_: Any) -> ObjectList:
        self.reads += 1
        assert self.current is None or field_selector == "metadata.name=kex"
        return ObjectList([] if self.current is None else [self.body()], str(self.version))

    async def patch(
        self,
        resource: Resource,
        payload: Any,
        *,
        subresource: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        **_: Any,
    ) -> Body:
        self.requests += 1
        if self.current is None:
            raise NotFoundError("not found", status=404)
        if self.requests in self.fail:
            raise ServerError("refused on purpose", status=500)
        old = self.body()
        if patch_type is PatchType.JSON:
            for op in payload:
                if op["op"] == "test" and op["value"] != old["metadata"]["resourceVersion"]:
                    raise InvalidError("the server rejected our request", status=422)
            new = apply_json_patch(copy.deepcopy(old), payload)
        else:
            new = merge(old, payload)
        if "status" in self.resource.subresources:  # each endpoint keeps to its own part
            rest, status = (old, new) if subresource == "status" else (new, old)
            new = {k: v for k, v in rest.items() if k != "status"}
            if "status" in status:
                new["status"] = status["status"]
        return self._write(new)


class World:
    """A registry whose handlers count their calls, one object, and its reconciler."""

    def __init__(
        self, storage: str, resource: Resource, timeout: float, fail: Sequence[int] = ()
    ) -> None:
        self.calls: Counter[str] = Counter()
        # Without a consistency timeout, a handler's own change of the essence (a label) seen
        # in a stale state is a new cause: there, the handlers change only the status.
        self.stanza = ("metadata", "labels") if timeout else ("status", "marks")
        self.registry = self._registry()
        self.server = Server(resource, fail)
        settings = OperatorSettings()
        persistence = STORAGES[storage]()
        settings.persistence.progress_storage = persistence.progress
        settings.persistence.diffbase_storage = persistence.diffbase
        settings.persistence.finalizer = persistence.finalizer
        settings.persistence.consistency_timeout = timeout
        self.settings = settings
        self.resource = resource
        self.reconciler = self._reconciler()
        self.slot = ObjectSlot(uid="u1")

    def _reconciler(self) -> Reconciler:
        client: Any = self.server
        persistence = persistence_for(self.resource, self.settings)
        return Reconciler(client, self.resource, self.registry, self.settings, persistence)

    def restart(self) -> None:
        """A new operator process: nothing in memory, the object as stored."""
        self.reconciler = self._reconciler()
        self.slot = ObjectSlot(uid="u1")

    def _registry(self) -> OperatorRegistry:
        registry = OperatorRegistry()
        calls = self.calls
        kex = "kopfexamples"
        top, key = self.stanza

        def mark(patch: Any, name: str) -> None:
            patch.setdefault(top, {}).setdefault(key, {})[name] = "yes"

        def mark_body(body: Body) -> None:
            body.setdefault(top, {}).setdefault(key, {})["x"] = "y"

        @on.create(kex, registry=registry, id="create_1")
        def create_1(**_: Any) -> dict[str, str]:
            calls["create_1"] += 1
            return {"message": "first"}

        @on.create(kex, registry=registry, id="create_2")
        def create_2(retry: int, spec: Any, **_: Any) -> None:
            calls["create_2"] += 1
            if spec.get("slow"):
                raise TemporaryError("not yet", delay=60)

        @on.create(kex, registry=registry, id="create_3")
        def create_3(patch: Any, **_: Any) -> None:
            calls["create_3"] += 1
            mark(patch, "created")
            patch.fns.append(mark_body)

        @on.create(kex, registry=registry, id="parent")
        def parent(**_: Any) -> None:
            calls["parent"] += 1

            @subhandler(id="child")
            def child(**_: Any) -> str:
                calls["parent/child"] += 1
                return "child"

        @on.update(kex, registry=registry, id="update")
        def update(patch: Any, **_: Any) -> str:
            calls["update"] += 1
            mark(patch, "updated")
            return "updated"

        @on.field(kex, field="spec.field", registry=registry, id="field")
        def field(**_: Any) -> None:
            calls["field"] += 1

        @on.resume(kex, registry=registry, id="resume")
        def resume(**_: Any) -> str:
            calls["resume"] += 1
            return "resumed"

        @on.delete(kex, registry=registry, id="delete")
        def delete(patch: Any, **_: Any) -> str:
            calls["delete"] += 1
            mark(patch, "deleted")
            return "deleted"

        return registry

    async def handle(self, body: Body, type: Any = "MODIFIED", **extra: Any) -> CycleResult:
        """One cycle, as the worker runs it; an error is the reconciler's to throttle."""
        return await self.reconciler(self.slot, Observed(body, type=type, **extra))

    async def phase(
        self,
        body: Body,
        type: Any = "MODIFIED",
        *,
        echoes: Echoes = None,
        failing: tuple[int, int] | None = None,
        **extra: Any,
    ) -> list[list[str]]:
        """The cycles of one change, each run on the last one's response, until none is due at
        once; the versions that each cycle's writes left.

        ``echoes``: after cycle ``i``, its states come back in this order, and the object's
        cycles go on from the freshest state. ``failing``: cycle ``i``'s ``k``-th request is
        refused; the cycle is run again with the body it left to its worker.
        """
        written: list[list[str]] = []
        result = CycleResult(delay=0.0)
        while result.delay == 0 and self.server.current is not None and len(written) < 20:
            before = len(self.server.states)
            if failing is not None and failing[0] == len(written):
                self.server.fail = {self.server.requests + failing[1]}
            result = await self.handle(body, type, **extra)
            states = self.server.states[before:]
            written.append([_v(state) for state in states])
            if failing is not None and failing[0] == len(written) - 1:
                assert result.delay, "the refused request was not sent"  # throttled
                # The throttling's delay is up: the worker runs the cycle on what it was left.
                body, type, extra = copy.deepcopy(dict(result.body or body)), "MODIFIED", {}
                result = CycleResult(delay=0.0)
                continue
            if echoes is not None and echoes[0] == len(written) - 1:
                for index in echoes[1]:
                    await self.handle(copy.deepcopy(states[index]))
                result = CycleResult(delay=0.0)  # the watch brings the freshest state after them
            if self.server.current is not None:
                body, type, extra = self.server.body(), "MODIFIED", {}
        return written


Echoes = tuple[int, tuple[int, ...]] | None
"""After which cycle of a phase, which of its states come back, in which order (by index)."""


def sequences(count: int, longest: int) -> Iterator[tuple[int, ...]]:
    """Every order of every subset of ``count`` states, by index (the empty one included)."""
    for size in range(min(count, longest) + 1):
        for subset in itertools.combinations(range(count), size):
            yield from itertools.permutations(subset)


# Each scenario: the phases before the one whose echoes are explored run with their echoes lost.


async def created(world: World, *, slow: bool = False, **interrupt: Any) -> list[list[str]]:
    if slow:
        world.server.change(lambda body: body["spec"].update(slow=True))
    return await world.phase(world.server.body(), "ADDED", listed=True, **interrupt)


async def updated(world: World, **interrupt: Any) -> list[list[str]]:
    await created(world)
    world.server.change(lambda body: body["spec"].update(field="changed"))
    return await world.phase(world.server.body(), **interrupt)


async def resumed(world: World, **interrupt: Any) -> list[list[str]]:
    await created(world)
    world.restart()
    return await world.phase(world.server.body(), "ADDED", listed=True, **interrupt)


async def deleted_while_retrying(world: World, **interrupt: Any) -> list[list[str]]:
    await created(world, slow=True)
    world.server.delete()
    return await world.phase(world.server.body(), **interrupt)


async def deleted(world: World, **interrupt: Any) -> list[list[str]]:
    await created(world)
    world.server.delete()
    return await world.phase(world.server.body(), **interrupt)


CREATED = dict.fromkeys(["create_1", "create_2", "create_3", "parent", "parent/child", "field"], 1)
SCENARIOS = {  # the calls of each handler by the end: one per cause
    "created": (created, CREATED),
    "updated": (updated, {**CREATED, "update": 1, "field": 2}),
    "resumed": (resumed, {**CREATED, "resume": 1}),
    "deleted while a create handler waits for its retry": (
        deleted_while_retrying, {**CREATED, "delete": 1}
    ),
    "deleted": (deleted, {**CREATED, "delete": 1}),
}  # fmt: skip


async def explore(storage: str, resource: Resource, consistency: float) -> int:
    """Every scenario with every sequence of its echoes; the number of sequences tried.

    Without a consistency timeout, nothing protects against a state older than one already
    handled (Kopf's setting means just that): there, each state comes back alone, and must be
    safe to handle by itself.
    """
    longest = 99 if consistency else 1
    tried = 0
    for name, (scenario, ran) in SCENARIOS.items():
        written = await scenario(World(storage, resource, consistency))
        assert any(written), f"{name}: the cycles wrote nothing"
        for cycle, versions in enumerate(written):
            for order in sequences(len(versions), longest):
                world = World(storage, resource, consistency)
                await scenario(world, echoes=(cycle, order))
                echoes = [versions[index] for index in order]
                assert world.calls == ran, f"{name}: {echoes} after cycle {cycle}: {versions}"
                tried += 1
    return tried


def _v(body: Body) -> str:
    return str(body["metadata"]["resourceVersion"])


def skip_unstorable(storage: str, resource: Resource) -> None:
    """Skip the combination the status storage cannot serve: a resource without ``/status``."""
    if storage == "status" and resource is WITHOUT_STATUS:
        pytest.skip("status storage needs the status subresource")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("consistency", [5.0, 0.0], ids=["echo-awaited", "no-echo-awaited"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_no_sequence_of_our_own_echoes_calls_a_handler_twice(
    storage: str, resource: Resource, consistency: float, backend: str
) -> None:
    skip_unstorable(storage, resource)
    tried = anyio.run(explore, storage, resource, consistency, backend=backend)
    assert tried >= 20


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
def test_the_functions_of_a_patch_see_its_merge_part(resource: Resource, backend: str) -> None:
    world = World("annotations", resource, 5.0)
    anyio.run(created, world, backend=backend)
    assert world.server.body()["metadata"]["labels"] == {"created": "yes", "x": "y"}


async def explore_failures(storage: str, resource: Resource) -> int:
    """Every scenario with each request but the first of each cycle refused; how many tried.

    A refused first request means that nothing was written, and the handlers that ran are run
    again (at least once); after it, what landed holds the engine's state, and the cycle goes
    on from there.
    """
    tried = 0
    for name, (scenario, ran) in SCENARIOS.items():
        written = await scenario(World(storage, resource, 5.0))
        for cycle, versions in enumerate(written):
            for request in range(2, len(versions) + 1):
                world = World(storage, resource, 5.0)
                await scenario(world, failing=(cycle, request))
                assert world.calls == ran, f"{name}: request {request} of cycle {cycle} refused"
                tried += 1
    return tried


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_a_refused_request_after_the_first_calls_no_handler_twice(
    storage: str, resource: Resource, backend: str
) -> None:
    skip_unstorable(storage, resource)
    tried = anyio.run(explore_failures, storage, resource, backend=backend)
    assert tried >= 1


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_the_states_before_our_release_get_no_cycle(
    storage: str, resource: Resource, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer to the release carries the version of the state before it: no echo is awaited
    for that state, and it is no newer than what we know. It is the last one with our finalizer.
    """
    skip_unstorable(storage, resource)
    reference = World(storage, resource, 5.0)
    written = anyio.run(deleted, reference, backend=backend)
    assert len(written[0]) >= 1  # the results and the records, then the release
    for order in sequences(len(written[0]), 99):
        world = World(storage, resource, 5.0)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="anyop"):
            anyio.run(functools.partial(deleted, world, echoes=(0, order)), backend=backend)
        assert caplog.messages.count("Deletion is processed: 1 succeeded; 0 failed.") == 1
        assert caplog.messages.count(RELEASING) == 1
        assert world.server.requests == reference.server.requests  # nothing more is sent


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_sub_handlers_run_again_for_each_new_cause(
    storage: str, resource: Resource, backend: str
) -> None:
    skip_unstorable(storage, resource)
    world = World(storage, resource, 5.0)
    registry = world.reconciler.registry = OperatorRegistry()
    calls: Counter[str] = Counter()

    @on.update("kopfexamples", registry=registry, id="parent")
    def parent(**_: Any) -> None:
        calls["parent"] += 1

        @subhandler(id="child")
        def child(**_: Any) -> None:
            calls["parent/child"] += 1

    async def three_updates() -> None:
        await world.phase(world.server.body(), "ADDED", listed=True)
        for value in ("one", "two", "three"):
            world.server.change(lambda body, value=value: body["spec"].update(field=value))
            await world.phase(world.server.body())

    anyio.run(three_updates, backend=backend)
    assert calls == {"parent": 3, "parent/child": 3}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_every_resume_handler_runs_once_after_a_restart(storage: str, backend: str) -> None:
    """One handler per cycle (Kopf's default lifecycle): the second cycle is no listing."""
    world = World(storage, WITH_STATUS, 5.0)
    registry = OperatorRegistry()
    calls: Counter[str] = Counter()

    @on.resume("kopfexamples", registry=registry, id="resume_1")
    def resume_1(**_: Any) -> None:
        calls["resume_1"] += 1

    @on.resume("kopfexamples", registry=registry, id="resume_2")
    def resume_2(retry: int, **_: Any) -> None:
        calls["resume_2"] += 1
        if not retry:
            raise TemporaryError("again", delay=0)

    async def restarted() -> None:
        await created(world)  # by the world's own handlers
        world.restart()
        world.reconciler.registry = registry
        await world.phase(world.server.body(), "ADDED", listed=True)

    anyio.run(restarted, backend=backend)
    assert calls == {"resume_1": 1, "resume_2": 2}  # the second once, and once again


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_a_cause_that_comes_mid_way_supersedes_the_unfinished_one_with_kopfs_line(
    storage: str, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    world = World(storage, WITH_STATUS, 5.0)
    with caplog.at_level(logging.INFO, logger="anyop"):
        anyio.run(deleted_while_retrying, world, backend=backend)
    superseded = [m for m in caplog.messages if " is superseded by " in m]
    assert superseded == [
        "Creation is superseded by deletion: 4 succeeded; 0 failed; 1 left to the moment."
    ]
    assert world.calls["create_2"] == 1  # never again: its cause is over
    assert world.calls["delete"] == 1


async def listed_from_far_behind(world: World) -> None:
    """The object is created and handled; long after the consistency timeout, a listing served
    by a cache far behind etcd brings the state from before our writes."""
    before = world.server.body()
    await created(world)
    await anyio.sleep(0.05)  # past the consistency timeout: no echo is awaited any more
    await world.handle(before, "ADDED", listed=True)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("resource", [WITH_STATUS, WITHOUT_STATUS], ids=["status", "no-status"])
@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_a_state_older_than_our_write_is_read_afresh_after_the_consistency_timeout(
    storage: str, resource: Resource, backend: str
) -> None:
    skip_unstorable(storage, resource)
    reference = World(storage, resource, 0.01)
    anyio.run(created, reference, backend=backend)
    world = World(storage, resource, 0.01)
    anyio.run(listed_from_far_behind, world, backend=backend)
    assert world.calls == reference.calls  # no handler ran again for the old state
    assert world.server.reads == 1
