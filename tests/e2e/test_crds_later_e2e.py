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
