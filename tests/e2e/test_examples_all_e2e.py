"""examples/18-all-at-once under `anyop run`: what a user sees, feature by feature."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "18-all-at-once" / "example.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_all_at_once_example(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str, backend: str
) -> None:
    plane, ns, port = anyop_controlplane, anyop_namespace, free_port()
    liveness = f"http://127.0.0.1:{port}/healthz"
    operator = LiveOperator(plane, EXAMPLE, ns, backend, "--liveness", liveness)
    try:
        apply_kex(plane, ns, "kex-18", field="blue")
        status = wait_for_status(plane, ns, "kex-18", "tick")
        assert status["create_fn"] == {"siblings": []}
        assert status["create_fn/validate"] == "valid"
        assert status["create_fn/announce"] == "announced"
        assert status["tick"]["indexed"] == 1
        operator.wait_for(f"[{ns}/kex-18] Heartbeat of kex-18 started.")
        assert httpx.get(liveness, timeout=10).json() == {"objects": 1}

        apply_kex(plane, ns, "kex-18", field="green")
        status = wait_for_status(plane, ns, "kex-18", "field_changed/spec.field")
        assert status["field_changed/spec.field"] == {"old": "blue", "new": "green"}
        operator.wait_for(f"[{ns}/kex-18] spec.field changed from 'blue' to 'green'.")

        events = json.loads(kubectl(plane, "get", "events", "-n", ns, "-o", "json"))["items"]
        created = [e for e in events if e.get("reason") == "Created"]
        assert [e["message"] for e in created] == ["kex-18 is ready."]
        assert created[0]["source"]["component"] == "all-at-once"

        body = json.loads(kubectl(plane, "get", "kex", "kex-18", "-n", ns, "-o", "json"))
        assert "all-at-once.anyop.dev/finalizer" in body["metadata"]["finalizers"]
        kubectl(plane, "delete", "kex", "kex-18", "-n", ns, "--timeout=60s")
        operator.wait_for(f"[{ns}/kex-18] Cleaning up after kex-18.")
        operator.wait_for("Heartbeat of kex-18 stopped: <DaemonStoppingReason.RESOURCE_DELETED")
        time.sleep(0.5)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Goodbye after " in output
