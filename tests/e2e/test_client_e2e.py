"""The API client against the real local control plane, on both Trio and asyncio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from anyop.errors import ApiError, ConflictError, InvalidError, NotFoundError
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, PatchType, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.events import EVENTS, post_event
from anyop.kube.resources import Resource
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment", namespaced=True)
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", kind="Namespace", namespaced=False)


async def admin_vault(plane: LocalControlPlane) -> Vault:
    info = ConnectionInfo(
        plane.server,
        ca_path=str(plane.ca_path),
        certificate_path=str(plane.client_cert_path),
        private_key_path=str(plane.client_key_path),
    )
    vault = Vault()
    await vault.populate({"admin": info})
    return vault


@pytest.fixture
async def client(anyop_controlplane: LocalControlPlane) -> AsyncIterator[KubeClient]:
    async with open_client(await admin_vault(anyop_controlplane)) as client:
        yield client


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace, "labels": {"test": "client"}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def deployment(name: str, namespace: str) -> dict[str, Any]:
    containers = [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}
    spec = {"selector": {"matchLabels": {"app": name}}, "template": template}
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


async def test_an_object_lives_and_dies(client: KubeClient, anyop_namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("cm", anyop_namespace, a="1"))
    assert created["metadata"]["uid"]
    assert "managedFields" not in created["metadata"]
    fetched = await client.get(CONFIGMAPS, name="cm", namespace=anyop_namespace)
    assert fetched["data"] == {"a": "1"}

    fetched["data"] = {"a": "2"}
    replaced = await client.replace(CONFIGMAPS, fetched)
    assert replaced["data"] == {"a": "2"}
    with pytest.raises(ConflictError):
        await client.replace(CONFIGMAPS, fetched)  # its resourceVersion is stale now

    deleted = await client.delete(
        CONFIGMAPS, name="cm", namespace=anyop_namespace, grace_period_seconds=0
    )
    assert deleted["kind"] == "Status"  # built-in kinds answer a deletion with a Status
    assert deleted["details"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAPS, name="cm", namespace=anyop_namespace)


async def test_merge_and_json_patches(client: KubeClient, anyop_namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("cm", anyop_namespace, a="1", b="2"))
    merged = await client.patch(
        CONFIGMAPS, {"data": {"a": None, "c": "3"}}, name="cm", namespace=anyop_namespace
    )
    assert merged["data"] == {"b": "2", "c": "3"}

    version = merged["metadata"]["resourceVersion"]
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {"op": "add", "path": "/data/d", "value": "4"},
    ]
    ns = anyop_namespace
    patched = await client.patch(
        CONFIGMAPS, guarded, name="cm", namespace=ns, patch_type=PatchType.JSON
    )
    assert patched["data"] == {"b": "2", "c": "3", "d": "4"}
    with pytest.raises(InvalidError):  # the test op fails: the version moved on
        await client.patch(CONFIGMAPS, guarded, name="cm", namespace=ns, patch_type=PatchType.JSON)
    assert created["metadata"]["uid"] == patched["metadata"]["uid"]


async def test_a_strategic_patch_merges_lists_by_key(
    client: KubeClient, anyop_namespace: str
) -> None:
    await client.create(DEPLOYMENTS, deployment("web", anyop_namespace))
    change = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}}
    patched = await client.patch(
        DEPLOYMENTS, change, name="web", namespace=anyop_namespace, patch_type=PatchType.STRATEGIC
    )
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("a", "a:1"), ("b", "b:2")]

    merged = await client.patch(DEPLOYMENTS, change, name="web", namespace=anyop_namespace)
    assert [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]] == ["b"]


async def test_a_strategic_patch_of_a_custom_resource_is_refused(
    client: KubeClient, anyop_namespace: str, kopfexample_crd: str
) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex"}}
    await client.create(KEX, body, namespace=anyop_namespace)
    with pytest.raises(ApiError) as error:
        await client.patch(
            KEX, {"spec": {}}, name="kex", namespace=anyop_namespace, patch_type=PatchType.STRATEGIC
        )
    assert error.value.status == 415


async def test_server_side_apply_owns_fields_and_conflicts(
    client: KubeClient, anyop_namespace: str, anyop_controlplane: LocalControlPlane
) -> None:
    applied = await client.apply(
        CONFIGMAPS, configmap("cm", anyop_namespace, a="1"), field_manager="one"
    )
    assert applied["data"] == {"a": "1"}
    assert "managedFields" not in applied["metadata"]

    with pytest.raises(ConflictError) as conflict:
        await client.apply(CONFIGMAPS, configmap("cm", anyop_namespace, a="2"), field_manager="two")
    assert conflict.value.status == 409
    assert conflict.value.details.get("causes")

    forced = await client.apply(
        CONFIGMAPS, configmap("cm", anyop_namespace, a="2"), field_manager="two", force=True
    )
    assert forced["data"] == {"a": "2"}

    vault = await admin_vault(anyop_controlplane)
    async with open_client(vault, keep_managed_fields=True) as keeping:
        kept = await keeping.get(CONFIGMAPS, name="cm", namespace=anyop_namespace)
    assert {entry["manager"] for entry in kept["metadata"]["managedFields"]} >= {"two"}


async def test_deletion_preconditions(client: KubeClient, anyop_namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("cm", anyop_namespace))
    ns = anyop_namespace
    with pytest.raises(ConflictError):
        await client.delete(CONFIGMAPS, name="cm", namespace=ns, uid="not-its-uid")
    with pytest.raises(ConflictError):
        await client.delete(CONFIGMAPS, name="cm", namespace=ns, resource_version="1")
    await client.delete(
        CONFIGMAPS,
        name="cm",
        namespace=ns,
        uid=created["metadata"]["uid"],
        resource_version=created["metadata"]["resourceVersion"],
        propagation_policy="Background",
    )
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAPS, name="cm", namespace=ns)


async def test_the_status_subresource(
    client: KubeClient, anyop_namespace: str, kopfexample_crd: str
) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex"}}
    await client.create(KEX, {**body, "spec": {"x": 1}}, namespace=anyop_namespace)
    ns = anyop_namespace

    ignored = await client.patch(KEX, {"status": {"seen": 1}}, name="kex", namespace=ns)
    assert "status" not in ignored  # the main resource ignores .status
    patched = await client.patch(
        KEX, {"status": {"seen": 1}}, name="kex", namespace=ns, subresource="status"
    )
    assert patched["status"] == {"seen": 1}

    current = await client.get(KEX, name="kex", namespace=ns, subresource="status")
    current["status"] = {"seen": 2}
    current["spec"] = {"x": 999}  # the status subresource ignores everything but .status
    replaced = await client.replace(KEX, current, subresource="status")
    assert (replaced["status"], replaced["spec"]) == ({"seen": 2}, {"x": 1})


async def test_lists_come_in_pages(client: KubeClient, anyop_namespace: str) -> None:
    for index in range(25):
        await client.create(CONFIGMAPS, configmap(f"cm{index:02}", anyop_namespace))
    pages = [
        page
        async for page in client.list_pages(
            CONFIGMAPS, namespace=anyop_namespace, label_selector="test=client", page_size=10
        )
    ]
    assert [len(page.items) for page in pages] == [10, 10, 5]
    assert len({page.resource_version for page in pages}) == 1

    listed = await client.list(CONFIGMAPS, namespace=anyop_namespace, page_size=10)
    names = [item["metadata"]["name"] for item in listed.items if item["metadata"].get("labels")]
    assert names == [f"cm{index:02}" for index in range(25)]
    assert {(item["apiVersion"], item["kind"]) for item in listed.items} == {("v1", "ConfigMap")}
    assert listed.resource_version

    selected = await client.list(
        CONFIGMAPS, namespace=anyop_namespace, field_selector="metadata.name=cm07"
    )
    assert [item["metadata"]["name"] for item in selected.items] == ["cm07"]


async def test_errors_are_typed(client: KubeClient, anyop_namespace: str) -> None:
    with pytest.raises(NotFoundError) as missing:
        await client.get(CONFIGMAPS, name="nothing", namespace=anyop_namespace)
    assert (missing.value.status, missing.value.reason) == (404, "NotFound")
    assert missing.value.details["name"] == "nothing"

    await client.create(CONFIGMAPS, configmap("cm", anyop_namespace))
    with pytest.raises(ConflictError) as exists:
        await client.create(CONFIGMAPS, configmap("cm", anyop_namespace))
    assert exists.value.reason == "AlreadyExists"

    with pytest.raises(InvalidError) as invalid:
        await client.create(CONFIGMAPS, configmap("Not_A_Name", anyop_namespace))
    assert invalid.value.reason == "Invalid"
    assert invalid.value.details["causes"][0]["field"] == "metadata.name"


async def test_events_are_posted_about_objects(
    client: KubeClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    created = await client.create(CONFIGMAPS, configmap("cm", anyop_namespace))
    namespace = await client.get(NAMESPACES, name=anyop_namespace)
    await post_event(client, obj=created, type="Normal", reason="Checked", message="x" * 2000)
    await post_event(client, obj=namespace, type="Warning", reason="Noticed", message="ns")
    assert "Failed to post an event" not in caplog.text

    here = await client.list(EVENTS, namespace=anyop_namespace)
    (event,) = [e for e in here.items if e["reason"] == "Checked"]
    assert event["involvedObject"]["uid"] == created["metadata"]["uid"]
    assert (event["type"], event["count"], len(event["message"])) == ("Normal", 1, 1024)
    assert event["reportingComponent"] == "anyop"
    assert event["metadata"]["name"].startswith("anyop-event-")
    about_ns = f"involvedObject.name={anyop_namespace}"
    default = await client.list(EVENTS, namespace="default", field_selector=about_ns)
    assert [(e["reason"], e["involvedObject"]["kind"]) for e in default.items] == [
        ("Noticed", "Namespace")
    ]


async def test_a_failure_to_post_an_event_is_only_logged(
    client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    ghost = configmap("ghost", "no-such-namespace-anywhere")
    await post_event(client, obj=ghost, type="Normal", reason="Lost", message="nowhere")
    assert "Failed to post an event. Ignoring and continuing." in caplog.text


async def test_the_api_servers_warnings_are_logged_once(
    client: KubeClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    unknown = {**configmap("warned", anyop_namespace), "spec": {"x": 1}}
    dotted = deployment("dotted.name", anyop_namespace)
    with caplog.at_level("WARNING", logger="anyop.kube"):
        await client.create(CONFIGMAPS, unknown)
        await client.patch(CONFIGMAPS, {"spec": {"x": 2}}, name="warned", namespace=anyop_namespace)
        await client.create(DEPLOYMENTS, dotted)
    paths = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("The API")]
    assert logged == [
        f'The API server warns (POST {paths}): unknown field "spec"',
        f"The API server warns (POST /apis/apps/v1/namespaces/{anyop_namespace}/deployments): "
        "metadata.name: this is used in Pod names and hostnames, which can result in surprising "
        "behavior; a DNS label is recommended: [must not contain dots]",
    ]
