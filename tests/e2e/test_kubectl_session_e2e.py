"""kubectl against FakeCluster as against the real API server: one scripted session, the same
transcript (exit codes and what kubectl prints, masked where any two servers differ)."""

from __future__ import annotations

import difflib
import functools
import uuid
from pathlib import Path

import anyio
import pytest
from tests.e2e.kubectl_session import GROUP, run_session

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """kubectl and the API servers are compared, not anyop's backends: one is enough."""
    return "trio"


async def test_a_kubectl_session_has_the_same_outcomes_on_both_servers(
    anyop_controlplane: LocalControlPlane, tmp_path: Path
) -> None:
    kubectl = anyop_controlplane.assets.kubectl
    namespace = f"kubectl-{uuid.uuid4().hex[:8]}"
    try:
        real = await run_session(kubectl, anyop_controlplane.kubeconfig, namespace)
    finally:  # the session deletes its CRD; a failed one leaves it to no other test
        crd = f"crd/widgets.{GROUP}"
        await anyio.run_process(
            [str(kubectl), f"--kubeconfig={anyop_controlplane.kubeconfig}", "delete", crd,
             "--ignore-not-found"], check=False,
        )  # fmt: skip
    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        await tg.start(functools.partial(fake.serve, tls=True))
        kubeconfig = fake.write_kubeconfig(tmp_path / "fake-kubeconfig")
        faked = await run_session(kubectl, kubeconfig, namespace)
        tg.cancel_scope.cancel()
    diff = "\n".join(difflib.unified_diff(real, faked, "real", "fake", lineterm="", n=2))
    assert faked == real, diff
