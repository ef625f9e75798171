"""``settings.peering.stealth``: the keep-alives of the peering record go on, but unlogged.

An operator peers in the ``default`` AnyopPeering of a FakeCluster for five virtual minutes with a
lifetime of 60 s, so it renews its record several times; without stealth each renewal is logged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import FakeCluster
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

MANIFESTS = Path(__file__).parents[3] / "manifests"
CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
PEERING = "/apis/anyop.dev/v1/namespaces/ns/anyoppeerings/default"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends on virtual time (the peering's minutes cost no wall time)."""
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


def peering_cluster() -> FakeCluster:
    fake = FakeCluster()
    fake.apply(CRD)
    fake.apply(MANIFESTS / "peering.yaml")
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    fake.create({"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering",
                 "metadata": {"name": "default", "namespace": "ns"}})  # fmt: skip
    return fake


def keepalives(fake: FakeCluster) -> int:
    """The PATCHes of the peering object that the operator sent."""
    requests = [json.loads(line) for line in fake.trace.lines if line.startswith('["request"')]
    return sum(1 for _, method, path, _ in requests if method == "PATCH" and path == PEERING)


@pytest.mark.parametrize("stealth", [False, True], ids=["logged", "stealth"])
async def test_keepalives_are_logged_unless_stealth(stealth: bool) -> None:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry)
    def create_fn(**_: Any) -> None:
        pass

    settings = anyop.OperatorSettings()
    settings.peering.name = "default"
    settings.peering.lifetime = 60
    settings.peering.stealth = stealth
    fake = peering_cluster()
    with fake.routed():
        async with (
            fake.client(timeout=30) as api,
            open_operator(
                registry, namespace="ns", api=api, vault=await fake.vault(), settings=settings
            ) as operator,
        ):
            await anyio.sleep(300)  # virtual seconds: keep-alives every 50-55 s
            messages = operator.messages
    assert keepalives(fake) >= 4  # the record was renewed either way
    logged = [m for m in messages if m.startswith("Keep-alive in")]
    assert (logged == []) if stealth else (len(logged) >= 4)
