"""The examples run as documented: `anyop run examples/NN-*/example.py` on both backends."""

from __future__ import annotations

import json
import signal
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
