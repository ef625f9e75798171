"""The echo of our own write: taken without a cycle only where a cycle would find nothing to do."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from anyop import OperatorSettings, daemon, on
from anyop.engine.cycle.object_slots import CycleResult, ObjectSlot
from anyop.engine.cycle.reconciler import Observed, Reconciler
from anyop.engine.resource.serve_resource import persistence_for
from anyop.handlers.causes import settled_by
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.jsonpatch import apply_json_patch
from anyop.kube.patches import merge
from anyop.kube.resources import Resource
from anyop.storage.defaults import status_storages

RESOURCE = Resource(
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", subresources=frozenset({"status"}),
    namespaced=True,
)  # fmt: skip
NOOP = "Something has changed, but we are not interested (the essence is the same)."


def body(version: str = "1", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "kex", "namespace": "ns", "uid": "u1", "resourceVersion": version},
        "spec": {"field": "value"},
        **extra,
    }


class Server:
    """Answers each patch with the object after it; ``meanwhile`` edits it first, as another
    client's write that the server applied before ours would."""

    def __init__(self, current: dict[str, Any], meanwhile: Callable[[dict[str, Any]], None]):
        self.current = current
        self.meanwhile = meanwhile
        self.patches: list[Any] = []

    async def patch(self, resource: Resource, payload: Any, **_: Any) -> dict[str, Any]:
        self.patches.append(payload)
        self.meanwhile(self.current)
        if isinstance(payload, list):  # a JSON patch (the finalizer)
            self.current = apply_json_patch(copy.deepcopy(self.current), payload)
        else:
            self.current = merge(copy.deepcopy(self.current), payload)
        version = int(self.current["metadata"]["resourceVersion"]) + 1
        self.current["metadata"]["resourceVersion"] = str(version)
        return copy.deepcopy(self.current)


def reconciler(
    registry: OperatorRegistry,
    meanwhile: Callable[[dict[str, Any]], None] = lambda _: None,
    settings: OperatorSettings | None = None,
) -> tuple[Reconciler, Server]:
    settings = settings or OperatorSettings()
    server = Server(body(), meanwhile)
    client: Any = server
    persistence = persistence_for(RESOURCE, settings)
    return Reconciler(client, RESOURCE, registry, settings, persistence), server


async def create_then_echo(rec: Reconciler, server: Server) -> CycleResult:
    """The created object's cycle, then the cycle of its write's echo (as the watch sends it)."""
    return await create_then_echo_in(rec, server, ObjectSlot(uid="u1"))


async def create_then_echo_in(rec: Reconciler, server: Server, slot: ObjectSlot) -> CycleResult:
    await rec(slot, Observed(copy.deepcopy(server.current), type="ADDED", listed=True))
    echo = Observed(copy.deepcopy(server.current), type="MODIFIED")
    return await rec(slot, echo)


