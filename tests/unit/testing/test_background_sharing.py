"""`anyop controlplane up|env|down` when several terminals and workdirs meet one control plane.

The control plane's processes are stand-ins here: long sleeps whose command lines name
kube-apiserver and etcd, which is all that the commands look at (``/proc/<pid>/cmdline``). A
stand-in started in a session of its own plays another terminal that is still open.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from anyop.testing.background import Owner, read_env, record_background
from anyop.testing.processes import process_is_running


@dataclass
class Plane:
    """A stand-in control plane in a workdir: its processes and the environment it recorded."""

    workdir: Path
    processes: list[subprocess.Popen[bytes]]
    env: dict[str, str]

    def runs(self) -> bool:
        return all(process_is_running(p.pid) for p in self.processes)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def started(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Every stand-in process a test starts; all stopped and reaped after it."""
    monkeypatch.setenv("ANYOP_CACHE_DIR", str(cache))  # where record_background lists planes
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait(timeout=10)


def stand_in(
    started: list[subprocess.Popen[bytes]], workdir: Path, *, other_terminal: bool
) -> Plane:
    """Start stand-ins of etcd and kube-apiserver, and record them as ``up`` does."""
    sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
    processes = []
    for binary in ("etcd", "kube-apiserver"):
        process = subprocess.Popen([*sleep, binary], start_new_session=other_terminal)
        started.append(process)
        processes.append(process)
    workdir.mkdir(parents=True)
    env = {
        "ANYOP_ETCD_PID": str(processes[0].pid),
        "ANYOP_APISERVER_PID": str(processes[1].pid),
        "KUBECONFIG": str(workdir / "kubeconfig"),
    }
    here = Owner.current()
    sid = processes[0].pid if other_terminal else here.sid  # its own sid's leader
    owner = Owner(sid, processes[0].pid, "/dev/pts/9" if other_terminal else None, "now")
    record_background(workdir, env, owner)
    return Plane(workdir, processes, env)


def anyop(cache: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """The ``anyop`` command in this terminal (the test's session)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANYOP_")}
    env |= {"ANYOP_CACHE_DIR": str(cache), **extra}
    command = [sys.executable, "-m", "anyop", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_down_leaves_running_a_plane_that_another_terminal_started_and_says_who(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=True)
    result = anyop(cache, "controlplane", "down", "--workdir", str(plane.workdir))
    assert result.returncode == 1
    who = f"sid {plane.processes[0].pid} on /dev/pts/9"
    assert f"was started by another terminal ({who}" in result.stderr
    assert "it is left running" in result.stderr
    assert plane.runs()
    assert read_env(plane.workdir) is not None


def test_down_force_stops_a_plane_that_another_terminal_started(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=True)
    result = anyop(cache, "controlplane", "down", "--workdir", str(plane.workdir), "--force")
    assert (result.returncode, result.stderr) == (0, "Stopped the control plane.\n")
    assert not any(process_is_running(p.pid) for p in plane.processes)
    assert not plane.workdir.exists()


def test_down_stops_the_plane_that_its_own_terminal_started(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=False)
    result = anyop(cache, "controlplane", "down", "--workdir", str(plane.workdir))
    assert (result.returncode, result.stderr) == (0, "Stopped the control plane.\n")
    assert not any(process_is_running(p.pid) for p in plane.processes)


def test_down_stops_a_plane_whose_terminal_is_gone(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    gone.wait(timeout=30)  # a terminal that was closed: its session leader has exited
    state = plane.workdir / "state.json"
    state.write_text(state.read_text().replace(f'"sid": {plane.processes[0].pid}',
                                               f'"sid": {gone.pid}'))  # fmt: skip
    result = anyop(cache, "controlplane", "down", "--workdir", str(plane.workdir))
    assert (result.returncode, result.stderr) == (0, "Stopped the control plane.\n")


def test_up_in_another_terminal_reuses_the_plane_and_says_down_will_leave_it(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=True)
    result = anyop(cache, "controlplane", "up", "--workdir", str(plane.workdir))
    assert result.returncode == 0
    assert f"export KUBECONFIG={plane.env['KUBECONFIG']}" in result.stdout.splitlines()
    assert f"export ANYOP_CONTROLPLANE_WORKDIR={plane.workdir}" in result.stdout.splitlines()
    assert "reusing the control plane" in result.stderr
    assert "`anyop controlplane down` here leaves it running" in result.stderr


def test_env_points_to_a_plane_in_another_workdir(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "elsewhere", other_terminal=False)
    result = anyop(cache, "controlplane", "env", "--workdir", str(tmp_path / "here"))
    assert result.returncode == 1
    assert result.stderr == (
        f"anyop: no control plane is running in {tmp_path / 'here'}, but one runs elsewhere: "
        f"`anyop controlplane env --workdir {plane.workdir}`.\n"
    )


def test_env_says_none_runs_when_none_runs_anywhere(tmp_path: Path, cache: Path) -> None:
    result = anyop(cache, "controlplane", "env", "--workdir", str(tmp_path / "here"))
    assert result.returncode == 1
    assert result.stderr == (
        f"anyop: no control plane is running in {tmp_path / 'here'}; "
        "start one with `anyop controlplane up`.\n"
    )


def test_the_shell_that_ran_up_finds_its_workdir_again(
    started: list[subprocess.Popen[bytes]], tmp_path: Path, cache: Path
) -> None:
    plane = stand_in(started, tmp_path / "plane", other_terminal=False)
    result = anyop(cache, "controlplane", "env", ANYOP_CONTROLPLANE_WORKDIR=str(plane.workdir))
    assert result.returncode == 0
    assert f"export ANYOP_APISERVER_PID={plane.env['ANYOP_APISERVER_PID']}" in result.stdout
