"""What the controllers, the scheduler and KWOK add to the local control plane, seen by operators.

An owner deleted takes its children with it (the garbage collector), a deleted namespace goes away
once anyop's delete handlers have released their finalizers (the namespace controller), and Pods
are scheduled to the fake node and become Running (kube-scheduler and KWOK). Each runs Kopf's
example with ``anyop run`` on both backends.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from tests.e2e.kex import wait_for_status
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_examples_more_e2e import (
    BACKENDS,
    EXAMPLES,
    Output,
    apply,
    find,
    get,
    kex,
    running_example,
    until,
)

from anyop.testing.controlplane import NODE_NAME, LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

Cluster = tuple[LocalControlPlane, str]


@pytest.fixture
def plane_ns(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str
) -> Cluster:
    """The control plane and a fresh namespace in it, with the KopfExample CRD applied."""
    if not anyop_controlplane.controllers or not anyop_controlplane.nodes:
        pytest.skip("needs the controllers and the fake node (not with --anyop-bare)")
    return anyop_controlplane, anyop_namespace


def pod_phase(plane: LocalControlPlane, namespace: str, name: str) -> str:
    """The Pod's phase, or ``""`` once it is gone."""
    found = kubectl(plane, "get", "-n", namespace, "pod", name, "--ignore-not-found", "-o", "json")
    return str(json.loads(found)["status"].get("phase", "")) if found.strip() else ""


def test_a_new_namespace_gets_its_service_account_and_root_ca(plane_ns: Cluster) -> None:
    plane, ns = plane_ns
    account = until(
        lambda: kubectl(plane, "get", "-n", ns, "sa", "default", "--ignore-not-found"),
        "the service-account controller makes the default account",
    )
    assert "default" in account
    config = until(lambda: find(plane, ns, "configmap", "kube-root-ca.crt"), "the root CA is there")
    assert config["data"]["ca.crt"] == plane.ca_path.read_text()
    node = get(plane, "default", "node", NODE_NAME)
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


# -- (b) an owner deleted -> its children deleted (05-children) ----------------------------------


@BACKENDS
@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
def test_children_go_with_their_deleted_kopfexample(
    plane_ns: Cluster, backend: str, propagation: str
) -> None:
    plane, ns = plane_ns
    with running_example(plane, "05-children", ns, backend) as output:
        apply(plane, ns, kex("kex-5", {"duration": 60}, labels={"app": "demo"}))
        output.wait_for(f"[{ns}/kex-5] Pod child is created: kex-5-")
        child = wait_for_status(plane, ns, "kex-5")["create_fn"]["children"][0]
        pod = get(plane, ns, "pods", "-l", "app=demo")["items"][0]["metadata"]
        assert pod["uid"] == child
        until(lambda: pod_phase(plane, ns, pod["name"]) == "Running", "the child runs")
        kubectl(
            plane,
            "delete",
            "-n",
            ns,
            "kex",
            "kex-5",
            f"--cascade={propagation.lower()}",
            "--wait=false",
        )
        until(lambda: not get(plane, ns, "pods", "-l", "app=demo")["items"], "the child is gone")
        until(lambda: not get(plane, ns, "kex")["items"], "the parent is gone")


# -- (c) a namespace deleted while anyop holds finalizers in it (02-handlers) ---------------------


@BACKENDS
def test_a_deleted_namespace_goes_after_the_delete_handlers_and_the_rest_is_still_served(
    plane_ns: Cluster, backend: str
) -> None:
    plane, kept = plane_ns
    doomed = f"test-{uuid.uuid4().hex[:10]}"
    kubectl(plane, "create", "namespace", doomed)
    source = str(EXAMPLES / "02-handlers" / "example.py")
    process = start_operator(plane, source, doomed, backend, "-n", kept)
    output = Output(process)
    try:
        for ns in (doomed, kept):
            apply(plane, ns, kex("kex-a", {"field": "a"}))
            output.wait_for(f"[{ns}/kex-a] Handler 'create_fn' succeeded.")
        held = get(plane, doomed, "kex", "kex-a")["metadata"]["finalizers"]
        assert held  # anyop's finalizer: the namespace cannot go before the delete handler ran
        kubectl(plane, "delete", "namespace", doomed, "--wait=false")
        output.wait_for(f"[{doomed}/kex-a] Cleaning up after kex-a.")
        output.wait_for(f"[{doomed}/kex-a] Deletion is processed: 1 succeeded; 0 failed.")
        gone = until(
            lambda: not kubectl(plane, "get", "ns", doomed, "--ignore-not-found").strip(),
            "the namespace disappears",
        )
        assert gone
        apply(plane, kept, kex("kex-b", {"field": "b"}))
        output.wait_for(f"[{kept}/kex-b] Handler 'create_fn' succeeded.")
        kubectl(
            plane,
            "patch",
            "-n",
            kept,
            "kex",
            "kex-a",
            "--type=merge",
            "-p",
            '{"spec": {"field": "c"}}',
        )
        output.wait_for(f"[{kept}/kex-a] Handler 'field_fn/spec.field' succeeded.")
    finally:
        text = output.stop()
    assert process.returncode == 0, text
    assert text.count(f"[{doomed}/kex-a] Cleaning up after kex-a.") == 1
    assert "Traceback" not in text, text


# -- (d) built-in resources on real Pods that run (14-builtin-resources) --------------------------


def ttl_pod(name: str, seconds: int) -> dict[str, Any]:
    """A pod that the example kills after ``seconds``; KWOK makes it Running on the fake node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"ttl-seconds": str(seconds)}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


@BACKENDS
def test_builtin_resources_a_running_pod_is_killed_when_due_and_an_early_delete_cancels(
    plane_ns: Cluster, backend: str
) -> None:
    plane, ns = plane_ns
    with running_example(plane, "14-builtin-resources", ns, backend) as output:
        apply(plane, ns, ttl_pod("spared", 600))
        until(lambda: pod_phase(plane, ns, "spared") == "Running", "the spared pod runs")
        apply(plane, ns, ttl_pod("short-lived", 5))
        until(lambda: pod_phase(plane, ns, "short-lived") == "Running", "the short one runs")
        running = get(plane, ns, "pod", "short-lived")
        output.wait_for(f"[{ns}/short-lived] === Pod killing happens NOW!")
        until(lambda: pod_phase(plane, ns, "short-lived") == "", "the killed pod is gone")
        output.wait_for(f"[{ns}/short-lived] Deletion is processed: 1 succeeded; 0 failed.")
        kubectl(plane, "delete", "-n", ns, "pod", "spared", "--timeout=60s")
        output.wait_for(f"[{ns}/spared] === Pod killing is cancelled!")
    assert running["spec"]["nodeName"] == NODE_NAME
    assert running["status"]["podIP"]  # KWOK's, from its Pod CIDR
    lines = output.text.splitlines()
    assert lines.count(f"[{ns}/short-lived] === Pod short-lived is being deleted.") == 1
    assert lines.count(f"[{ns}/spared] === Pod spared is being deleted.") == 1
    assert "Pod killing is cancelled" not in "".join(x for x in lines if "short-lived" in x)
