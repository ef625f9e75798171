"""An operator's handlers tested on FakeCluster: no cluster, virtual time, a scripted fault."""

from pathlib import Path
from typing import Any

import anyio
import pytest

import anyop
from anyop.testing import FakeCluster, Fault, RunningOperator, virtual_time

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"
registry = anyop.OperatorRegistry()


@anyop.on.create("kopfexamples", registry=registry, id="greet")
async def greet(spec: anyop.Spec, **_: Any) -> str:
    return f"Hello, {spec['who']}!"


@anyop.timer("kopfexamples", registry=registry, id="tick", interval=60)
async def tick(patch: anyop.Patch, status: anyop.Status, **_: Any) -> None:
    patch.status["ticks"] = status.get("ticks", 0) + 1


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """Both backends, on a clock that jumps to the next deadline whenever every task waits."""
    return virtual_time(request.param)


@pytest.fixture
def anyop_registry() -> anyop.OperatorRegistry:
    return registry


@pytest.fixture
def fake_cluster() -> FakeCluster:
    """The cluster of `fake_operator`, with the CRD applied before the operator starts."""
    fake = FakeCluster(seed=1)
    fake.apply(CRD)
    return fake


@pytest.mark.anyio
async def test_the_greeting_arrives_despite_two_throttled_patches(
    fake_operator: RunningOperator, fake_cluster: FakeCluster
) -> None:
    fake_cluster.faults.script(Fault.throttle(retry_after=5), method="PATCH", times=2)
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == "Hello, Al!"
    assert len(fake_cluster.faults.struck) == 2


@pytest.mark.anyio
async def test_the_timer_ticks_once_a_minute(fake_operator: RunningOperator) -> None:
    started = anyio.current_time()
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    five = lambda obj: obj["status"]["ticks"] >= 5  # noqa: E731
    body = await fake_operator.wait_for(KEX, "kex", five, timeout=3600)
    assert body["status"]["ticks"] == 5
    assert 4 * 60 <= anyio.current_time() - started < 5 * 60  # minutes of virtual time
