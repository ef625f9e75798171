"""A control plane left running in the background (``anyop controlplane up|env|down``).

Its processes are detached and its facts are kept in ``state.json`` in its workdir, so that later
commands, other shells and tests can find it, inject faults into it by pid, and stop it.

A control plane belongs to the terminal that started it (its ``getsid``): ``up`` in another
terminal reuses it and says so, and ``down`` there leaves it running (unless forced or its
terminal is gone). Every running one is also listed in the cache (``controlplanes/``), so that
``env`` can point to one that runs in another workdir.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anyop.testing.assets import cache_dir
from anyop.testing.controlplane import PID_VARIABLES, LocalControlPlane
from anyop.testing.processes import process_is_running, terminate_pid

__all__ = [
    "Owner",
    "WORKDIR_VARIABLE",
    "default_workdir",
    "owner_of",
    "read_env",
    "record_background",
    "running_elsewhere",
    "shell_exports",
    "start_background",
    "stop_background",
]

_STATE = "state.json"
WORKDIR_VARIABLE = "ANYOP_CONTROLPLANE_WORKDIR"
"""Exported by ``up``: the shell's later ``env`` and ``down`` find the same workdir."""


@dataclasses.dataclass(frozen=True)
class Owner:
    """Who started a background control plane: the terminal (its ``getsid``), and when.

    Attributes:
        sid: The POSIX ``getsid()`` of the ``up`` command (its terminal's shell).
        pid: The ``up`` command's process id.
        tty: Its terminal, if it had one.
        started: When, in UTC (ISO 8601).
    """

    sid: int
    pid: int
    tty: str | None
    started: str

    @classmethod
    def current(cls) -> Owner:
        """This process as an owner."""
        try:
            tty: str | None = os.ttyname(2)
        except OSError:
            tty = None
        started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return cls(os.getsid(0), os.getpid(), tty, started)

    def describe(self) -> str:
        """``sid 123 on /dev/pts/4 (pid 456), at 2026-11-28 07:30:00 UTC``."""
        on = f" on {self.tty}" if self.tty else ""
        return f"sid {self.sid}{on} (pid {self.pid}), at {self.started}"

    def is_here(self) -> bool:
        """Whether this process runs under the owner's ``sid`` (the same terminal)."""
        return os.getsid(0) == self.sid

    def is_gone(self) -> bool:
        """Whether the owner's terminal is gone (the leader of its ``sid`` has exited)."""
        return not process_is_running(self.sid)


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


def _state(workdir: Path) -> dict[str, Any]:
    try:
        state = json.loads((workdir / _STATE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def owner_of(workdir: Path) -> Owner | None:
    """Who started the control plane of this workdir, if it says (older ones do not)."""
    try:
        return Owner(**_state(workdir)["owner"])
    except (KeyError, TypeError):
        return None


def read_env(workdir: Path) -> dict[str, str] | None:
    """The environment of a running background control plane, or ``None`` if none runs."""
    env = _state(workdir).get("env", {})
    pids = {"ANYOP_APISERVER_PID": "kube-apiserver", "ANYOP_ETCD_PID": "etcd"}
    if all(_pid_runs(int(env.get(key, 0) or 0), binary) for key, binary in pids.items()):
        found = {str(k): str(v) for k, v in env.items()}
        found.setdefault(WORKDIR_VARIABLE, str(workdir.resolve()))
        return found
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
    The environment includes ``ANYOP_CONTROLPLANE_WORKDIR``.
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
    env[WORKDIR_VARIABLE] = str(workdir.resolve())
    record_background(workdir, env, Owner.current())
    return env


def record_background(workdir: Path, env: dict[str, str], owner: Owner) -> None:
    """Keep a started control plane's environment and owner, and list it in the cache."""
    state = {"env": env, "owner": dataclasses.asdict(owner)}
    (workdir / _STATE).write_text(json.dumps(state, indent=2))
    _listing(workdir).parent.mkdir(parents=True, exist_ok=True)
    _listing(workdir).write_text(json.dumps({"workdir": str(workdir.resolve())}))


def _listing(workdir: Path) -> Path:
    """The cache's entry for a control plane running in this workdir."""
    key = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "controlplanes" / f"{key}.json"


def running_elsewhere(workdir: Path) -> list[Path]:
    """The workdirs of the other background control planes that run now."""
    found = []
    for entry in sorted((cache_dir() / "controlplanes").glob("*.json")):
        try:
            other = Path(json.loads(entry.read_text())["workdir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if other != workdir.resolve() and read_env(other) is not None:
            found.append(other)
    return found


def stop_background(workdir: Path) -> bool:
    """Stop the background control plane and remove its files; ``False`` if none was running."""
    env = _state(workdir).get("env", {})
    stopped = False
    for key, binary in reversed(PID_VARIABLES.items()):  # the API server before etcd
        pid = int(env.get(key, 0) or 0)
        if pid and _pid_runs(pid, binary):
            terminate_pid(pid)
            stopped = True
    shutil.rmtree(workdir, ignore_errors=True)
    _listing(workdir).unlink(missing_ok=True)
    return stopped


def shell_exports(env: dict[str, str]) -> str:
    """``export`` lines for a POSIX shell, with kubectl's folder put first on PATH."""
    lines = [f"export {key}={value}" for key, value in sorted(env.items())]
    if kubectl := env.get("ANYOP_KUBECTL"):
        lines.append(f'export PATH="{Path(kubectl).parent}:$PATH"')
    return "\n".join(lines)
