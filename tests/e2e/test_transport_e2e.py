"""KubeTransport against a real kube-apiserver: reads, writes, and watches, on both backends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from anyop.kube.transport import KubeTransport, aiter_raw
from anyop.testing.assets import KUBERNETES_VERSION
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
async def kube(anyop_controlplane: LocalControlPlane) -> AsyncIterator[httpx.AsyncClient]:
    """httpx with KubeTransport and the admin certificate, on the test's own backend."""
    transport = KubeTransport(anyop_controlplane.ssl_context(), max_connections_per_origin=4)
    async with httpx.AsyncClient(
        base_url=anyop_controlplane.server, transport=transport, timeout=30
    ) as client:
        yield client


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Events:
    """The watch events of a streamed response; no async generator is left behind by a break."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = aiter_raw(response)
        self._lines: list[bytes] = []
        self._tail = b""

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while not self._lines:
            *lines, self._tail = (self._tail + await self._chunks.__anext__()).split(b"\n")
            self._lines = lines[::-1]
        event: dict[str, Any] = json.loads(self._lines.pop())
        return event


async def test_version_reports_the_pinned_release(kube: httpx.AsyncClient) -> None:
    response = await kube.get("/version")
    assert response.http_version == "HTTP/1.1"
    assert response.json()["gitVersion"] == KUBERNETES_VERSION


async def test_namespaces_are_listed(kube: httpx.AsyncClient, anyop_namespace: str) -> None:
    names = {
        ns["metadata"]["name"] for ns in (await kube.get("/api/v1/namespaces")).json()["items"]
    }
    assert {"default", "kube-system", anyop_namespace} <= names


async def test_a_configmap_is_created_patched_and_deleted(
    kube: httpx.AsyncClient, anyop_namespace: str
) -> None:
    path = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    created = await kube.post(path, json=configmap("cm", color="red"))
    assert created.status_code == 201
    patched = await kube.patch(f"{path}/cm", json={"data": {"color": "blue"}}, headers=MERGE)
    assert patched.json()["data"] == {"color": "blue"}
    assert (await kube.get(f"{path}/cm")).json()["data"] == {"color": "blue"}
    assert (await kube.delete(f"{path}/cm")).status_code == 200
    missing = await kube.get(f"{path}/cm")
    assert (missing.status_code, missing.json()["reason"]) == (404, "NotFound")


async def test_many_concurrent_requests_share_few_connections(
    kube: httpx.AsyncClient, anyop_namespace: str
) -> None:
    path = f"/api/v1/namespaces/{anyop_namespace}"
    statuses: list[int] = []

    async def get(count: int) -> None:
        for _ in range(count):
            statuses.append((await kube.get(path)).status_code)

    async with anyio.create_task_group() as tg:
        for _ in range(16):
            tg.start_soon(get, 10)
    assert statuses == [200] * 160


async def test_a_watch_sees_a_configmap_added_modified_and_deleted(
    kube: httpx.AsyncClient, anyop_namespace: str
) -> None:
    path = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    version = (await kube.get(path)).json()["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []
    params = {
        "watch": "1",
        "resourceVersion": version,
        "timeoutSeconds": "30",
        # Not the namespace's kube-root-ca.crt, which the controllers may add about now.
        "fieldSelector": "metadata.name=watched",
    }
    with anyio.fail_after(30):
        async with kube.stream("GET", path, params=params) as response:
            assert response.status_code == 200
            await kube.post(path, json=configmap("watched", step="1"))
            async for event in Events(response):
                seen.append((event["type"], event["object"]["data"]["step"]))
                if event["type"] == "ADDED":
                    body = {"data": {"step": "2"}}
                    await kube.patch(f"{path}/watched", json=body, headers=MERGE)
                elif event["type"] == "MODIFIED":
                    await kube.delete(f"{path}/watched")
                else:
                    break
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


async def test_a_watch_ends_at_its_server_timeout_and_its_connection_is_reused(
    kube: httpx.AsyncClient, anyop_namespace: str
) -> None:
    path = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    await kube.post(path, json=configmap("listed", step="0"))
    params = {"watch": "1", "resourceVersion": "0", "timeoutSeconds": "1"}
    with anyio.fail_after(15):
        async with kube.stream("GET", path, params=params) as response:
            lines = [json.loads(line) async for line in response.aiter_lines()]
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in lines]
    seen = [event for event in seen if event[1] != "kube-root-ca.crt"]  # the cluster's own
    assert seen == [("ADDED", "listed")]
    assert (await kube.get(f"{path}/listed")).status_code == 200


async def test_an_inactive_watch_raises_read_timeout(
    kube: httpx.AsyncClient, anyop_namespace: str
) -> None:
    path = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    version = (await kube.get(path)).json()["metadata"]["resourceVersion"]
    # No object can match (not the namespace's kube-root-ca.crt, which the controllers add
    # about now): nothing comes, and the read times out.
    params = {
        "watch": "1",
        "resourceVersion": version,
        "timeoutSeconds": "30",
        "fieldSelector": "metadata.name=nothing-by-this-name",
    }
    timeout = httpx.Timeout(30, read=0.5)
    with anyio.fail_after(15):
        async with kube.stream("GET", path, params=params, timeout=timeout) as response:
            with pytest.raises(httpx.ReadTimeout):
                await aiter_raw(response).__anext__()
