"""examples/19-reconcile under `anyop run`: spec.replicas kept as that many ConfigMaps."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.kex import apply_kex
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "19-reconcile" / "example.py")
SELECTOR = "app.kubernetes.io/managed-by=example-19"


def configmaps(plane: LocalControlPlane, namespace: str) -> dict[str, dict[str, Any]]:
    """The example's ConfigMaps by name."""
    found = kubectl(plane, "get", "configmaps", "-n", namespace, "-l", SELECTOR, "-o", "json")
    return {item["metadata"]["name"]: item for item in json.loads(found)["items"]}


def wait_for_names(plane: LocalControlPlane, namespace: str, names: set[str]) -> None:
    """Wait until exactly these ConfigMaps exist (and none is being deleted)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if set(configmaps(plane, namespace)) == names:
            return
        time.sleep(0.1)
    raise AssertionError(f"not {sorted(names)}: {sorted(configmaps(plane, namespace))}")


def wait_for_data(
    plane: LocalControlPlane, namespace: str, name: str, *, data: dict[str, str]
) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if configmaps(plane, namespace).get(name, {}).get("data") == data:
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} does not hold {data}: {configmaps(plane, namespace).get(name)}")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_reconcile_example_keeps_replicas_as_configmaps(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str, backend: str
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = LiveOperator(plane, EXAMPLE, ns, backend, "--verbose")
    try:
        apply_kex(plane, ns, "kex", replicas=3)  # scale up from nothing
        wait_for_names(plane, ns, {"kex-0", "kex-1", "kex-2"})
        owner = configmaps(plane, ns)["kex-0"]["metadata"]["ownerReferences"][0]
        assert owner["kind"] == "KopfExample"
        assert owner["controller"] is True

        apply_kex(plane, ns, "kex", replicas=5)  # scale up
        wait_for_names(plane, ns, {f"kex-{i}" for i in range(5)})
        apply_kex(plane, ns, "kex", replicas=2)  # scale down
        wait_for_names(plane, ns, {"kex-0", "kex-1"})

        uid = configmaps(plane, ns)["kex-1"]["metadata"]["uid"]
        kubectl(plane, "delete", "configmap", "kex-1", "-n", ns)  # deleted by hand: comes back
        wait_for_names(plane, ns, {"kex-0", "kex-1"})
        assert configmaps(plane, ns)["kex-1"]["metadata"]["uid"] != uid

        edit = json.dumps({"data": {"index": "99", "extra": "x"}})
        kubectl(plane, "patch", "configmap", "kex-0", "-n", ns, "--type=merge", "-p", edit)
        wait_for_data(plane, ns, "kex-0", data={"parent": "kex", "index": "0"})  # put back
        body = json.loads(kubectl(plane, "get", "kex", "kex", "-n", ns, "-o", "json"))
        assert body["status"]["replicas"] == 2
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert f"[{ns}/kex] Reconciler 'keep_replicas' succeeded." in output
    assert "Traceback" not in output, output

    # A restart while the spec changed converges without duplicates.
    apply_kex(plane, ns, "kex", replicas=4)
    operator = LiveOperator(plane, EXAMPLE, ns, backend, "--verbose")
    try:
        wait_for_names(plane, ns, {f"kex-{i}" for i in range(4)})
        operator.wait_for(f"[{ns}/kex] Reconciler 'keep_replicas' succeeded.")
        time.sleep(1)  # anything more it would do, it does now
        assert set(configmaps(plane, ns)) == {f"kex-{i}" for i in range(4)}
    finally:
        output = operator.stop()
    assert output.count("Created kex-") == 2, output  # only the two missing ones
    assert "already exists" not in output, output
