"""An API error when a watch starts (403 here) is retried with a backoff until it works.

As Kopf documents, a 4xx answer is not retried by the request itself; but where Kopf's watcher
then leaves the resource unwatched until a restart (Kopf #1077), anyop's watch never gives up: it
says what failed at every attempt, the operator is not ready while a resource is not listed, and
once the permission is granted the objects are served.
"""

from __future__ import annotations

import functools
import logging

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, url, wait_for
from tests.e2e.test_namespaces_forbidden_e2e import ROLE

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.kube.connection import ConnectionInfo
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd")]

NO_LISTING = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: kex-operator, namespace: {ns}}}
rules:
  - apiGroups: [kopf.dev]
    resources: [kopfexamples, kopfexamples/status]
    verbs: [get, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: kex-operator, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: kex-operator}}
subjects:
  - {{kind: ServiceAccount, name: kex-operator, namespace: {ns}}}
"""


def unlisting_identity(plane: LocalControlPlane, namespace: str) -> ConnectionInfo:
    """A service account that may read and patch KopfExamples, but not list or watch them."""
    kubectl(plane, "create", "serviceaccount", "-n", namespace, "kex-operator")
    kubectl(plane, "apply", "-f", "-", stdin=NO_LISTING.format(ns=namespace))
    token = kubectl(plane, "create", "token", "-n", namespace, "kex-operator").strip()
    return ConnectionInfo(server=plane.server, ca_path=str(plane.ca_path), token=token)


async def test_a_forbidden_watch_is_retried_and_served_once_it_is_permitted(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    plane, ns = anyop_controlplane, anyop_namespace
    identity = await anyio.to_thread.run_sync(unlisting_identity, plane, ns)
    vault = Vault()
    await vault.populate({"sa": identity})
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "served")
    await create(api, ns, "early")  # exists before the operator may see it
    stop, ready = anyio.Event(), anyio.Event()
    operator = functools.partial(serve, registry=registry, namespaces=[ns], vault=vault,
                                 stop_event=stop, ready_event=ready)  # fmt: skip

    def refusals() -> list[logging.LogRecord]:
        return [
            r
            for r in caplog.records
            if "Watch-stream for kopfexamples.v1.kopf.dev failed; retrying in" in r.getMessage()
            and "(403 Forbidden)" in r.getMessage()
        ]

    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        with anyio.fail_after(DEADLINE):
            while len(refusals()) < 2:
                await anyio.sleep(0.1)
        assert not ready.is_set()  # not ready while a resource cannot be listed
        assert all(r.levelno == logging.WARNING for r in refusals())
        permit = functools.partial(kubectl, plane, "apply", "-f", "-", stdin=ROLE.format(ns=ns))
        await anyio.to_thread.run_sync(permit)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        body = await wait_for(api, url(ns, "early"), lambda b: "create_fn" in b.get("status", {}))
        stop.set()
    assert body["status"]["create_fn"] == "served"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors
