"""`anyop run` in a child process whose output can be awaited line by line while it runs."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

from tests.e2e.test_cli_run import start_operator

from anyop.testing.controlplane import LocalControlPlane


class LiveOperator:
    """One `anyop run SOURCE -n NAMESPACE [MORE...]` child; its lines are collected as they come."""

    def __init__(
        self, plane: LocalControlPlane, source: str, namespace: str, backend: str, *more: str
    ) -> None:
        self.process = start_operator(plane, source, namespace, backend, *more)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    @property
    def output(self) -> str:
        """Everything it printed so far."""
        return "".join(self.lines)

    def _read(self) -> None:
        for line in self.process.stdout or []:
            self.lines.append(line)

    def count(self, text: str) -> int:
        """How many lines so far contain ``text``."""
        return sum(text in line for line in list(self.lines))

    def wait_for(self, text: str, *, times: int = 1, timeout: float = 30) -> None:
        """Wait until ``times`` lines contain ``text``; fail with the output's tail if not."""
        deadline = time.monotonic() + timeout
        while self.count(text) < times:
            if time.monotonic() > deadline or self.process.poll() is not None:
                tail = "".join(self.lines[-40:])
                raise AssertionError(f"no {text!r} (x{times}) in the output:\n{tail}")
            time.sleep(0.05)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30) -> str:
        """Signal it (unless it has exited), wait for the exit, return the whole output."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.output
