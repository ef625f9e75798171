"""A throttled or failing API server at start-up delays peering, it does not end the operator.

The first look for the peering object meets more 429s and 500s in a row than the client's own
retries take; the operator serves nothing meanwhile, says why, and handles objects once the
server answers. (Which errors are transient: ``tests/unit/kube/test_retries.py``.)
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.unit.engine.test_peering_stealth import PEERING, peering_cluster
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import Fault
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


def handled_into(done: list[str]) -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry)
    def create_fn(name: str, **_: Any) -> None:
        done.append(name)

    return registry


def peering_settings() -> anyop.OperatorSettings:
    settings = anyop.OperatorSettings()
    settings.peering.name = "default"
    settings.networking.error_backoffs = (0.5, 1)  # 3 attempts per request
    return settings


async def test_a_throttled_first_look_for_the_peering_object_delays_the_start() -> None:
    fake, done = peering_cluster(), []
    fake.faults.script(Fault.throttle(retry_after=1), method="GET", path=PEERING, times=5)
    fake.faults.script(Fault.server_error(503), method="GET", path=PEERING, times=3)
    fake.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                 "metadata": {"name": "waiting", "namespace": "ns"}})  # fmt: skip
    with fake.routed(), anyio.fail_after(600):
        async with (
            fake.client(faults=False, timeout=30) as api,
            open_operator(handled_into(done), namespace="ns", api=api,
                          settings=peering_settings(), vault=await fake.vault()) as operator,
        ):  # fmt: skip
            while "waiting" not in done:
                await anyio.sleep(0.5)
            messages = operator.messages
    struck = [s for s in fake.faults.struck if s.path == PEERING]
    assert len(struck) == 8  # more than one request's 3 attempts: the look itself was repeated
    retried = [m for m in messages if m.startswith("Looking for the peering object")]
    assert retried
    assert all("; retrying in " in m for m in retried)
