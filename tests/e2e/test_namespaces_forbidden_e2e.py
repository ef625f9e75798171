"""An identity that may not list namespaces serves the exact names among its patterns (N4); one
that may not list CRDs serves the resources found at its start."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.kube.connection import ConnectionInfo
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd")]

ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: kex-operator, namespace: {ns}}}
rules:
  - apiGroups: [kopf.dev]
    resources: [kopfexamples, kopfexamples/status]
    verbs: [get, list, watch, patch]
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: kex-operator, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: kex-operator}}
subjects:
  - {{kind: ServiceAccount, name: kex-operator, namespace: {ns}}}
"""


def namespaced_identity(plane: LocalControlPlane, namespace: str) -> ConnectionInfo:
    """A service account allowed to handle KopfExamples in one namespace, and nothing else."""
    kubectl(plane, "create", "serviceaccount", "-n", namespace, "kex-operator")
    kubectl(plane, "apply", "-f", "-", stdin=ROLE.format(ns=namespace))
    token = kubectl(plane, "create", "token", "-n", namespace, "kex-operator").strip()
    return ConnectionInfo(server=plane.server, ca_path=str(plane.ca_path), token=token)


async def test_without_namespace_permissions_the_exact_names_are_served_with_a_warning(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    identity = await anyio.to_thread.run_sync(
        namespaced_identity, anyop_controlplane, anyop_namespace
    )
    vault = Vault()
    await vault.populate({"sa": identity})
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        return "served"

    namespaces = [anyop_namespace, "other-*"]  # a glob: discovery would need to list them
    async with running(registry, anyop_namespace, namespaces=namespaces, vault=vault):
        await create(api, anyop_namespace, "n4")
        path = url(anyop_namespace, "n4")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert body["status"]["create_fn"] == "served"
    assert any(
        "Namespaces cannot be listed (forbidden)" in message and anyop_namespace in message
        for message in caplog.messages
    )
    assert any(  # and CRDs: the ones created or deleted later are noticed only at a restart
        message.startswith("CustomResourceDefinitions cannot be listed (forbidden)")
        for message in caplog.messages
    )
