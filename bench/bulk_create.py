"""Bulk create: N objects exist, then the operator starts; time until all are handled.

``python -m bench.bulk_create [--objects 1000]``

Reports wall time from the operator's start until every object has ``status.create_fn``, the API
writes per object (MODIFIED events seen on a watch of the namespace: one per write), the
operator's CPU seconds and its peak RSS (``/proc/<pid>``). The operator is
``bench/operators/create_returns_status.py`` run with ``anyop run``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = ROOT / "bench" / "operators" / "create_returns_status.py"


def create_objects(client: httpx.Client, namespace: str, count: int) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    for i in range(count):
        body = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": f"kex-{i}"},
            "spec": {"field": i},
        }
        client.post(url, json=body).raise_for_status()


def handled(client: httpx.Client, namespace: str) -> tuple[int, str]:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    listing = client.get(url).json()
    done = sum(1 for o in listing["items"] if "create_fn" in (o.get("status") or {}))
    return done, listing["metadata"]["resourceVersion"]


def proc_stats(pid: int) -> tuple[float, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = next(
        line
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM")
    )
    return cpu, int(hwm.split()[1]) // 1024


def count_writes(client: httpx.Client, namespace: str, since: str) -> int:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    params = {"watch": "true", "resourceVersion": since, "timeoutSeconds": "2"}
    writes = 0
    with client.stream("GET", url, params=params, timeout=30) as response:
        for line in response.iter_lines():
            writes += json.loads(line)["type"] == "MODIFIED"
    return writes


def run(plane: LocalControlPlane, count: int, backend: str) -> dict[str, float]:
    with (
        scratch_namespace(plane, f"bulk-{backend}-{int(time.time())}") as namespace,
        httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as client,
    ):
        create_objects(client, namespace, count)
        _, before = handled(client, namespace)
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
        cmd = [
            sys.executable,
            "-m",
            "anyop",
            "run",
            str(OPERATOR),
            "-n",
            namespace,
            "--backend",
            backend,
            "-q",
        ]
        started = time.monotonic()
        operator = subprocess.Popen(cmd, env=env)
        try:
            while handled(client, namespace)[0] < count:
                if operator.poll() is not None:  # a crash fails the run instead of hanging it
                    raise RuntimeError(f"{cmd} exited with {operator.returncode}")
                time.sleep(0.05)
            elapsed = time.monotonic() - started
            time.sleep(1)  # let echoes of our own writes settle
            cpu, rss = proc_stats(operator.pid)
        finally:
            operator.terminate()
            operator.wait(timeout=30)
        writes = count_writes(client, namespace, before)
    return {"seconds": elapsed, "cpu": cpu, "rss_mib": rss, "writes_per_object": writes / count}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1000)
    args = parser.parse_args()
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        print(f"bulk create, {args.objects} objects existing before the operator starts")
        for backend in ("asyncio", "trio"):
            r = run(plane, args.objects, backend)
            print(
                f"anyop ({backend}): {r['seconds']:.2f} s until all handled, "
                f"{r['cpu']:.2f} s CPU, peak RSS {r['rss_mib']} MiB, "
                f"{r['writes_per_object']:.2f} writes per object",
                flush=True,
            )


if __name__ == "__main__":
    main()
