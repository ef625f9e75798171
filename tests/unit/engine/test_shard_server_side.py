"""Sharded replicas ask the API server for their own objects only (``shardSelector``).

Two real operators on one FakeCluster (which applies shard selectors as kube-apiserver 1.36 does
with its ``ShardedListAndWatch`` gate on), on virtual time: each lists and watches with the
selector of its share once it has joined, the two shares tile the hash space, and every object
is handled once. A resource with indexes is watched whole: its indexes hold every object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.replicas import sharded_settings
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.shard_ranges import shard_selector
from anyop.sharding import View
from anyop.testing import FakeCluster

pytestmark = pytest.mark.anyio

CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
KEXES = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
OBJECTS = 40
WAIT = 600.0  # virtual seconds; reached only if something is broken


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


def replica(
    identity: str, handled: list[tuple[str, str]], *, indexed: bool = False
) -> tuple[OperatorRegistry, anyop.OperatorSettings]:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", id="create_fn", registry=registry)
    async def create_fn(name: str, **_: Any) -> None:
        handled.append((identity, name))

    if indexed:

        @anyop.index("kopfexamples", id="names", registry=registry)
        def names(name: str, **_: Any) -> str:
            return name

    return registry, sharded_settings(identity, namespace="ns", group="kex-shards")


def selectors_sent(fake: FakeCluster) -> list[str | None]:
    """The ``shardSelector`` of every list and watch of the KopfExamples, in order."""
    sent: list[str | None] = []
    for line in fake.trace.lines:
        entry = json.loads(line)
        if entry[0] == "request" and entry[1] == "GET" and entry[2] == KEXES:
            sent.append(dict(entry[3]).get("shardSelector"))
    return sent


async def run_two(fake: FakeCluster, handled: list[tuple[str, str]], *, indexed: bool) -> None:
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    stops = {name: anyio.Event() for name in "ab"}
    with fake.routed(), anyio.fail_after(WAIT):
        vault = await fake.vault()
        async with fake.client(timeout=30) as api, anyio.create_task_group() as tg:

            async def serve(identity: str, ready: anyio.Event) -> None:
                registry, settings = replica(identity, handled, indexed=indexed)
                await anyop.serve(
                    registry=registry, settings=settings, vault=vault, namespaces=["ns"],
                    stop_event=stops[identity], ready_event=ready,
                )  # fmt: skip

            for identity in "ab":  # "a" serves alone first, then "b" joins
                ready = anyio.Event()
                tg.start_soon(serve, identity, ready)
                await ready.wait()
                await anyio.sleep(30)  # it has joined: the view of those started is active
            for i in range(OBJECTS):
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": f"kex-{i}"}}  # fmt: skip
                (await api.post(KEXES, json=body)).raise_for_status()
            while len(handled) < OBJECTS:
                await anyio.sleep(1)
            await anyio.sleep(30)  # anything handled twice would show by then
            for stop in stops.values():
                stop.set()


async def test_each_replica_watches_only_its_share_and_every_object_is_handled_once() -> None:
    fake, handled = FakeCluster(), []
    await run_two(fake, handled, indexed=False)
    names = [name for _, name in handled]
    assert sorted(names) == sorted(f"kex-{i}" for i in range(OBJECTS))  # each once
    assert {identity for identity, _ in handled} == {"a", "b"}
    view = View.of(["a", "b"])
    shares = {member: shard_selector(view.ranges(member)) for member in view.members}
    sent = selectors_sent(fake)
    assert shares["a"] in sent  # "a" was alone first: it narrowed its watch when "b" came
    assert shares["b"] in sent
    assert set(sent) <= {None, *shares.values()}  # none before joining; then its share


async def test_a_resource_with_indexes_is_watched_whole() -> None:
    fake, handled = FakeCluster(), []
    await run_two(fake, handled, indexed=True)
    assert sorted(name for _, name in handled) == sorted(f"kex-{i}" for i in range(OBJECTS))
    assert set(selectors_sent(fake)) == {None}
