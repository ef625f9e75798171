"""Convergence latency: ``spec.replicas`` changed -> that many ConfigMaps exist.

``python -m bench.reconcile_latency [--changes 100] [--frameworks anyop-asyncio kopf]``

One local control plane; for each framework, in turn, a fresh namespace with one KopfExample
and its operator (``bench/operators/reconcile_anyop.py``: an ``@anyop.reconcile``;
``bench/operators/reconcile_kopf.py``: the pattern Kopf's documentation recommends, an index,
a timer writing the actual state into the status every 10 s, and an event handler, under Kopf
1.45). Each change sets ``spec.replicas`` to another value in 1..5 and waits until exactly that
many ConfigMaps of the object exist (none being deleted), polling every 10 ms, up to 60 s;
then the next change. Reported: p50/p99/max of the latencies, the changes that did not converge
in time, the operator's CPU seconds over the changes, and the ConfigMaps created in all.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench.bulk_create import proc_stats
from bench.kopf_env import KOPF_VERSION, kopf_command
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("anyop-asyncio", "anyop-trio", "kopf")
LIMIT = 60.0
POLL = 0.01


def command(framework: str, namespace: str) -> list[str]:
    """The operator's command line."""
    if framework == "kopf":
        source = ROOT / "bench" / "operators" / "reconcile_kopf.py"
        return [*kopf_command(), "run", "--standalone", "-q", "-n", namespace, str(source)]
    source = ROOT / "bench" / "operators" / "reconcile_anyop.py"
    backend = framework.split("-", 1)[1]
    return [
        sys.executable,
        "-m",
        "anyop",
        "run",
        str(source),
        "-n",
        namespace,
        "--backend",
        backend,
        "--standalone",
        "-q",
    ]


def alive_children(client: httpx.Client, namespace: str) -> int:
    found = client.get(
        f"/api/v1/namespaces/{namespace}/configmaps", params={"labelSelector": "bench-parent=kex"}
    )
    items = found.json()["items"]
    return sum(1 for item in items if not item["metadata"].get("deletionTimestamp"))


def wait_for(client: httpx.Client, namespace: str, replicas: int) -> float | None:
    """Seconds until exactly ``replicas`` ConfigMaps exist; ``None`` if not within the limit."""
    started = time.monotonic()
    while time.monotonic() - started < LIMIT:
        if alive_children(client, namespace) == replicas:
            return time.monotonic() - started
        time.sleep(POLL)
    return None


def created(plane: LocalControlPlane) -> float:
    """ConfigMaps created so far (the API server's own count of POSTs)."""
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as client:
        text = client.get("/metrics").text
    total = 0.0
    for line in text.splitlines():
        wanted = ('resource="configmaps"', 'verb="POST"', 'code="201"')
        if line.startswith("apiserver_request_total{") and all(w in line for w in wanted):
            total += float(line.rsplit(" ", 1)[1])
    return total


def run(plane: LocalControlPlane, framework: str, changes: int) -> dict[str, float]:
    """One framework's changes; the operator's output is shown if it fails."""
    with tempfile.TemporaryFile("w+") as log:
        return measure(plane, framework, changes, log=log)


def measure(
    plane: LocalControlPlane, framework: str, changes: int, *, log: IO[str]
) -> dict[str, float]:
    namespace = f"conv-{framework}-{time.time_ns() % 10**8}"
    with scratch_namespace(plane, namespace):
        kex = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "kex"},
            "spec": {"replicas": 1},
        }
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "PYTHONPATH": str(ROOT)}
        argv = command(framework, namespace)
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        rng = random.Random(28)
        latencies: list[float] = []
        missed = 0
        try:
            verify = plane.ssl_context()
            with httpx.Client(base_url=plane.server, verify=verify, timeout=30) as client:
                url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
                client.post(url, json=kex).raise_for_status()
                if wait_for(client, namespace, 1) is None:
                    log.seek(0)
                    output = log.read()
                    raise RuntimeError(f"{framework}: no first ConfigMap; its output:\n{output}")
                posts, cpu = created(plane), proc_stats(process.pid)[0]
                replicas = 1
                for _ in range(changes):
                    replicas = rng.choice([n for n in range(1, 6) if n != replicas])
                    patch = {"spec": {"replicas": replicas}}
                    headers = {"Content-Type": "application/merge-patch+json"}
                    client.patch(f"{url}/kex", json=patch, headers=headers).raise_for_status()
                    seconds = wait_for(client, namespace, replicas)
                    if seconds is None:
                        missed += 1
                        latencies.append(LIMIT)
                    else:
                        latencies.append(seconds)
                cpu = proc_stats(process.pid)[0] - cpu
                posts = created(plane) - posts
        finally:
            process.terminate()
            process.wait(timeout=60)
    latencies.sort()

    def pick(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {
        "p50_ms": pick(0.5) * 1000,
        "p99_ms": pick(0.99) * 1000,
        "max_ms": latencies[-1] * 1000,
        "missed": missed,
        "cpu_s": cpu,
        "configmaps_created": posts,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument(
        "--frameworks", nargs="+", default=["anyop-asyncio", "kopf"], choices=FRAMEWORKS
    )
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        for framework in args.frameworks:
            results[framework] = run(plane, framework, args.changes)
            print(framework, results[framework], file=sys.stderr, flush=True)
    names = ["p50_ms", "p99_ms", "max_ms", "missed", "cpu_s", "configmaps_created"]
    print(f"\nconvergence, {args.changes} changes (Kopf {KOPF_VERSION})\n")
    print("| framework | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for framework, result in results.items():
        print(f"| {framework} | " + " | ".join(f"{result[n]:.3g}" for n in names) + " |")


if __name__ == "__main__":
    main()
