"""examples/00-bare: the framework-less loop greets an object, as its README says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.kex import apply_kex, wait_for_status

from anyop.testing.controlplane import LocalControlPlane

BARE = Path(__file__).parents[2] / "examples" / "00-bare" / "bare.py"


def test_the_bare_loop_greets_an_object(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    loop = subprocess.Popen(
        [sys.executable, str(BARE), ns], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        apply_kex(plane, ns, "kex-0")
        status = wait_for_status(plane, ns, "kex-0", "greeting")
    finally:
        loop.terminate()
        output, _ = loop.communicate(timeout=30)
    assert status["greeting"] == "hello, kex-0"
    assert f"watching kopfexamples in {ns} from resourceVersion" in output
    assert "patched kex-0: status.greeting='hello, kex-0' -> HTTP 200" in output
