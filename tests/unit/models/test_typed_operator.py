"""Typed handlers in a whole operator (FakeCluster with the generated CRD, virtual time)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import Field

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.models.resources import ObjectMeta
from anyop.testing import FakeCluster, RunningOperator
from anyop.testing.fake.statuses import StatusError

# Sync handlers run in threads: the clock waits a moment for them before it jumps (with none,
# a thread still running let a 30 s wait pass at once, now and then).
pytestmark = [pytest.mark.anyio, pytest.mark.fake_time(autojump_threshold=0.05)]


class GizmoSpec(anyop.Model):
    replicas: int = Field(default=1, ge=0, le=100)
    engine: Literal["postgres", "mysql"] = "postgres"
    size_hint: int | None = None


class GizmoStatus(anyop.Model):
    seen_replicas: int | None = None


class Gizmo(anyop.CustomResource, group="typed.example.com", version="v1", kind="Gizmo"):
    spec: GizmoSpec
    status: GizmoStatus | None = None


GIZMOS = Resource("typed.example.com", "v1", "gizmos", kind="Gizmo")
SEEN: list[Any] = []


@pytest.fixture
def fake_cluster(fake_cluster: FakeCluster) -> FakeCluster:
    fake_cluster.install(Gizmo, Bolt)
    return fake_cluster


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    registry = OperatorRegistry()
    SEEN.clear()

    @anyop.on.create(Gizmo, registry=registry, id="created")
    async def created(
        spec: GizmoSpec, body: Gizmo, status: GizmoStatus | None, patch: anyop.Patch, **_: Any
    ) -> str:
        SEEN.append((spec, type(body), status))
        patch.status.update(GizmoStatus(seen_replicas=spec.replicas))
        return "ok"

    @anyop.on.update(Gizmo, registry=registry, id="updated")
    def updated(spec: GizmoSpec, **_: Any) -> str:  # sync: runs in a thread, typed too
        SEEN.append(spec)
        return "ok"

    return registry


async def test_a_typed_handler_gets_models_defaulted_by_the_schema_and_patches_a_model(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(GIZMOS, {"metadata": {"name": "g"}, "spec": {"replicas": 4}})
    done = await fake_operator.wait_for(GIZMOS, "g", lambda obj: obj["status"].get("created"))
    spec, body_type, status = SEEN[0]
    assert spec == GizmoSpec(replicas=4, engine="postgres")  # engine defaulted by the CRD
    assert body_type is Gizmo
    assert status is None
    assert done["status"]["seenReplicas"] == 4
    assert done["spec"] == {"replicas": 4, "engine": "postgres"}


async def test_a_sync_update_handler_gets_the_new_spec_as_a_model(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(GIZMOS, {"metadata": {"name": "g"}, "spec": {"replicas": 1}})
    await fake_operator.wait_for(GIZMOS, "g", lambda obj: obj.get("status", {}).get("created"))
    await fake_operator.patch(GIZMOS, "g", {"spec": {"sizeHint": 7}})
    await fake_operator.wait_for(GIZMOS, "g", lambda obj: obj.get("status", {}).get("updated"))
    assert SEEN[-1] == GizmoSpec(replicas=1, engine="postgres", size_hint=7)


async def test_the_generated_crd_refuses_a_bad_object_with_the_field_path(
    fake_cluster: FakeCluster,
) -> None:
    body = {"metadata": {"name": "bad", "namespace": "default"}, "spec": {"replicas": 500}}
    with pytest.raises(StatusError) as info:
        fake_cluster.create({"apiVersion": "typed.example.com/v1", "kind": "Gizmo", **body})
    assert "spec.replicas" in str(info.value)


class StrictGizmoSpec(anyop.Model):
    replicas: int = Field(default=1, ge=0, le=10)


class StrictGizmo(anyop.CustomResource, group="typed.example.com", version="v1", kind="Gizmo"):
    spec: StrictGizmoSpec


CALLS: list[str] = []


def strict_registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create(StrictGizmo, registry=registry, id="strict")
    async def strict(name: str, **_: Any) -> str:
        CALLS.append(name)
        return "ok"

    return registry


@pytest.mark.parametrize("anyop_registry", [strict_registry()])
async def test_a_body_that_the_model_refuses_fails_the_handler_for_good_with_an_event(
    fake_operator: RunningOperator,
) -> None:
    CALLS.clear()
    await fake_operator.create(GIZMOS, {"metadata": {"name": "big"}, "spec": {"replicas": 50}})
    line = await fake_operator.wait_for_log("Handler 'strict' failed permanently")
    assert "spec.replicas=50: Input should be less than or equal to 10" in line
    await fake_operator.create(GIZMOS, {"metadata": {"name": "small"}, "spec": {"replicas": 5}})
    await fake_operator.wait_for(GIZMOS, "small", lambda obj: obj.get("status", {}).get("strict"))
    assert CALLS == ["small"]  # the operator goes on; the bad one is never retried
    failures = [m for m in fake_operator.messages if "Handler 'strict' failed" in m]
    assert len(failures) == 1
    url = f"/api/v1/namespaces/{fake_operator.namespace}/events"
    events = (await fake_operator.api.get(url)).json()["items"]
    invalid = [event for event in events if event["reason"] == "Invalid"]
    assert [event["involvedObject"]["name"] for event in invalid] == ["big"]
    assert "spec.replicas=50" in invalid[0]["message"]


class BoltSpec(anyop.Model):
    length: int = Field(default=1, ge=1)


class Bolt(anyop.CustomResource, group="typed.example.com", version="v1", kind="Bolt"):
    spec: BoltSpec


SEEN_CHILDREN: list[list[Bolt]] = []
BOLTS = Resource("typed.example.com", "v1", "bolts", kind="Bolt")


def parent_of_bolts() -> OperatorRegistry:
    registry = OperatorRegistry()
    SEEN_CHILDREN.clear()

    @anyop.reconcile(Gizmo, owns=[Bolt], registry=registry)
    async def keep_bolts(
        spec: GizmoSpec, name: str, children: dict[str, list[Bolt]], api: Any, **_: Any
    ) -> None:
        bolts = children["bolts.typed.example.com"]
        SEEN_CHILDREN.append(bolts)
        if not bolts:
            bolt = Bolt(
                metadata=ObjectMeta(name=f"{name}-bolt"), spec=BoltSpec(length=spec.replicas)
            )
            await api.create("bolts.typed.example.com", bolt.to_body())

    return registry


@pytest.mark.parametrize("anyop_registry", [parent_of_bolts()])
async def test_a_reconciler_gets_its_typed_children_as_models(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(GIZMOS, {"metadata": {"name": "g"}, "spec": {"replicas": 3}})
    await fake_operator.wait_for(BOLTS, "g-bolt", lambda bolt: bolt["spec"]["length"] == 3)
    await fake_operator.patch(GIZMOS, "g", {"spec": {"replicas": 4}})  # calls it again
    await fake_operator.wait_for(GIZMOS, "g", lambda _: any(SEEN_CHILDREN))
    bolts = next(seen for seen in SEEN_CHILDREN if seen)
    assert [(bolt.metadata.name, bolt.spec.length) for bolt in bolts] == [("g-bolt", 3)]
    assert all(isinstance(bolt, Bolt) for bolt in bolts)


TICKS: list[Any] = []


def timer_and_index() -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.timer(Gizmo, interval=1, registry=registry)
    async def tick(spec: GizmoSpec, **_: Any) -> None:
        TICKS.append(spec)

    @anyop.index(Gizmo, registry=registry, id="by_engine")
    def by_engine(spec: GizmoSpec, name: str, **_: Any) -> dict[str, str]:
        return {spec.engine: name}

    @anyop.daemon(Gizmo, registry=registry)
    async def watch_over(spec: GizmoSpec, by_engine: anyop.Index, stopped: Any, **_: Any) -> None:
        TICKS.append(("indexed", list(by_engine.get("mysql", []))))
        await stopped.wait()

    return registry


@pytest.mark.parametrize("anyop_registry", [timer_and_index()])
async def test_timers_daemons_and_indexes_get_the_models_too(
    fake_operator: RunningOperator,
) -> None:
    TICKS.clear()
    body = {"metadata": {"name": "g"}, "spec": {"replicas": 2, "engine": "mysql"}}
    await fake_operator.create(GIZMOS, body)
    await fake_operator.wait_for(GIZMOS, "g", lambda _: len(TICKS) >= 3)
    assert GizmoSpec(replicas=2, engine="mysql") in TICKS
    assert ("indexed", ["g"]) in TICKS
