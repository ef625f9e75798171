"""A sharded replica counts a dead replica out, takes its objects over, and deletes its Lease.

The dead replica is a Lease of the shard group that nobody renews (its process is gone). The
live replica runs on a FakeCluster on virtual time; the handlers' results are what a user sees.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.replicas import sharded_settings
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.sharding import member_body
from anyop.testing import FakeCluster
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
GROUP = "kex-shards"
DEAD = "dead-replica"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
WAIT = 600.0  # virtual seconds; reached only if something is broken


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends on virtual time (the Leases' seconds cost no wall time)."""
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


def cluster_with_a_dead_replica() -> FakeCluster:
    fake = FakeCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    now = datetime.datetime.now(datetime.UTC)
    fake.create(
        member_body(group=GROUP, identity=DEAD, namespace="ns", duration=15, ack=None, now=now)
    )
    return fake


async def test_a_dead_replicas_lease_is_deleted_and_its_objects_are_handled() -> None:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", id="create_fn", registry=registry)
    def create_fn(**_: Any) -> str:
        return "handled"

    settings = sharded_settings("live-replica", namespace="ns", group=GROUP)
    fake = cluster_with_a_dead_replica()
    names = [f"kex-{i}" for i in range(8)]
    with fake.routed():
        async with (
            fake.client(timeout=30) as api,
            open_operator(
                registry, namespace="ns", api=api, vault=await fake.vault(), settings=settings
            ) as operator,
        ):
            for name in names:
                await operator.create(KEX, {"metadata": {"name": name}, "spec": {}})
            handled = lambda obj: obj["status"]["create_fn"] == "handled"  # noqa: E731
            for name in names:  # the dead replica's share too, once it is counted out
                await operator.wait_for(KEX, name, handled, timeout=WAIT)
            with anyio.fail_after(WAIT):
                while DEAD in await lease_holders(api):
                    await anyio.sleep(1)
            assert await lease_holders(api) == ["live-replica"]
    assert f"Deleted the stale shard Lease of {DEAD!r}." in operator.messages


async def lease_holders(api: Any) -> list[str]:
    items = (await api.get(LEASES)).json()["items"]
    return sorted(item["spec"]["holderIdentity"] for item in items)
