"""A control plane left running in the background (``anyop controlplane up|env|down``).

Its processes are detached and its facts are kept in ``state.json`` in its workdir, so that later
commands, other shells and tests can find it, inject faults into it by pid, and stop it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from anyop.testing.assets import cache_dir
from anyop.testing.controlplane import PID_VARIABLES, LocalControlPlane
from anyop.testing.processes import process_is_running, terminate_pid

__all__ = ["default_workdir", "read_env", "shell_exports", "start_background", "stop_background"]

_STATE = "state.json"


def default_workdir() -> Path:
    """Where the background control plane keeps its files."""
    return cache_dir() / "controlplane"


def _pid_runs(pid: int, binary: str) -> bool:
    if not process_is_running(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return binary.encode() in cmdline  # not a recycled pid of some other program


def read_env(workdir: Path) -> dict[str, str] | None:
    """The environment of a running background control plane, or ``None`` if none runs."""
    try:
        state = json.loads((workdir / _STATE).read_text())
    except (OSError, ValueError):
        return None
    env = state.get("env", {})
    pids = {"ANYOP_APISERVER_PID": "kube-apiserver", "ANYOP_ETCD_PID": "etcd"}
    if all(_pid_runs(int(env.get(key, 0) or 0), binary) for key, binary in pids.items()):
        return {str(k): str(v) for k, v in env.items()}
    return None


def start_background(
    workdir: Path,
    *,
    apiserver_flags: Sequence[str] = (),
    etcd_flags: Sequence[str] = (),
    controllers: bool = True,
    nodes: bool = True,
) -> dict[str, str]:
    """Start a detached control plane (or reuse the running one) and return its environment.

    ``controllers`` and ``nodes`` are :class:`LocalControlPlane`'s options of the same names.
    """
    if (env := read_env(workdir)) is not None:
        return env
    stop_background(workdir)  # leftovers of a crashed one
    plane = LocalControlPlane(
        workdir=workdir,
        apiserver_flags=apiserver_flags,
        etcd_flags=etcd_flags,
        detached=True,
        controllers=controllers,
        nodes=nodes,
    )
    plane.start()
    env = plane.env()
    env["ANYOP_KUBECTL"] = str(plane.assets.kubectl)
    env["ANYOP_SERVER"] = plane.server
    (workdir / _STATE).write_text(json.dumps({"env": env}, indent=2))
    return env


def stop_background(workdir: Path) -> bool:
    """Stop the background control plane and remove its files; ``False`` if none was running."""
    try:
        env = json.loads((workdir / _STATE).read_text()).get("env", {})
    except (OSError, ValueError):
        env = {}
    stopped = False
    for key, binary in reversed(PID_VARIABLES.items()):  # the API server before etcd
        pid = int(env.get(key, 0) or 0)
        if pid and _pid_runs(pid, binary):
            terminate_pid(pid)
            stopped = True
    shutil.rmtree(workdir, ignore_errors=True)
    return stopped


def shell_exports(env: dict[str, str]) -> str:
    """``export`` lines for a POSIX shell, with kubectl's folder put first on PATH."""
    lines = [f"export {key}={value}" for key, value in sorted(env.items())]
    if kubectl := env.get("ANYOP_KUBECTL"):
        lines.append(f'export PATH="{Path(kubectl).parent}:$PATH"')
    return "\n".join(lines)