@pytest.fixture
def detections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The resourceVersions whose cause was detected (a full cycle ran on them)."""
    seen: list[str] = []
    original = Reconciler._detect

    def detect(self: Reconciler, cycle: Any, b: Any) -> Any:
        seen.append(b["metadata"]["resourceVersion"])
        return original(self, cycle, b)

    monkeypatch.setattr(Reconciler, "_detect", detect)
    return seen


def creating(registry: OperatorRegistry) -> OperatorRegistry:
    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> dict[str, str]:
        return {"message": "hello"}

    return registry


# -- in the engine -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_echo_of_a_status_only_write_is_taken_without_a_cycle(
    backend: str, detections: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    rec, server = reconciler(creating(OperatorRegistry()))
    with caplog.at_level(logging.DEBUG, logger="anyop"):
        result = anyio.run(create_then_echo, rec, server, backend=backend)
    assert detections == ["1"]  # the creation only
    assert result.delay is None
    assert caplog.messages[-1] == NOOP  # Kopf's line for the echo, as before
    assert len(server.patches) == 1


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_an_echo_with_another_clients_spec_change_calls_the_update_handler(
    backend: str, detections: list[str]
) -> None:
    registry = creating(OperatorRegistry())
    updates: list[Any] = []
    on.update("kopfexamples", registry=registry, id="update_fn")(
        lambda new, **_: updates.append(new["spec"])
    )

    def meanwhile(current: dict[str, Any]) -> None:
        current["spec"] = {"field": "changed"}  # written after our read, before our write

    rec, server = reconciler(registry, meanwhile)
    anyio.run(create_then_echo, rec, server, backend=backend)
    assert updates == [{"field": "changed"}]
    assert detections == ["1", "2"]


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda m: m.setdefault("labels", {}).update(x="1"), id="a label"),
        pytest.param(lambda m: m.setdefault("annotations", {}).update(x="1"), id="an annotation"),
        pytest.param(lambda m: m.setdefault("finalizers", []).append("other"), id="a finalizer"),
        pytest.param(lambda m: m.update(deletionTimestamp="2026-11-25T00:00:00Z"), id="deletion"),
    ],
)
def test_an_echo_with_another_clients_metadata_change_gets_a_cycle(
    edit: Callable[[dict[str, Any]], None], detections: list[str]
) -> None:
    rec, server = reconciler(creating(OperatorRegistry()), lambda c: edit(c["metadata"]))
    anyio.run(create_then_echo, rec, server)
    assert detections == ["1", "2"]


def test_a_when_filter_is_still_asked_about_the_echo(detections: list[str]) -> None:
    asked: list[str] = []

    def when(body: Any, **_: Any) -> bool:
        asked.append(body["metadata"]["resourceVersion"])
        return True

    registry = creating(OperatorRegistry())
    on.delete("kopfexamples", registry=registry, when=when)(lambda **_: None)
    rec, server = reconciler(registry)
    server.current["metadata"]["finalizers"] = [rec.persistence.finalizer]  # none to add
    anyio.run(create_then_echo, rec, server)
    assert detections == ["1", "2"]
    assert "2" in asked  # the echo's cycle asked the filter, as Kopf's would


def test_the_echo_is_asked_about_the_finalizer_as_its_cycle_would_ask(
    detections: list[str],
) -> None:
    """A delete handler's field filter reads the old essence too: the update's cycle keeps the
    finalizer (the old value matched), the echo's no-op cycle releases it (nothing matches)."""
    registry = creating(OperatorRegistry())
    on.delete("kopfexamples", registry=registry, field="spec.field", value="value")(
        lambda **_: None
    )

    async def main() -> None:
        rec, server = reconciler(registry)
        finalizer = rec.persistence.finalizer
        server.current["metadata"]["finalizers"] = [finalizer]
        slot = ObjectSlot(uid="u1")
        await create_then_echo_in(rec, server, slot)
        server.current["spec"] = {"field": "other"}  # a user's change: the filter stops matching
        server.current["metadata"]["resourceVersion"] = "3"
        await rec(slot, Observed(copy.deepcopy(server.current), type="MODIFIED"))
        assert server.current["metadata"]["finalizers"] == [finalizer]  # "value" was the old one
        await rec(slot, Observed(copy.deepcopy(server.current), type="MODIFIED"))  # its echo
        assert server.current["metadata"]["finalizers"] == []

    anyio.run(main)
    # The creation's echo (2) needed no cycle: the filter matched it as it matched the creation.
    assert detections == ["1", "3", "4"]


def test_a_handler_registered_before_the_echo_comes_is_heeded(detections: list[str]) -> None:
    async def main() -> None:
        registry = creating(OperatorRegistry())
        rec, server = reconciler(registry)
        slot = ObjectSlot(uid="u1")
        await rec(slot, Observed(copy.deepcopy(server.current), type="ADDED", listed=True))
        on.delete("kopfexamples", registry=registry)(lambda **_: None)  # now it wants a finalizer
        await rec(slot, Observed(copy.deepcopy(server.current), type="MODIFIED"))
        assert server.current["metadata"]["finalizers"] == [rec.persistence.finalizer]

    anyio.run(main)
    assert detections == ["1", "2"]


def test_a_handler_that_reads_the_status_registered_before_the_echo_comes_sees_it(
    detections: list[str],
) -> None:
    seen: list[Any] = []

    async def main() -> None:
        registry = creating(OperatorRegistry())
        rec, server = reconciler(registry)
        slot = ObjectSlot(uid="u1")
        await rec(slot, Observed(copy.deepcopy(server.current), type="ADDED", listed=True))
        on.field("kopfexamples", field="status.create_fn", registry=registry)(
            lambda new, **_: seen.append(new)
        )
        await rec(slot, Observed(copy.deepcopy(server.current), type="MODIFIED"))

    anyio.run(main)
    assert detections == ["1", "2"]
    assert seen == [{"message": "hello"}]


def test_a_resume_that_writes_no_diffbase_leaves_its_echo_a_cycle(detections: list[str]) -> None:
    """Its write does not overwrite the stored diff-base: another client may have changed it."""
    registry = OperatorRegistry()
    on.resume("kopfexamples", registry=registry, id="resume_fn")(lambda **_: {"seen": True})

    async def main() -> None:
        rec, server = reconciler(registry)
        handled = '{"spec":{"field":"value"}}'
        server.current["status"] = {"anyop": {"last-handled-configuration": handled}}
        slot = ObjectSlot(uid="u1")
        await create_then_echo_in(rec, server, slot)
        assert server.current["status"]["resume_fn"] == {"seen": True}

    anyio.run(main)
    assert detections == ["1", "2"]


def test_a_later_body_than_the_echo_gets_a_cycle(detections: list[str]) -> None:
    async def main() -> None:
        rec, server = reconciler(creating(OperatorRegistry()))
        slot = ObjectSlot(uid="u1")
        await rec(slot, Observed(body(), type="ADDED", listed=True))
        later = copy.deepcopy(server.current)
        later["metadata"]["resourceVersion"] = "5"
        await rec(slot, Observed(later, type="MODIFIED"))

    anyio.run(main)
    assert detections == ["1", "5"]


