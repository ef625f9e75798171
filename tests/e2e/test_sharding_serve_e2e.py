"""Sharding with `anyop.serve()`: two operators in one process share a FakeCluster's objects.

``settings.sharding`` is all it takes inside an AnyIO program (no CLI): each operator keeps its
own Lease, the objects are split, and when one operator stops, the other takes them all. Time is
virtual (Trio's ``MockClock``, or an asyncio loop with a fake clock), so the Lease timings are
waited in full at no cost in wall time. Both backends.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import anyio
import pytest
from tests.e2e.test_fake_faults_e2e import CRD, anyio_backend  # noqa: F401 (a fixture)
from tests.replicas import sharded_settings

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.sharding import ACK_ANNOTATION, GROUP_LABEL
from anyop.testing import FakeCluster

pytestmark = pytest.mark.anyio

NAMESPACE = "shards"
WAIT = 3600.0  # virtual seconds; only reached when something is broken


def sharded(identity: str) -> anyop.OperatorSettings:
    settings = sharded_settings(identity, namespace=NAMESPACE)
    settings.sharding.lease_duration = 4
    settings.sharding.renew_deadline = 3
    settings.sharding.retry_period = 1
    return settings


async def settled(api: Any, members: int) -> bool:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
    response = await api.get(path, params={"labelSelector": f"{GROUP_LABEL}=anyop-shards"})
    items = response.json()["items"]
    acks = {(i["metadata"].get("annotations") or {}).get(ACK_ANNOTATION) for i in items}
    return len(items) == members and len(acks) == 1 and None not in acks


async def test_two_serve_calls_share_the_objects_and_one_takes_all_when_the_other_stops() -> None:
    fake = FakeCluster(seed=3)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    handled: list[tuple[str, str]] = []
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry)
    async def create_fn(name: str, memo: anyop.Memo, **_: Any) -> None:
        handled.append((memo["who"], name))

    async def until(condition: Any) -> None:
        with anyio.fail_after(WAIT):
            while not await condition():
                await anyio.sleep(0.1)

    vault = await fake.vault()
    stops = {"a": anyio.Event(), "b": anyio.Event()}
    with fake.routed():
        async with fake.client(timeout=30) as api, anyio.create_task_group() as tg:
            for who, stop in stops.items():
                serve = functools.partial(
                    anyop.serve,
                    registry,
                    settings=sharded(who),
                    namespaces=[NAMESPACE],
                    memo=anyop.Memo(who=who),
                    vault=vault,
                    stop_event=stop,
                )
                tg.start_soon(serve)
            await until(functools.partial(settled, api, 2))
            await anyio.sleep(2)  # both activate the view at their next step
            path = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"
            for index in range(40):
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": f"early-{index}"}}  # fmt: skip
                (await api.post(path, json=body)).raise_for_status()

            async def all_handled(count: int = 40) -> bool:
                return len(handled) >= count

            await until(all_handled)
            early = Counter(who for who, _ in handled)
            stops["a"].set()  # a graceful exit: a deletes its Lease, b takes everything
            await until(functools.partial(settled, api, 1))
            for index in range(10):
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": f"late-{index}"}}  # fmt: skip
                (await api.post(path, json=body)).raise_for_status()
            await until(functools.partial(all_handled, 50))
            stops["b"].set()
    names = Counter(name for _, name in handled)
    assert set(names.values()) == {1}  # each object handled once
    assert set(early) == {"a", "b"}
    assert all(10 <= count <= 30 for count in early.values()), early
    assert {who for who, name in handled if name.startswith("late-")} == {"b"}
