"""Discovery against the real local control plane: built-ins, CRDs, and CRDs that come later."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from anyop.errors import NotFoundError
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.discovery import Catalog, discover, discover_group
from anyop.kube.resources import Resource
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

DEADLINE = 30  # seconds for the API server to publish a new CRD in discovery
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", kind="CRD", namespaced=False
)


@pytest.fixture
async def client(anyop_controlplane: LocalControlPlane) -> AsyncIterator[KubeClient]:
    plane = anyop_controlplane
    info = ConnectionInfo(
        plane.server,
        ca_path=str(plane.ca_path),
        certificate_path=str(plane.client_cert_path),
        private_key_path=str(plane.client_key_path),
    )
    vault = Vault()
    await vault.populate({"admin": info})
    async with open_client(vault) as client:
        yield client


def crd(group: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    versions = [
        {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": schema,
            "subresources": {"status": {}},
        },
    ]
    names = {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wdg"]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Cluster", "names": names, "versions": versions},
    }


async def served_versions(catalog: Catalog, group: str) -> set[str]:
    return {resource.version for resource in await catalog.rescan(group) if resource.group == group}


def by_name(resources: list[Resource]) -> dict[tuple[str, str, str], Resource]:
    return {(r.group, r.version, r.plural): r for r in resources}


async def test_everything_served_is_discovered(client: KubeClient, kopfexample_crd: str) -> None:
    found = by_name(await discover(client))
    configmaps = found["", "v1", "configmaps"]
    assert (configmaps.kind, configmaps.namespaced, configmaps.preferred) == (
        "ConfigMap",
        True,
        True,
    )
    assert {"list", "watch", "patch"} <= configmaps.verbs
    assert "status" in found["apps", "v1", "deployments"].subresources
    assert found["", "v1", "namespaces"].namespaced is False
    kex = found["kopf.dev", "v1", "kopfexamples"]
    assert kex.kind == "KopfExample"
    assert kex.shortcuts == {"kex", "kexes"}
    assert kex.subresources == {"status"}
    assert ("", "v1", "pods/status") not in found  # subresources fold into their parents


async def test_a_crd_created_after_the_start_is_found_by_a_rescan(client: KubeClient) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.anyop.test"
    catalog = Catalog(client)
    await catalog.refresh()
    assert catalog.find(group, "widgets") is None

    await client.create(CRDS, crd(group))
    try:
        with anyio.fail_after(DEADLINE):  # the API server publishes new versions one by one
            while await served_versions(catalog, group) != {"v1", "v1beta1"}:
                await anyio.sleep(0.2)
        preferred = catalog.find(group, "widgets")
        assert preferred is not None
        assert (preferred.version, preferred.kind, preferred.namespaced) == ("v1", "Widget", False)
        assert preferred.shortcuts == {"wdg"}
        beta = catalog.find(group, "widgets", "v1beta1")
        assert beta is not None
        assert not beta.preferred
        assert catalog.find("", "configmaps") is not None  # other groups stay
    finally:
        await client.delete(CRDS, name=f"widgets.{group}")
    with anyio.fail_after(DEADLINE):
        while await discover_group(client, group):
            await anyio.sleep(0.2)


async def test_a_group_that_is_not_served_has_no_resources(client: KubeClient) -> None:
    assert await discover_group(client, "nothing.anyop.test") == []
    core = await discover_group(client, "")
    assert any(resource.plural == "configmaps" for resource in core)


async def test_a_crd_of_a_missing_group_is_not_found(client: KubeClient) -> None:
    with pytest.raises(NotFoundError):
        await client.get(CRDS, name="widgets.nothing.anyop.test")
