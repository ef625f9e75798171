"""Conversion webhooks called by the real kube-apiserver over TLS, on both backends.

``examples/20-conversion`` runs under ``anyop run``: Backends created in one version are read,
listed and written in the other, also after the storage version changes, and a function's error
reaches the client. In-process operators prove the startup checks and a chain through a hub
version, on a CRD of their own (so no test sees another's conversions).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, running
from tests.e2e.test_examples_more_e2e import running_example, until

import anyop.on as on
from anyop.engine.operator.launch import single_error
from anyop.errors import ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from anyop.webhooks.server import WebhookServer

EXAMPLE_CRD = Path(__file__).parents[2] / "examples" / "20-conversion" / "crd.yaml"
CRD_NAME = "backends.convert.anyop.dev"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPLIED = f"The conversion webhook of {CRD_NAME} is applied."


def backends(namespace: str, version: str, name: str | None = None) -> str:
    base = f"/apis/convert.anyop.dev/{version}/namespaces/{namespace}/backends"
    return f"{base}/{name}" if name else base


def backend(name: str, version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"convert.anyop.dev/{version}",
        "kind": "Backend",
        "metadata": {"name": name, "labels": {"made-in": version}},
        "spec": spec,
    }


@pytest.fixture
def api_sync(anyop_controlplane: LocalControlPlane) -> Iterator[httpx.Client]:
    ctx = anyop_controlplane.ssl_context()
    with httpx.Client(base_url=anyop_controlplane.server, verify=ctx, timeout=30) as client:
        yield client


@pytest.fixture
def example_crd(anyop_controlplane: LocalControlPlane, api_sync: httpx.Client) -> Iterator[str]:
    """The example's CRD as its file says (storage in v1), deleted after the test: with the
    operator gone, its objects in the other version could not even be listed any more."""
    kubectl(anyop_controlplane, "apply", "-f", str(EXAMPLE_CRD))
    wait_for_crd(anyop_controlplane, CRD_NAME)
    yield CRD_NAME
    delete_converted_crd(anyop_controlplane, api_sync, CRD_NAME)


def delete_converted_crd(plane: LocalControlPlane, api: httpx.Client, name: str) -> None:
    """Delete a CRD whose conversion webhook is gone: its conversion set to None first.

    The API server rebuilds the CRD's handler a moment after; its deletion lists the objects in
    every version, which the old handler cannot do without the operator's webhook: so each
    version is listed until it can be, then the CRD is deleted."""
    body = api.get(f"{CRDS}/{name}").json()
    body["spec"]["conversion"] = {"strategy": "None"}
    assert api.put(f"{CRDS}/{name}", json=body).status_code == 200
    plural, group = body["spec"]["names"]["plural"], body["spec"]["group"]
    versions = [version["name"] for version in body["spec"]["versions"]]
    deadline = time.monotonic() + 60
    while any(api.get(f"/apis/{group}/{v}/{plural}").status_code != 200 for v in versions):
        assert time.monotonic() < deadline, "the CRD's conversion did not become None"
        time.sleep(0.2)
    kubectl(plane, "delete", "crd", name, "--wait=true", "--timeout=120s")


def set_storage(api: httpx.Client, crd: str, version: str) -> None:
    """Make ``version`` the storage version; return once the API server stores in it."""
    body = api.get(f"{CRDS}/{crd}").json()
    for item in body["spec"]["versions"]:
        item["storage"] = item["name"] == version
    assert api.put(f"{CRDS}/{crd}", json=body).status_code == 200
    until(
        lambda: version in api.get(f"{CRDS}/{crd}").json()["status"].get("storedVersions", ()),
        f"{version} among the stored versions of {crd}",
    )


def converting(api: httpx.Client, namespace: str) -> bool:
    """Whether the API server converts with the operator's webhook (a v1alpha1 object is only
    valid in v1 once split; without the webhook the API server just relabels it)."""
    probe = backend("probe", "v1alpha1", {"endpoint": "probe:1"})
    response = api.post(backends(namespace, "v1alpha1"), params={"dryRun": "All"}, json=probe)
    return response.status_code == 201


@pytest.mark.parametrize("backend_name", ["asyncio", "trio"])
def test_the_conversion_example_converts_both_ways_in_every_request(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    example_crd: str,
    api_sync: httpx.Client,
    backend_name: str,
) -> None:
    ns, api = anyop_namespace, api_sync
    with running_example(anyop_controlplane, "20-conversion", ns, backend_name) as output:
        until(lambda: APPLIED in output.text, "the CRD's conversion applied")
        until(lambda: converting(api, ns), "the API server converting with the webhook")

        created = api.post(
            backends(ns, "v1alpha1"),
            json=backend("db", "v1alpha1", {"endpoint": "db.example:5432"}),
        )
        modern = api.post(
            backends(ns, "v1"), json=backend("cache", "v1", {"host": "cache", "port": 6379})
        )
        refused = api.post(
            backends(ns, "v1alpha1"), json=backend("bad", "v1alpha1", {"endpoint": "nowhere"})
        )
        db_v1 = api.get(backends(ns, "v1", "db")).json()
        db_v1alpha1 = api.get(backends(ns, "v1alpha1", "db")).json()
        cache_v1alpha1 = api.get(backends(ns, "v1alpha1", "cache")).json()
        listed_v1 = api.get(backends(ns, "v1")).json()
        listed_v1alpha1 = api.get(backends(ns, "v1alpha1")).json()
        greeted = until(
            lambda: api.get(backends(ns, "v1alpha1", "db")).json().get("status", {}).get("greet"),
            "the create handler's result, read in v1alpha1",
        )

        set_storage(api, example_crd, "v1alpha1")
        legacy = api.post(
            backends(ns, "v1"), json=backend("legacy", "v1", {"host": "old", "port": 80})
        )
        old_db_v1 = api.get(backends(ns, "v1", "db")).json()
        old_db_v1alpha1 = api.get(backends(ns, "v1alpha1", "db")).json()
        legacy_v1 = api.get(backends(ns, "v1", "legacy")).json()
        legacy_v1alpha1 = api.get(backends(ns, "v1alpha1", "legacy")).json()
        replaced = api.patch(
            backends(ns, "v1alpha1", "db"),
            json={"spec": {"endpoint": "db:1"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        patched_v1 = api.get(backends(ns, "v1", "db")).json()

    assert created.status_code == 201, created.text
    assert created.json()["spec"] == {"endpoint": "db.example:5432"}
    assert modern.status_code == 201, modern.text
    assert db_v1["apiVersion"] == "convert.anyop.dev/v1"
    assert db_v1["spec"] == {"host": "db.example", "port": 5432}
    assert db_v1alpha1["spec"] == {"endpoint": "db.example:5432"}
    assert db_v1["metadata"]["labels"] == {"made-in": "v1alpha1"}
    assert db_v1alpha1["metadata"]["labels"] == {"made-in": "v1alpha1"}
    assert db_v1["metadata"]["uid"] == db_v1alpha1["metadata"]["uid"]
    assert cache_v1alpha1["spec"] == {"endpoint": "cache:6379"}
    assert {i["metadata"]["name"]: i["spec"] for i in listed_v1["items"]} == {
        "db": {"host": "db.example", "port": 5432},
        "cache": {"host": "cache", "port": 6379},
    }
    assert {i["metadata"]["name"]: i["spec"] for i in listed_v1alpha1["items"]} == {
        "db": {"endpoint": "db.example:5432"},
        "cache": {"endpoint": "cache:6379"},
    }
    assert all(i["apiVersion"] == "convert.anyop.dev/v1alpha1" for i in listed_v1alpha1["items"])
    assert greeted == {"address": "db.example:5432"}

    assert refused.status_code >= 400
    assert "The endpoint 'nowhere' is not host:port." in refused.json()["message"]
    assert "split_endpoint" in refused.json()["message"]

    assert legacy.status_code == 201, legacy.text
    assert old_db_v1["spec"] == {"host": "db.example", "port": 5432}
    assert old_db_v1alpha1["spec"] == {"endpoint": "db.example:5432"}
    assert legacy_v1["spec"] == {"host": "old", "port": 80}
    assert legacy_v1alpha1["spec"] == {"endpoint": "old:80"}
    assert replaced.status_code == 200, replaced.text
    assert patched_v1["spec"] == {"host": "db", "port": 1}
    assert "Backend at host db.example, port 5432." in output.text


def three_versions(group: str) -> dict[str, Any]:
    """A CRD with v1alpha1, v1beta1 and v1 (the storage one), spec fields kept as they are."""
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    }
    versions = [
        {"name": name, "served": True, "storage": name == "v1", "schema": schema}
        for name in ("v1alpha1", "v1beta1", "v1")
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"hubs.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "versions": versions,
            "names": {"kind": "Hub", "plural": "hubs", "singular": "hub"},
        },
    }


@pytest.fixture
def hub_group(anyop_controlplane: LocalControlPlane, api_sync: httpx.Client) -> Iterator[str]:
    """A CRD of the test's own, in three versions; deleted after the test."""
    group = f"h{uuid.uuid4().hex[:8]}.convert.anyop.dev"
    kubectl(anyop_controlplane, "apply", "-f", "-", stdin=json.dumps(three_versions(group)))
    wait_for_crd(anyop_controlplane, f"hubs.{group}")
    yield group
    delete_converted_crd(anyop_controlplane, api_sync, f"hubs.{group}")


