"""Child processes of the local control plane: start, stop, pause, and never orphan them.

A process started for a test is tied to the process that started it: on Linux the kernel kills it
with SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so even a SIGKILLed pytest leaves no
kube-apiserver or etcd behind. A detached process (``anyop controlplane up``) outlives its starter
and is stopped by pid.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["ChildProcess", "log_tail", "process_is_running", "terminate_pid"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file, or a note that it is empty or missing."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    tail = text.strip().splitlines()[-lines:]
    return "\n".join(tail) if tail else f"(empty log at {path})"


def process_is_running(pid: int) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def terminate_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM a process (waking it with SIGCONT if paused), then SIGKILL it after ``timeout``."""
    for sig in (signal.SIGCONT, signal.SIGTERM):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while process_is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        if process_is_running(pid):
            os.kill(pid, signal.SIGKILL)


class ChildProcess:
    """One binary of the control plane, with its log file.

    Args:
        name: A short name for messages (``etcd``, ``kube-apiserver``).
        args: The command line, binary first.
        log_path: Where its stdout and stderr go (appended across restarts).
        detached: Let it outlive this Python process (in a session of its own).
    """

    def __init__(self, name: str, args: Sequence[str], log_path: Path, *, detached: bool) -> None:
        self.name = name
        self.args = list(args)
        self.log_path = log_path
        self.detached = detached
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The pid of the running process, if it was started."""
        return None if self._popen is None else self._popen.pid

    def start(self) -> None:
        """Start the process; its output is appended to the log file."""
        # WARNING: PR_SET_PDEATHSIG fires when the *thread* that forked exits, so processes tied
        # to their parent must be started from a thread that lives as long as they should.
        tie = not self.detached and sys.platform == "linux"
        if tie and threading.current_thread() is not threading.main_thread():
            tie = False
        with open(self.log_path, "ab") as log:
            self._popen = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=self.detached,
                preexec_fn=_die_with_parent if tie else None,
            )

    def exited(self) -> int | None:
        """The exit code if the process has exited, else ``None``."""
        return None if self._popen is None else self._popen.poll()

    def send(self, sig: signal.Signals) -> None:
        """Send a signal (e.g. SIGSTOP/SIGCONT for fault injection)."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(sig)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop it gracefully; kill it if it does not exit within ``timeout`` seconds."""
        if self._popen is None:
            return
        if self._popen.poll() is None:
            terminate_pid(self._popen.pid, timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=timeout)
        self._popen = None

    def failure(self, what: str, tail: Callable[[Path], str] = log_tail) -> str:
        """A message about this process failing to do ``what``, with its log's last lines."""
        code = self.exited()
        state = f"exited with code {code}" if code is not None else "is running"
        return (
            f"{self.name} {what} ({state}). Last lines of {self.log_path}:\n{tail(self.log_path)}"
        )
