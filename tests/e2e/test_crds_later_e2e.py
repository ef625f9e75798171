"""A CRD created after the operator started is served without a restart."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import running, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("anyop_kubeconfig")]

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.late.anyop.dev
spec:
  scope: Namespaced
  group: late.anyop.dev
  names: {{kind: {kind}, plural: {plural}, singular: {singular}}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


async def test_a_crd_applied_after_the_start_is_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    registry = OperatorRegistry()
    created: list[str] = []

    @on.create(f"{plural}.late.anyop.dev", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        created.append(name)
        return "seen"

    async with running(registry, anyop_namespace):
        assert any(m.startswith("Unresolved resources") for m in caplog.messages)
        manifest = CRD.format(kind=kind, plural=plural, singular=singular)
        await anyio.to_thread.run_sync(anyop_apply, manifest)
        message = f"Serving resources created after the start: {plural}.v1.late.anyop.dev."
        await wait_for_log(caplog, message)
        base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": "l1"}}
        (await api.post(base, json=body)).raise_for_status()
        found = await wait_for(api, f"{base}/l1", lambda b: "create_fn" in b.get("status", {}))
    assert found["status"]["create_fn"] == "seen"
    assert created == ["l1"]


async def test_with_scanning_disabled_a_crd_applied_after_the_start_is_not_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    registry = OperatorRegistry()
    created: list[str] = []
    on.create(f"{plural}.late.anyop.dev", registry=registry, id="create_fn")(
        lambda name, **_: created.append(name)
    )
    settings = OperatorSettings()
    settings.scanning.disabled = True

    async with running(registry, anyop_namespace, settings):
        manifest = CRD.format(kind=kind, plural=plural, singular=singular)
        await anyio.to_thread.run_sync(anyop_apply, manifest)
        base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": "l1"}}
        (await api.post(base, json=body)).raise_for_status()
        await anyio.sleep(3)  # with scanning, it is served within a second (the test above)
    assert created == []
    assert not any("created after the start" in m for m in caplog.messages)


@pytest.mark.usefixtures("kopfexample_crd")
async def test_with_scanning_disabled_namespace_patterns_are_ignored_with_a_warning(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.e2e.test_engine_e2e import create, url

    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "seen")
    settings = OperatorSettings()
    settings.scanning.disabled = True
    namespaces = [anyop_namespace, "nothing-*"]
    async with running(registry, None, settings, namespaces=namespaces, clusterwide=False):
        await create(api, anyop_namespace, "exact")
        path = url(anyop_namespace, "exact")
        await wait_for(api, path, lambda b: b.get("status", {}).get("create_fn") == "seen")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("the namespace patterns ['nothing-*'] are ignored" in w for w in warnings)


async def test_a_deleted_crd_stops_its_watches_after_its_objects_and_a_new_one_is_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deleting a CRD deletes its objects first: their deletion is handled (the finalizer holds
    the CRD's deletion until then); then the resource's watches stop, with no error loop while
    it is gone, and the same CRD applied again is served again."""
    caplog.set_level(logging.DEBUG, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    crd_name, resource = f"{plural}.late.anyop.dev", f"{plural}.v1.late.anyop.dev"
    manifest = CRD.format(kind=kind, plural=plural, singular=singular)
    await anyio.to_thread.run_sync(anyop_apply, manifest)
    registry = OperatorRegistry()
    created: list[str] = []
    deleted: list[str] = []
    pinged: set[str] = set()

    @on.create(crd_name, registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        created.append(name)
        return "seen"

    @on.delete(crd_name, registry=registry, id="delete_fn")
    async def delete_fn(name: str, **_: Any) -> None:
        deleted.append(name)

    @anyop.daemon(crd_name, registry=registry, id="pinger")
    async def pinger(name: str, stopped: anyop.DaemonStopped, **_: Any) -> None:
        pinged.add(name)
        await stopped.wait()

    base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"

    async def create(name: str) -> None:
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": name}}
        (await api.post(base, json=body)).raise_for_status()
        await wait_for(api, f"{base}/{name}", lambda b: "create_fn" in b.get("status", {}))

    async with running(registry, anyop_namespace):
        await create("before")
        (await api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}"))
        await wait_for_log(caplog, f"Stopped serving resources whose CRD is deleted or changed: "
                                   f"{resource}.")  # fmt: skip
        assert deleted == ["before"]  # handled before the CRD could go
        since = len(caplog.records)
        await anyio.sleep(3)  # the backoff of a failing watch would have logged by now
        later = caplog.records[since:]
        warnings = [r.getMessage() for r in later if r.levelno >= logging.WARNING]
        assert all(w.startswith("Unresolved resources cannot be served") for w in warnings)
        assert len(warnings) <= 1  # said once, not at every change of any CRD
        assert not [r.getMessage() for r in later if "Watch-stream" in r.getMessage()]

        await anyio.to_thread.run_sync(anyop_apply, manifest)
        await wait_for_log(caplog, f"Serving resources created after the start: {resource}.")
        await create("after")
    assert created == ["before", "after"]
    assert pinged == {"before", "after"}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors
