"""Tests of the operator in example.py against a real local control plane (etcd + kube-apiserver).

Copy this folder into your project and adapt it: the fixtures come from anyop's pytest plugin.

- ``anyop_controlplane``: the control plane, started once per test session;
- ``anyop_kubeconfig``: its kubeconfig; ``KUBECONFIG`` points to it during the test, so the
  operator (and kubectl) talk to this control plane and nothing else;
- ``anyop_namespace``: a fresh namespace per test;
- ``anyop_apply``: ``kubectl apply`` for manifests (a path or a YAML string).

Two ways to run the operator: ``OperatorRunner`` (``KopfRunner`` in Kopf) runs ``anyop run`` in
a thread, for plain sync tests; ``run_operator`` runs it in an async test's own task group.
"""

import json
import time
from typing import Any

import anyio
import example  # the operator: importing it registers its handlers
import httpx
import pytest

from anyop.testing import LocalControlPlane, OperatorRunner, run_operator
from anyop.testing.pytest_plugin import Apply, kubectl

OBJECT = """
apiVersion: kopf.dev/v1
kind: KopfExample
metadata: {name: kex-15}
spec: {who: Alice}
"""


def wait_for_status(plane: LocalControlPlane, namespace: str, key: str) -> dict[str, Any]:
    """Poll the object with kubectl until ``status[key]`` is there."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = json.loads(kubectl(plane, "get", "-n", namespace, "kex", "kex-15", "-o", "json"))
        if key in body.get("status", {}):
            return dict(body["status"])
        time.sleep(0.2)
    raise AssertionError(f"No status.{key} within 30 seconds.")


async def poll_status(api: httpx.AsyncClient, url: str, key: str) -> dict[str, Any]:
    """Poll the object with httpx until ``status[key]`` is there."""
    while True:
        status: dict[str, Any] = (await api.get(url)).json().get("status", {})
        if key in status:
            return status
        await anyio.sleep(0.1)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.usefixtures("anyop_kubeconfig", "kopfexamples")
def test_the_operator_greets_in_a_background_thread(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, anyop_apply: Apply, backend: str
) -> None:
    args = ["run", "-m", example.__name__, "-n", anyop_namespace, "--backend", backend]
    with OperatorRunner([*args, "--log-format", "plain"], timeout=60) as runner:
        anyop_apply(OBJECT, namespace=anyop_namespace)
        status = wait_for_status(anyop_controlplane, anyop_namespace, "greet")
        kubectl(anyop_controlplane, "patch", "-n", anyop_namespace, "kex", "kex-15",
                "--type=merge", "-p", '{"spec": {"who": "Bob"}}')  # fmt: skip
        updated = wait_for_status(anyop_controlplane, anyop_namespace, "greet_again/spec.who")
    assert runner.exit_code == 0
    assert runner.exception is None
    assert status["greet"] == "Hello, Alice!"
    assert updated["greet_again/spec.who"] == "Hello again, Bob!"
    assert f"[{anyop_namespace}/kex-15] Greeting Alice on behalf of kex-15." in runner.output
    assert f"[{anyop_namespace}/kex-15] Handler 'greet' succeeded." in runner.output


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig", "kopfexamples")
async def test_the_operator_greets_in_the_tests_own_event_loop(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, anyop_apply: Apply
) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{anyop_namespace}/kopfexamples/kex-15"
    tls = anyop_controlplane.ssl_context()
    async with (
        httpx.AsyncClient(base_url=anyop_controlplane.server, verify=tls) as api,
        run_operator(namespaces=[anyop_namespace]),  # ready: every resource is listed
    ):
        await anyio.to_thread.run_sync(anyop_apply, OBJECT, anyop_namespace)
        with anyio.fail_after(30):
            status = await poll_status(api, url, "greet")
    assert status["greet"] == "Hello, Alice!"
