"""Many idle daemons: start, memory per daemon, and stopping them all on SIGTERM.

``python -m bench.daemons [--objects 10000] [--frameworks anyop-asyncio anyop-trio kopf]``

For each framework, N objects exist before the operator starts; the operator
(``bench/operators/idle_daemon.py``, one idle async daemon per object that awaits
``stopped.wait()``) runs as a child process. Reported:

- seconds from the operator's start until all N daemons have logged that they started;
- RSS of the operator with N daemons minus its RSS with 1 daemon (a second run), divided by N-1:
  the memory per object with an idle daemon (its daemon, its task group, its cached body);
- CPU seconds of the operator until then;
- seconds from SIGTERM until the last daemon logged its exit, and until the process has exited
  (the rest is the interpreter's teardown), and how many daemons logged their exit.

Kopf runs from its own venv (``bench/kopf_env.py``) with ``--standalone``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench.bulk_create import proc_stats
from bench.kopf_env import kopf_command
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = ROOT / "bench" / "operators" / "idle_daemon.py"
FRAMEWORKS = ("anyop-asyncio", "anyop-trio", "kopf")


async def create_objects(
    plane: LocalControlPlane, namespace: str, count: int, *, prefix: str = "kex", parallel: int = 32
) -> None:
    """Create ``count`` KopfExamples named ``<prefix>-<i>``, ``parallel`` requests in flight."""
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    names = iter(range(count))
    verify = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=verify, timeout=60) as client:

        async def creator() -> None:
            for i in names:
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": f"{prefix}-{i}"}, "spec": {"field": i}}  # fmt: skip
                (await client.post(url, json=body)).raise_for_status()

        async with anyio.create_task_group() as tg:
            for _ in range(parallel):
                tg.start_soon(creator)


def command(framework: str, namespace: str) -> list[str]:
    if framework == "kopf":
        return [*kopf_command(), "run", "--standalone", "-n", namespace, str(OPERATOR)]
    backend = framework.split("-", 1)[1]
    return [sys.executable, "-m", "anyop", "run", str(OPERATOR), "-n", namespace,
            "--backend", backend, "--log-format", "plain"]  # fmt: skip


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


class Operator:
    """The operator as a child process whose log lines are counted as they come."""

    def __init__(self, plane: LocalControlPlane, framework: str, namespace: str) -> None:
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command(framework, namespace),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.counts = {"idle daemon started": 0, "idle daemon stopped": 0}
        self.last_stop = 0.0  # when the last "stopped" line arrived (monotonic)
        self.tail: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            for key in self.counts:
                self.counts[key] += key in line
            if "idle daemon stopped" in line:
                self.last_stop = time.monotonic()
            self.tail = [*self.tail[-20:], line]

    def wait_for_daemons(self, count: int, deadline: float = 900) -> float:
        """Seconds since the start until ``count`` daemons have started."""
        limit = time.monotonic() + deadline
        while self.counts["idle daemon started"] < count:
            if self.process.poll() is not None or time.monotonic() > limit:
                raise RuntimeError("the operator failed:\n" + "".join(self.tail))
            time.sleep(0.05)
        return time.monotonic() - self.started

    def terminate(self) -> tuple[float, float]:
        """Send SIGTERM; the seconds until the last daemon said it stopped, and until exit."""
        t0 = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return max(0.0, self.last_stop - t0), float("inf")
        finally:
            self._reader.join(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
        exited = time.monotonic() - t0
        return max(0.0, self.last_stop - t0), exited


def run(plane: LocalControlPlane, framework: str, count: int) -> dict[str, float]:
    results: dict[str, float] = {}
    rss: dict[int, float] = {}
    for n in (1, count):
        with scratch_namespace(plane, f"daemons-{framework}-{n}-{int(time.time())}") as namespace:
            anyio.run(create_objects, plane, namespace, n)
            operator = Operator(plane, framework, namespace)
            try:
                seconds = operator.wait_for_daemons(n)
                time.sleep(3)  # settle: the finalizers' echoes, the first GC cycles
                rss[n] = rss_mib(operator.process.pid)
                cpu, _ = proc_stats(operator.process.pid)
            finally:
                stopped, stop = operator.terminate()
        if n == count:
            results.update(
                start_s=seconds,
                cpu_s=cpu,
                rss_mib=rss[n],
                stop_s=stop,
                daemons_stopped_s=stopped,
                stopped=operator.counts["idle daemon stopped"],
            )
    results["kib_per_daemon"] = (rss[count] - rss[1]) * 1024 / max(1, count - 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS), choices=FRAMEWORKS)
    args = parser.parse_args()
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        print(f"{args.objects} objects, one idle async daemon each", flush=True)
        for framework in args.frameworks:
            r = run(plane, framework, args.objects)
            print(
                f"{framework}: all started in {r['start_s']:.1f} s ({r['cpu_s']:.1f} s CPU), "
                f"RSS {r['rss_mib']:.0f} MiB = {r['kib_per_daemon']:.1f} KiB per daemon; "
                f"SIGTERM to the last daemon's exit {r['daemons_stopped_s']:.2f} s, to the "
                f"process's exit {r['stop_s']:.2f} s; {r['stopped']:.0f} logged their exit",
                flush=True,
            )


if __name__ == "__main__":
    main()
