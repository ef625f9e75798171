"""Conformance of 410 Gone against a real API server that forgets: kube-apiserver without its
watch cache (``--watch-cache=false``) and compacting etcd every 2 s, beside FakeCluster after
``compact()``. The other scenarios' server replays recent history from its watch cache instead.

Slow (a control plane of its own, and waits for etcd's compaction): marked ``slow``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.conftest import run_on
from tests.conformance.harness import Scenario, Target

from anyop.kube.transport import KubeTransport
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FLAGS = ["--watch-cache=false", "--etcd-compaction-interval=2s"]


@pytest.fixture(scope="module")
def compacting_plane() -> Iterator[LocalControlPlane]:
    """A bare control plane that forgets old resourceVersions within seconds."""
    with LocalControlPlane(apiserver_flags=FLAGS, controllers=False, nodes=False) as plane:
        yield plane


@pytest.fixture
async def compacting_api(compacting_plane: LocalControlPlane) -> AsyncIterator[httpx.AsyncClient]:
    plane = compacting_plane
    transport = KubeTransport(plane.ssl_context())  # plain iterators (see harness._raw_chunks)
    async with httpx.AsyncClient(base_url=plane.server, transport=transport, timeout=30) as api:
        yield api


async def _until_compacted(t: Target, path: str, version: str) -> None:
    """Wait (unrecorded) until a list from ``version`` is refused: etcd compacted it."""
    params = {"resourceVersion": version, "resourceVersionMatch": "Exact"}
    with anyio.fail_after(60):
        while (await t.api.get(path, params=params)).status_code != 410:
            await anyio.sleep(0.5)


async def _compared(api: httpx.AsyncClient, scenario: Scenario) -> None:
    namespace = f"conf-{uuid.uuid4().hex[:8]}"
    real = await run_on("real", api, scenario, namespace=namespace)
    fake = FakeCluster(controllers=False)
    async with fake.client(timeout=30) as fake_api:

        async def compacting(t: Target) -> None:
            t.compact = _fake_compact(fake)
            await scenario(t)

        faked = await run_on("fake", fake_api, compacting, namespace=namespace)
    assert _without_watch_messages(faked) == _without_watch_messages(real)


def _without_watch_messages(records: list[Any]) -> list[Any]:
    """The records with the message of a watch's ERROR event left out: etcd says "too old
    resource version: N (M)", the watch cache (and FakeCluster, as a server with one) "The
    resourceVersion for the provided watch is too old."; the code and reason are compared."""
    kept = []
    for record in records:
        if "events" in record:
            events = [
                {**event, "object": {k: v for k, v in event["object"].items() if k != "message"}}
                if event.get("type") == "ERROR"
                else event
                for event in record["events"]
            ]
            record = {**record, "events": events}
        kept.append(record)
    return kept


def _fake_compact(fake: FakeCluster) -> Any:
    async def compact() -> None:
        fake.compact()

    return compact


async def test_watches_and_lists_from_a_compacted_version_get_410_expired(
    compacting_api: httpx.AsyncClient,
) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "a"}})  # fmt: skip
        old = made["metadata"]["resourceVersion"]
        changed = [await t.patch(t.cm("a"), {"data": {"n": str(index)}}) for index in range(3)]
        if t.compact is not None:
            await t.compact()
        else:
            # A watch from ``old`` starts after it: at the first patch, which etcd must have
            # compacted too (a list from ``old`` is refused as soon as ``old`` is).
            await _until_compacted(t, t.cm(), changed[0]["metadata"]["resourceVersion"])
        await t.get(t.cm(), params={"resourceVersion": old, "resourceVersionMatch": "Exact"})
        params = {"resourceVersion": old, "timeoutSeconds": "2"}
        await t.watch(t.cm(), params, until=lambda events: bool(events))
        await t.get(t.cm(), params={"limit": "1", "resourceVersion": old,
                                    "resourceVersionMatch": "Exact"})  # fmt: skip

    await _compared(compacting_api, scenario)
