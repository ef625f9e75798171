"""The ``fake_operator`` fixture: handlers served from a FakeCluster in-process, on both
backends, with timers on virtual time and faults that the operator survives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault, RunningOperator

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"
TICKS: list[int] = []
TEN_TICKS: list[anyio.Event] = []


@pytest.fixture
def fake_cluster(kex_cluster: FakeCluster) -> FakeCluster:
    return kex_cluster  # with the KopfExample CRD (tests/unit/conftest.py)


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    registry = OperatorRegistry()
    TICKS.clear()
    TEN_TICKS[:] = [anyio.Event()]

    @anyop.on.create("kopfexamples", registry=registry, id="greet")
    async def greet(spec: anyop.Spec, **_: Any) -> dict[str, str]:
        return {"greeting": f"Hello, {spec['who']}!"}

    @anyop.timer(
        "kopfexamples", registry=registry, id="tick", interval=60, labels={"ticking": "yes"}
    )
    async def tick(patch: anyop.Patch, **_: Any) -> None:
        TICKS.append(len(TICKS) + 1)
        patch.status["ticks"] = len(TICKS)
        if len(TICKS) == 10:
            TEN_TICKS[0].set()

    return registry


async def test_a_create_handler_runs_against_the_fake_cluster(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == {"greeting": "Hello, Al!"}


@pytest.mark.fake_time
async def test_a_timer_of_60_seconds_fires_ten_times_on_virtual_time(
    fake_operator: RunningOperator,
) -> None:
    body = {"metadata": {"name": "kex", "labels": {"ticking": "yes"}}, "spec": {"who": "Al"}}
    await fake_operator.create(KEX, body)
    started = anyio.current_time()
    with anyio.fail_after(3600):
        await TEN_TICKS[0].wait()
    assert list(range(1, 11)) == TICKS
    assert anyio.current_time() - started >= 9 * 60  # ten firings, 60 virtual seconds apart


@pytest.mark.fake_time
async def test_the_operator_retries_a_throttled_patch_and_the_handler_result_arrives(
    fake_operator: RunningOperator, fake_cluster: FakeCluster
) -> None:
    fake_cluster.faults.script(
        Fault.throttle(retry_after=1), method="PATCH", path="/kopfexamples/kex", times=2
    )
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Bo"}})
    body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == {"greeting": "Hello, Bo!"}
    assert [struck.fault.kind.value for struck in fake_cluster.faults.struck] == ["throttle"] * 2


@pytest.mark.fake_time
@pytest.mark.parametrize("fake_cluster_seed", [1, 2, 3])
async def test_the_operator_gets_its_work_done_through_seeded_faults_on_patches_and_watches(
    fake_operator: RunningOperator, fake_cluster: FakeCluster
) -> None:
    fake_cluster.faults.script(Fault.server_error(503), method="PATCH")  # one for sure
    faults = [Fault.throttle(retry_after=2), Fault.server_error(503), Fault.drop()]
    fake_cluster.faults.inject(seed=fake_cluster.seed, rate=0.3, faults=faults, method="PATCH")
    watch_faults = [Fault.expire(), Fault.drop(), Fault.stall(), Fault.server_error(500)]
    fake_cluster.faults.inject(seed=fake_cluster.seed, rate=0.3, faults=watch_faults, watch=True)
    for name in ("a", "b", "c"):
        await fake_operator.create(KEX, {"metadata": {"name": name}, "spec": {"who": name}})
    for name in ("a", "b", "c"):
        body = await fake_operator.wait_for(KEX, name, lambda obj: obj["status"]["greet"],
                                            timeout=600)  # fmt: skip
        assert body["status"]["greet"] == {"greeting": f"Hello, {name}!"}
    assert fake_cluster.faults.struck[0].fault == Fault.server_error(503)
