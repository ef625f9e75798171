"""Which discovered resources are served, and Kopf's warnings about the others."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

import anyop
import anyop.on as on
from anyop.engine.serving import scope_groups as served
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

ALL_VERBS = frozenset({"list", "watch", "patch", "get"})


def resource(group: str, plural: str, verbs: frozenset[str] = ALL_VERBS) -> Resource:
    return Resource(group, "v1", plural, kind=plural.title(), namespaced=True, verbs=verbs)


DISCOVERED = [
    resource("kopf.dev", "kopfexamples"),
    resource("a.dev", "twins"),
    resource("b.dev", "twins"),
    resource("kopf.dev", "readonlies", frozenset({"list", "watch", "get"})),
    resource("kopf.dev", "watchedonlies", frozenset({"list", "watch", "get"})),
    resource("kopf.dev", "unlistables", frozenset({"get", "create"})),
]


async def test_what_cannot_be_served_is_named_and_left_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def discover(client: Any, *, failed: list[str] | None = None) -> list[Resource]:
        return DISCOVERED

    monkeypatch.setattr(served, "discover", discover)
    registry = OperatorRegistry()
    for name in ("kopfexamples", "twins", "readonlies", "unlistables", "missings"):
        on.create(name, registry=registry, id=f"create_{name}")(lambda **_: None)
    on.event("watchedonlies", registry=registry, id="events")(lambda **_: None)
    with caplog.at_level(logging.WARNING, logger="anyop"):
        resources, _ = await served.served_resources(None, registry)  # type: ignore[arg-type]
    assert [r.plural for r in resources] == ["kopfexamples", "watchedonlies"]
    warnings = caplog.messages
    assert any(w.startswith("Unresolved resources cannot be served") for w in warnings)
    assert any(
        w.startswith("Ambiguous resources will not be served (try specifying API groups): ")
        and "twins" in w
        for w in warnings
    )
    assert any(w.startswith("Non-watchable resources will not be served: ") for w in warnings)
    nonpatchable = [w for w in warnings if w.startswith("Non-patchable resources")]
    assert len(nonpatchable) == 1
    assert "readonlies" in nonpatchable[0]
    assert "watchedonlies" not in nonpatchable[0]


async def test_a_resource_name_with_a_typo_is_warned_about_with_the_nearest_served_name(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def discover(client: Any, *, failed: list[str] | None = None) -> list[Resource]:
        return DISCOVERED

    monkeypatch.setattr(served, "discover", discover)
    registry = OperatorRegistry()
    on.create("kopfexampels", registry=registry)(lambda **_: None)
    with caplog.at_level(logging.WARNING, logger="anyop"):
        resources, _ = await served.served_resources(None, registry)  # type: ignore[arg-type]
    assert resources == []
    assert caplog.messages == [
        "Unresolved resources cannot be served (try creating their CRDs): "
        "Selector(any_name='kopfexampels') (did you mean kopfexamples.kopf.dev?)"
    ]


async def test_a_rediscovery_does_not_repeat_the_warnings_that_still_hold(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    found = [DISCOVERED[0]]

    async def discover(client: Any, *, failed: list[str] | None = None) -> list[Resource]:
        return found

    monkeypatch.setattr(served, "discover", discover)
    registry = OperatorRegistry()
    for name in ("kopfexamples", "missings"):
        on.create(name, registry=registry, id=f"create_{name}")(lambda **_: None)
    said: set[str] = set()
    with caplog.at_level(logging.WARNING, logger="anyop"):
        await served.served_resources(None, registry, said)  # type: ignore[arg-type]
        await served.served_resources(None, registry, said)  # type: ignore[arg-type]
        assert len(caplog.messages) == 1  # the unresolved "missings", once
        found = []
        await served.served_resources(None, registry, said)  # type: ignore[arg-type]
        assert len(caplog.messages) == 2  # a new one: "kopfexamples" is unresolved too
        found = [DISCOVERED[0]]
        await served.served_resources(None, registry, said)  # type: ignore[arg-type]
        found = []
        await served.served_resources(None, registry, said)  # type: ignore[arg-type]
    assert len(caplog.messages) == 4  # a warning that went away and came back is said again


async def test_a_discovery_is_incomplete_where_a_group_version_failed_and_a_selector_is_unresolved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failing: list[str] = []

    async def discover(client: Any, *, failed: list[str] | None = None) -> list[Resource]:
        assert failed is not None
        failed += failing
        return [DISCOVERED[0]]

    monkeypatch.setattr(served, "discover", discover)
    resolved, unresolved = OperatorRegistry(), OperatorRegistry()
    on.create("kopfexamples", registry=resolved)(lambda **_: None)
    on.create("missings", registry=unresolved)(lambda **_: None)
    seen = []
    for failing[:] in ([], ["/apis/metrics.k8s.io/v1beta1"]):
        for registry in (resolved, unresolved):
            seen.append((await served.served_resources(None, registry))[1])  # type: ignore[arg-type]
    assert seen == [False, False, False, True]  # only an unresolved selector asks again


def crd(group: str, plural: str, *versions: tuple[str, bool]) -> dict[str, Any]:
    listed = [{"name": name, "served": on} for name, on in versions]
    return {"spec": {"group": group, "names": {"plural": plural}, "versions": listed}}


def test_a_deleted_crd_withdraws_all_of_its_resources_and_no_other() -> None:
    v2 = Resource("kopf.dev", "v2", "kopfexamples", namespaced=True)
    resources = [*DISCOVERED, v2]
    definition = crd("kopf.dev", "kopfexamples", ("v1", True), ("v2", True))
    gone = served.withdrawn(definition, resources, deleted=True)
    assert gone == [DISCOVERED[0], v2]
    assert served.withdrawn(definition, resources, deleted=False) == []


def test_a_changed_crd_withdraws_the_versions_it_no_longer_serves() -> None:
    v2 = Resource("kopf.dev", "v2", "kopfexamples", namespaced=True)
    resources = [*DISCOVERED, v2]
    definition = crd("kopf.dev", "kopfexamples", ("v1", False), ("v2", True))
    assert served.withdrawn(definition, resources, deleted=False) == [DISCOVERED[0]]
    assert served.withdrawn({"spec": {}}, resources, deleted=False) == []  # nothing to judge by


async def test_served_resources_can_be_removed_and_added_again_and_wake_the_groups() -> None:
    resources = served.ServedResources(DISCOVERED[:2])
    changed = resources.changed
    assert resources.remove([DISCOVERED[0], DISCOVERED[3]]) == [DISCOVERED[0]]
    assert changed.is_set()
    assert resources.resources == [DISCOVERED[1]]
    changed = resources.changed
    assert resources.remove([DISCOVERED[0]]) == []
    assert not changed.is_set()
    assert resources.add([DISCOVERED[0]]) == [DISCOVERED[0]]
    assert changed.is_set()


@pytest.mark.fake_time
async def test_resources_whose_discovery_failed_are_served_once_it_answers() -> None:
    """A group version that does not answer at the start (its retries spent) leaves the
    operator's resources unresolved; no CRD changes after, yet they are served once it does."""
    fake = FakeCluster()
    fake.apply(Path(__file__).parents[3] / "examples" / "crd.yaml")
    fake.faults.script(Fault.server_error(500), method="GET", path="/apis/kopf.dev/v1", times=6)
    registry, done = OperatorRegistry(), anyio.Event()

    @on.create("kopfexamples", registry=registry)
    async def greet(**_: Any) -> None:
        done.set()

    settings = anyop.OperatorSettings()
    settings.networking.error_backoffs = (0.5, 1, 2)
    with fake.routed():
        await _serve_until_done(fake, registry, settings, done)


async def _serve_until_done(
    fake: FakeCluster, registry: OperatorRegistry, settings: Any, done: anyio.Event
) -> None:
    async with (
        fake.client(faults=False) as api,
        open_operator(registry, namespace="default", api=api, settings=settings,
                      vault=await fake.vault()),
    ):  # fmt: skip
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "k"}}
        await api.post("/apis/kopf.dev/v1/namespaces/default/kopfexamples", json=body)
        started = anyio.current_time()
        with anyio.fail_after(120):
            await done.wait()
        assert anyio.current_time() - started >= served.INCOMPLETE_RETRY - 5  # asked again