def hub_steps(registry: OperatorRegistry, group: str) -> None:
    """v1 is the hub: v1alpha1 has ``size`` in MiB, v1beta1 in KiB, v1 in bytes."""
    factors = {"v1alpha1": 2**20, "v1beta1": 2**10}
    for spoke, factor in factors.items():

        @on.convert(group, "hubs", from_=spoke, to="v1", registry=registry, id=f"{spoke}-up")
        def up(spec: dict[str, Any], factor: int = factor, **_: Any) -> None:
            spec["size"] *= factor

        @on.convert(group, "hubs", from_="v1", to=spoke, registry=registry, id=f"{spoke}-down")
        async def down(
            spec: dict[str, Any], labels: dict[str, str], factor: int = factor, **_: Any
        ) -> None:
            spec["size"] //= factor
            labels["seen-by"] = "anyop"


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_a_chain_through_a_hub_converts_between_two_spokes(
    api: httpx.AsyncClient, anyop_namespace: str, hub_group: str
) -> None:
    registry = OperatorRegistry()
    hub_steps(registry, hub_group)
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed_conversion = True
    base = f"/apis/{hub_group}/{{}}/namespaces/{anyop_namespace}/hubs"
    body = {
        "apiVersion": f"{hub_group}/v1alpha1",
        "kind": "Hub",
        "metadata": {"name": "h"},
        "spec": {"size": 3},
    }
    async with running(registry, anyop_namespace, settings):
        with anyio.fail_after(DEADLINE):
            while (await api.post(base.format("v1alpha1"), json=body)).status_code != 201:
                await anyio.sleep(0.2)  # until the API server calls the webhook
            in_kib = (await api.get(base.format("v1beta1") + "/h")).json()
            in_bytes = (await api.get(base.format("v1") + "/h")).json()
            listed = (await api.get(base.format("v1beta1"))).json()
    assert in_bytes["spec"] == {"size": 3 * 2**20}
    assert in_kib["spec"] == {"size": 3 * 2**10}
    assert in_kib["metadata"]["labels"] == {"seen-by": "anyop"}
    assert "labels" not in in_bytes["metadata"]
    assert [item["spec"] for item in listed["items"]] == [{"size": 3 * 2**10}]


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_a_missing_step_refuses_the_startup_and_names_it(
    anyop_namespace: str, hub_group: str
) -> None:
    registry = OperatorRegistry()
    hub_steps(registry, hub_group)
    registry.webhooks.handlers[:] = [
        h for h in registry.webhooks.handlers if h.id != "v1beta1-down"
    ]
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    with anyio.fail_after(DEADLINE), pytest.raises((ConfigError, BaseExceptionGroup)) as info:
        async with running(registry, anyop_namespace, settings):
            pass
    error = single_error(info.value) if isinstance(info.value, BaseExceptionGroup) else info.value
    assert isinstance(error, ConfigError)
    assert "from v1 to v1beta1" in str(error)
    assert "from v1alpha1 to v1beta1" in str(error)
    assert f"hubs.{hub_group}" in str(error)


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_a_managed_step_to_a_version_the_crd_lacks_refuses_the_startup(
    api: httpx.AsyncClient, anyop_namespace: str, hub_group: str
) -> None:
    registry = OperatorRegistry()
    hub_steps(registry, hub_group)
    on.convert(hub_group, "hubs", from_="v1", to="v2", registry=registry, id="future")(
        lambda **_: None
    )
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed_conversion = True
    with anyio.fail_after(DEADLINE), pytest.raises((ConfigError, BaseExceptionGroup)) as info:
        async with running(registry, anyop_namespace, settings):
            pass
    error = single_error(info.value) if isinstance(info.value, BaseExceptionGroup) else info.value
    crd = (await api.get(f"{CRDS}/hubs.{hub_group}")).json()
    assert isinstance(error, ConfigError)
    assert "Conversion 'future' (v1 -> v2) names the version 'v2'" in str(error)
    assert crd["spec"]["conversion"] == {"strategy": "None"}  # untouched: refused before
