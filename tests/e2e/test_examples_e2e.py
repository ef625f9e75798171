"""The examples run as documented: `anyop run examples/NN-*/example.py` on both backends."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_cli_run import start_operator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_handlers_example_runs_subhandlers_updates_fields_and_deletions(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    source = str(EXAMPLES / "02-handlers" / "example.py")
    operator = start_operator(plane, source, ns, backend)
    try:
        apply_kex(plane, ns, "kex-2", field="a", items=["x", "y"])
        status = wait_for_status(plane, ns, "kex-2", "create_fn/y")
        assert status["create_fn/x"] == "handled x"
        assert status["create_fn/y"] == "handled y"
        assert status["create_fn"] == {"items": 2}
        apply_kex(plane, ns, "kex-2", field="b", items=["x", "y"])
        status = wait_for_status(plane, ns, "kex-2", "field_fn/spec.field")
        assert status["field_fn/spec.field"] == {"old": "a", "new": "b"}
        kubectl(plane, "delete", "-n", ns, "kex", "kex-2", "--timeout=60s")
        gone = json.loads(kubectl(plane, "get", "-n", ns, "kex", "-o", "json"))
        assert gone["items"] == []
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    assert f"[{ns}/kex-2] Handler 'create_fn/x' succeeded." in output
    assert f"[{ns}/kex-2] Handler 'update_fn' succeeded." in output
    assert f"[{ns}/kex-2] Cleaning up after kex-2." in output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_daemons_example_retries_pings_live_and_stops_on_filters_and_deletion(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = start_operator(plane, str(EXAMPLES / "03-daemons" / "example.py"), ns, backend)
    kex = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": {"field": "a"},
           "metadata": {"name": "kex-3", "annotations": {"monitored": "yes"}}}  # fmt: skip
    try:
        kubectl(plane, "apply", "-n", ns, "-f", "-", stdin=json.dumps(kex))
        status = wait_for_status(plane, ns, "kex-3", "message")
        assert status["message"].startswith("Failed")
        time.sleep(4.5)  # three failures a second apart, then pings
        kubectl(plane, "patch", "-n", ns, "kex", "kex-3", "--type=merge",
                "-p", '{"spec": {"field": "b"}}')  # fmt: skip
        time.sleep(1.5)
        kubectl(plane, "annotate", "-n", ns, "kex", "kex-3", "monitored-")
        time.sleep(2.5)  # backoff 1.0 + timeout 0.5
        kubectl(plane, "delete", "-n", ns, "kex", "kex-3", "--timeout=60s")
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    final = json.loads(kubectl(plane, "get", "-n", ns, "kex", "-o", "json"))
    assert final["items"] == []
    assert "=> Ping from a sync daemon: field='a', retry=3" in output
    assert "=> Ping from a sync daemon: field='b', retry=3" in output, "the spec is a live view"
    assert "=> Ping from an async daemon: field='b'" in output
    assert f"[{ns}/kex-3] The async daemon is cancelled." in output
    assert "The sync daemon exits: <DaemonStoppingReason.RESOURCE_DELETED" in output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_timers_example_pings_when_quiet_and_counts_heartbeats(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = start_operator(plane, str(EXAMPLES / "04-timers" / "example.py"), ns, backend)
    try:
        apply_kex(plane, ns, "kex-4", field="a")
        wait_for_status(plane, ns, "kex-4", "heartbeat")
        time.sleep(4.5)  # quiet for 3 s, then pings every second
        body = json.loads(kubectl(plane, "get", "-n", ns, "kex", "kex-4", "-o", "json"))
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    assert body["status"]["heartbeat"] >= 2
    assert f"[{ns}/kex-4] Ping from a sync timer: field='a'" in output
