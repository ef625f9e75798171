"""Tests of the operator in example.py against a real local control plane (etcd + kube-apiserver).

Copy this folder into your project and adapt it: the fixtures come from anyop's pytest plugin.

- ``anyop_controlplane``: the control plane, started once per test session;
- ``anyop_kubeconfig``: its kubeconfig; ``KUBECONFIG`` points to it during the test, so the
  operator (and kubectl) talk to this control plane and nothing else;
- ``anyop_namespace``: a fresh namespace per test;
- ``anyop_apply``: ``kubectl apply`` for manifests (a path or a YAML string);
- ``anyop_operator`` (async): the operator, ready, in the test's own event loop and in a fresh
  namespace, with an API client, its log messages, and waits for conditions on objects.

Two ways to run the operator: ``anyop_operator`` in async tests (Trio or asyncio), and
``OperatorRunner`` (``KopfRunner`` in Kopf), which runs ``anyop run`` in a thread, for sync tests.
"""

import json
import time
from typing import Any

import example  # the operator: importing it registers its handlers
import pytest

import anyop
from anyop.testing import LocalControlPlane, OperatorRunner, RunningOperator
from anyop.testing.pytest_plugin import Apply, kubectl

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")

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
@pytest.mark.usefixtures("kopfexamples")
async def test_the_operator_greets_in_the_tests_own_event_loop(
    anyop_operator: RunningOperator,
) -> None:
    # The operator serves the default registry (example's handlers), ready: every resource listed.
    await anyop_operator.create(KEX, {"metadata": {"name": "kex-15"}, "spec": {"who": "Alice"}})
    greeted = await anyop_operator.wait_for(KEX, "kex-15", lambda obj: obj["status"]["greet"])
    await anyop_operator.patch(KEX, "kex-15", {"spec": {"who": "Bob"}})
    again = await anyop_operator.wait_for(
        KEX, "kex-15", lambda obj: obj["status"]["greet_again/spec.who"]
    )
    assert greeted["status"]["greet"] == "Hello, Alice!"
    assert again["status"]["greet_again/spec.who"] == "Hello again, Bob!"
    ns = anyop_operator.namespace
    assert f"[{ns}/kex-15] Greeting Alice on behalf of kex-15." in anyop_operator.messages
    assert f"[{ns}/kex-15] Handler 'greet' succeeded." in anyop_operator.messages
