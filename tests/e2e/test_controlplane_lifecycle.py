"""The control plane's own life: clean starts and stops, clear failures, no orphans."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from anyop.errors import ControlPlaneError
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.processes import process_is_running

pytestmark = pytest.mark.slow


def wait_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(process_is_running(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if process_is_running(p)]


def test_a_port_in_use_is_a_clear_error_and_leaves_no_process(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        plane = LocalControlPlane(workdir=tmp_path, port=busy.getsockname()[1], startup_timeout=30)
        with pytest.raises(ControlPlaneError, match="kube-apiserver") as info:
            plane.start()
    assert "address already in use" in str(info.value)
    assert plane.apiserver is None or plane.apiserver.pid is None


def test_not_ready_in_time_shows_both_logs_and_stops_both(tmp_path: Path) -> None:
    plane = LocalControlPlane(workdir=tmp_path, startup_timeout=0.01)
    with pytest.raises(ControlPlaneError, match="did not become ready") as info:
        plane.start()
    assert "etcd.log" in str(info.value)
    assert "kube-apiserver.log" in str(info.value)
    assert plane.apiserver is None or plane.apiserver.pid is None
    assert plane.etcd is None or plane.etcd.pid is None


def test_a_killed_test_process_leaves_no_orphan_apiserver_or_etcd(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from anyop.testing.controlplane import LocalControlPlane\n"
        f"plane = LocalControlPlane(workdir={str(tmp_path)!r})\n"
        "plane.start()\n"
        "print(plane.apiserver.pid, plane.etcd.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) == 2
    assert all(process_is_running(p) for p in pids)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert wait_gone(pids) == []


def test_the_apiserver_restarts_with_the_same_port_and_data(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    old_pid = anyop_controlplane.apiserver.pid if anyop_controlplane.apiserver else None
    anyop_controlplane.restart_apiserver()
    assert anyop_controlplane.apiserver is not None
    assert anyop_controlplane.apiserver.pid != old_pid
    with httpx.Client(
        base_url=anyop_controlplane.server, verify=anyop_controlplane.ssl_context()
    ) as client:
        assert client.get(f"/api/v1/namespaces/{anyop_namespace}").status_code == 200


def test_the_cli_starts_reports_and_stops_a_background_control_plane(tmp_path: Path) -> None:
    anyop = [sys.executable, "-m", "anyop", "controlplane"]
    workdir = ["--workdir", str(tmp_path / "cp")]
    up = subprocess.run([*anyop, "up", *workdir], capture_output=True, text=True, check=False)
    assert up.returncode == 0, f"exit code {up.returncode}: {up.stderr[-3000:]}"
    env = dict(
        line.removeprefix("export ").split("=", 1)
        for line in up.stdout.splitlines()
        if not line.startswith("export PATH")
    )
    try:
        shown = subprocess.run(
            [*anyop, "env", *workdir], capture_output=True, text=True, check=True
        )
        assert f"export ANYOP_APISERVER_PID={env['ANYOP_APISERVER_PID']}" in shown.stdout
        kubectl = subprocess.run(
            [env["ANYOP_KUBECTL"], "get", "ns", "-o", "name"],
            env={**os.environ, "KUBECONFIG": env["KUBECONFIG"]},
            capture_output=True,
            text=True,
            check=True,
        )
        assert "namespace/default" in kubectl.stdout
    finally:
        subprocess.run([*anyop, "down", *workdir], capture_output=True, check=True)
    pids = [int(env["ANYOP_APISERVER_PID"]), int(env["ANYOP_ETCD_PID"])]
    assert wait_gone(pids) == []
    gone = subprocess.run([*anyop, "env", *workdir], capture_output=True, text=True)
    assert gone.returncode == 1
    assert "no control plane is running" in gone.stderr
