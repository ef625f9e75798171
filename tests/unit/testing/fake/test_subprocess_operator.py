"""`anyop run` in a child process against a FakeCluster served on loopback, via the kubeconfig
the cluster writes: the same operator file as against a real API server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from anyop.testing import FakeCluster

ROOT = Path(__file__).parents[4]
EXAMPLE = ROOT / "examples" / "01-minimal" / "example.py"
KEX = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"


@pytest.mark.anyio
async def test_anyop_run_in_a_subprocess_handles_an_object_of_the_fake_cluster(
    tmp_path: Path,
) -> None:
    fake = FakeCluster()
    fake.apply(ROOT / "examples" / "crd.yaml")
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        command = [sys.executable, "-m", "anyop", "run", str(EXAMPLE), "-n", "ns", "--standalone"]
        process = await anyio.open_process(command, env=env, stderr=subprocess.STDOUT)
        try:
            async with fake.client() as api:
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": "kex"}, "spec": {}}  # fmt: skip
                (await api.post(KEX, json=body)).raise_for_status()
                with anyio.fail_after(60):
                    while "create_fn" not in (await api.get(f"{KEX}/kex")).json().get("status", {}):
                        await anyio.sleep(0.1)
        finally:
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                code = await process.wait()
            tg.cancel_scope.cancel()
    assert code == 0
