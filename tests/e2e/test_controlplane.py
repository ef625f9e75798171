"""The local control plane is a real Kubernetes API server: proven with plain httpx."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import httpx
import pytest

from anyop.testing.assets import KUBERNETES_VERSION
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import Apply

pytestmark = pytest.mark.anyio

KEX = "/apis/kopf.dev/v1/namespaces/{ns}/kopfexamples"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSONPATCH = {"Content-Type": "application/json-patch+json"}


def kex(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name},
        "spec": spec,
    }


async def test_version_reports_the_pinned_release(api: httpx.AsyncClient) -> None:
    version = (await api.get("/version")).json()
    assert version["gitVersion"] == KUBERNETES_VERSION


async def test_unauthenticated_requests_are_anonymous_and_refused(
    anyop_controlplane: LocalControlPlane,
) -> None:
    import ssl

    ctx = ssl.create_default_context(cafile=str(anyop_controlplane.ca_path))
    async with httpx.AsyncClient(base_url=anyop_controlplane.server, verify=ctx) as anonymous:
        response = await anonymous.get("/api/v1/namespaces")
    assert response.status_code in (401, 403)


async def test_a_new_crd_becomes_established(api: httpx.AsyncClient) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    url = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await api.post(url, json=crd)).status_code == 201
    with anyio.fail_after(30):
        while True:
            body = (await api.get(f"{url}/widgets.{group}")).json()
            conditions = {
                c["type"]: c["status"] for c in (body.get("status") or {}).get("conditions") or []
            }
            if conditions.get("Established") == "True":
                break
            await anyio.sleep(0.1)
    with anyio.fail_after(30):  # the new resource's storage may answer 429 while it initializes
        while (await api.get(f"/apis/{group}/v1/widgets")).status_code == 429:
            await anyio.sleep(0.1)
    assert (await api.get(f"/apis/{group}/v1/widgets")).status_code == 200
    await api.delete(f"{url}/widgets.{group}")


async def test_custom_objects_are_created_read_listed_patched_and_deleted(
    api: httpx.AsyncClient, kopfexample_crd: str, anyop_namespace: str
) -> None:
    url = KEX.format(ns=anyop_namespace)
    created = await api.post(url, json=kex("kex-1", field="a", items=["x"]))
    assert created.status_code == 201
    assert (await api.get(f"{url}/kex-1")).json()["spec"]["field"] == "a"
    names = [o["metadata"]["name"] for o in (await api.get(url)).json()["items"]]
    assert names == ["kex-1"]

    merged = await api.patch(f"{url}/kex-1", json={"spec": {"field": "b"}}, headers=MERGE)
    assert merged.json()["spec"] == {"field": "b", "items": ["x"]}
    ops = [{"op": "add", "path": "/spec/items/-", "value": "y"}]
    patched = await api.patch(f"{url}/kex-1", content=json.dumps(ops), headers=JSONPATCH)
    assert patched.json()["spec"]["items"] == ["x", "y"]
    status = await api.patch(f"{url}/kex-1/status", json={"status": {"ok": True}}, headers=MERGE)
    assert status.json()["status"] == {"ok": True}

    assert (await api.delete(f"{url}/kex-1")).status_code == 200
    assert (await api.get(f"{url}/kex-1")).status_code == 404


async def test_a_failed_jsonpatch_test_is_refused_with_422(
    api: httpx.AsyncClient, kopfexample_crd: str, anyop_namespace: str
) -> None:
    url = KEX.format(ns=anyop_namespace)
    await api.post(url, json=kex("kex-rv"))
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "add", "path": "/spec/x", "value": 1},
    ]
    response = await api.patch(f"{url}/kex-rv", content=json.dumps(ops), headers=JSONPATCH)
    assert response.status_code == 422


async def test_watch_streams_the_matching_events(
    api: httpx.AsyncClient, kopfexample_crd: str, anyop_namespace: str
) -> None:
    url = KEX.format(ns=anyop_namespace)
    listing = (await api.get(url)).json()
    rv = listing["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        # Read until the server ends the stream: leaving httpx's nested async generators early
        # leaves them to the garbage collector, which Trio reports as a ResourceWarning.
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "3"}
        async with api.stream("GET", url, params=params) as response:
            async for line in response.aiter_lines():
                event = json.loads(line)
                seen.append((event["type"], event["object"]["metadata"]["name"]))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await api.post(url, json=kex("kex-w"))
            await api.patch(f"{url}/kex-w", json={"spec": {"a": 1}}, headers=MERGE)
            await api.delete(f"{url}/kex-w")
    assert seen == [("ADDED", "kex-w"), ("MODIFIED", "kex-w"), ("DELETED", "kex-w")]


def test_manifests_are_applied_into_a_namespace(
    anyop_apply: Apply, anyop_namespace: str, kopfexample_crd: str
) -> None:
    out = anyop_apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  a: b\n",
        namespace=anyop_namespace,
    )
    assert "configmap/cm1" in out
