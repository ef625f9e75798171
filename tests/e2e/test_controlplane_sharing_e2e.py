"""`anyop controlplane up` in one terminal, `down` in another: the real control plane is left
to the terminal that started it, until that terminal is closed.

A terminal is a shell in a session of its own that ran ``eval "$(anyop controlplane up)"`` and
stays open; the test itself is the other terminal.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyop.testing.background import read_env

ANYOP = Path(sys.executable).parent / "anyop"


def anyop(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANYOP_CONTROLPLANE_WORKDIR"}
    command = [str(ANYOP), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another terminal that started a bare control plane in a workdir, and stays open."""
    workdir = tmp_path / "plane"
    up = f"{shlex.quote(str(ANYOP))} controlplane up --no-controllers --no-nodes"
    script = f'eval "$({up} --workdir {shlex.quote(str(workdir))})" && echo up && exec sleep 600'
    with subprocess.Popen(
        ["bash", "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as shell:
        assert shell.stdout is not None
        try:
            assert shell.stdout.readline() == "up\n", "the control plane did not start"
            yield shell, workdir
        finally:
            shell.kill()
            shell.wait(timeout=30)
            anyop("controlplane", "down", "--workdir", str(workdir), "--force")


def test_down_in_another_terminal_leaves_it_running_until_that_terminal_closes(
    terminal: tuple[subprocess.Popen[str], Path],
) -> None:
    shell, workdir = terminal
    assert read_env(workdir) is not None

    refused = anyop("controlplane", "down", "--workdir", str(workdir))
    assert refused.returncode == 1
    assert f"was started by another terminal (sid {shell.pid}" in refused.stderr
    assert read_env(workdir) is not None  # still running

    reused = anyop("controlplane", "up", "--workdir", str(workdir))
    assert reused.returncode == 0
    assert "reusing the control plane" in reused.stderr

    os.killpg(shell.pid, signal.SIGKILL)  # the terminal is closed (its plane runs on, detached)
    shell.wait(timeout=30)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{shell.pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    stopped = anyop("controlplane", "down", "--workdir", str(workdir))
    assert (stopped.returncode, stopped.stderr) == (0, "Stopped the control plane.\n")
    assert read_env(workdir) is None
