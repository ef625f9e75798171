"""examples/17-peering: the low-priority copy pauses for the --dev one and resumes after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "17-peering" / "example.py")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_peering_example_pauses_the_lower_priority_and_resumes_it(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering_crds: None,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    kubectl(plane, "apply", "-n", ns, "-f", "-", stdin=json.dumps(body))
    low = LiveOperator(plane, EXAMPLE, ns, backend, "--priority", "10")
    high: LiveOperator | None = None
    try:
        apply_kex(plane, ns, "kex-17")
        assert wait_for_status(plane, ns, "kex-17")["create_fn"]["pid"] == low.pid
        low.wait_for(f"[{ns}/kex-17] Keeping kex-17 in process {low.pid}.")

        high = LiveOperator(plane, EXAMPLE, ns, backend, "--dev")
        low.wait_for("Pausing operations in favour of [")
        low.wait_for(
            f"[{ns}/kex-17] Stopped keeping kex-17: <DaemonStoppingReason.OPERATOR_PAUSING"
        )
        high.wait_for(f"[{ns}/kex-17] Keeping kex-17 in process {high.pid}.")

        high.stop()
        low.wait_for("Resuming operations after the pause.")
        low.wait_for(f"[{ns}/kex-17] Keeping kex-17 in process {low.pid}.", times=2)
    finally:
        output = low.stop()
        if high is not None:
            high.stop()
    assert low.process.returncode == 0, output