def test_own_storages_only(detections: list[str]) -> None:
    settings = OperatorSettings()
    settings.persistence.diffbase_storage = status_storages().diffbase  # set: it may be a user's
    rec, server = reconciler(creating(OperatorRegistry()), settings=settings)
    anyio.run(create_then_echo, rec, server)
    assert detections == ["1", "2"]


# -- the pure decisions ----------------------------------------------------------------------------


def test_a_status_and_version_change_settles() -> None:
    after = body("2", status={"create_fn": {"message": "hello"}})
    after["metadata"]["managedFields"] = [{"manager": "anyop"}]
    assert settled_by(body("1"), after)


@pytest.mark.parametrize(
    "after",
    [
        pytest.param(body("2", spec={"field": "other"}), id="spec"),
        pytest.param(body("2", data={"x": "1"}), id="a new top-level field"),
        pytest.param({**body("2"), "metadata": {"labels": {"a": "b"}}}, id="labels"),
    ],
)
def test_anything_beyond_status_does_not_settle(after: dict[str, Any]) -> None:
    assert not settled_by(body("1"), after)


def test_a_plain_registry_has_quiet_echoes() -> None:
    registry = creating(OperatorRegistry())
    on.update("kopfexamples", registry=registry, field="spec.field", new="x")(lambda **_: None)
    on.update("kopfexamples", registry=registry, labels={"app": "x"})(lambda **_: None)
    assert registry.echoes_are_quiet(RESOURCE)


@pytest.mark.parametrize(
    "declare",
    [
        pytest.param(lambda r: on.event("kopfexamples", registry=r)(lambda **_: None), id="event"),
        pytest.param(lambda r: daemon("kopfexamples", registry=r)(lambda **_: None), id="daemon"),
        pytest.param(
            lambda r: on.update("kopfexamples", registry=r, when=lambda **_: True)(
                lambda **_: None
            ),
            id="when",
        ),
        pytest.param(
            lambda r: on.update("kopfexamples", registry=r, field="status.x")(lambda **_: None),
            id="a status field",
        ),
        pytest.param(
            lambda r: on.update("kopfexamples", registry=r, labels={"a": lambda *_, **__: True})(
                lambda **_: None
            ),
            id="a label callback",
        ),
        pytest.param(
            lambda r: on.update(
                "kopfexamples", registry=r, field="spec.x", value=lambda *_, **__: 1
            )(lambda **_: None),
            id="a value callback",
        ),
    ],
)
def test_what_sees_more_than_the_essence_makes_echoes_loud(
    declare: Callable[[OperatorRegistry], Any],
) -> None:
    registry = creating(OperatorRegistry())
    declare(registry)
    assert not registry.echoes_are_quiet(RESOURCE)


class KeepingServer(Server):
    """As :class:`Server`, but a patch that changes nothing keeps the resourceVersion (as
    kube-apiserver does): its answer then carries the version of whoever wrote last."""

    async def patch(self, resource: Resource, payload: Any, **_: Any) -> dict[str, Any]:
        self.patches.append(payload)
        self.meanwhile(self.current)
        before = copy.deepcopy(self.current)
        self.current = merge(copy.deepcopy(self.current), payload)
        if self.current != before:
            version = int(self.current["metadata"]["resourceVersion"]) + 1
            self.current["metadata"]["resourceVersion"] = str(version)
        return copy.deepcopy(self.current)


def test_a_write_that_changes_nothing_does_not_swallow_another_clients_change() -> None:
    """An event handler's patch changes nothing; another client's spec change landed just before
    it, so the answer carries that change's version: its event still gets a full cycle."""
    registry = creating(OperatorRegistry())
    updates: list[Any] = []
    on.update("kopfexamples", registry=registry, id="update_fn")(
        lambda new, **_: updates.append(new["spec"])
    )
    on.event("kopfexamples", registry=registry, id="event_fn")(
        lambda patch, **_: patch.status.update(seen=True)  # the same every time
    )
    settings = OperatorSettings()
    server = KeepingServer(body(), lambda _: None)
    client: Any = server
    rec = Reconciler(client, RESOURCE, registry, settings, persistence_for(RESOURCE, settings))

    versions: list[str] = []

    def another_change(current: dict[str, Any]) -> None:
        current["spec"] = {"field": "changed"}
        versions.append(str(int(current["metadata"]["resourceVersion"]) + 1))
        current["metadata"]["resourceVersion"] = versions[-1]

    async def main() -> None:
        slot = ObjectSlot(uid="u1")
        await create_then_echo_in(rec, server, slot)
        server.meanwhile = another_change  # lands before the event handler's no-op write
        again = copy.deepcopy(server.current)
        await rec(slot, Observed(again, type="MODIFIED"))
        server.meanwhile = lambda _: None
        assert server.current["spec"] == {"field": "changed"}
        assert server.current["metadata"]["resourceVersion"] == versions[0]  # a no-op write
        await rec(slot, Observed(copy.deepcopy(server.current), type="MODIFIED"))  # its event

    anyio.run(main)
    assert updates == [{"field": "changed"}]
