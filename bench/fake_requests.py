"""Wall time per request: FakeCluster in-process against the real API server.

`python -m bench.fake_requests [--rounds 200]`: the same mix of requests (create a ConfigMap,
get it, merge-patch it, create a Deployment, strategic-merge-patch it, server-side apply a
ConfigMap, list the namespace's ConfigMaps, delete the ConfigMap) is sent `--rounds` times, one
at a time, to a FakeCluster through its in-process transport and to a local control plane
(kube-apiserver and etcd, no controllers) over HTTPS; the bench prints the median wall time per
request of each kind and the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable

import anyio
import httpx

from anyop.kube.transport import KubeTransport
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}


def _deployment(name: str) -> dict[str, object]:
    pod = {"metadata": {"labels": {"app": name}},
           "spec": {"containers": [{"name": "m", "image": "nginx"}]}}  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod}}  # fmt: skip


async def _round(api: httpx.AsyncClient, ns: str, i: int, times: dict[str, list[float]]) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    name = f"c{i}"
    steps: list[tuple[str, Callable[[], Awaitable[httpx.Response]]]] = [
        ("create", lambda: api.post(cms, json={"metadata": {"name": name}, "data": {"x": "1"}})),
        ("get", lambda: api.get(f"{cms}/{name}")),
        ("merge patch", lambda: api.patch(f"{cms}/{name}", json={"data": {"y": "2"}},
                                          headers=MERGE)),
        ("create deployment", lambda: api.post(deployments, json=_deployment(name))),
        ("strategic patch", lambda: api.patch(
            f"{deployments}/{name}", headers=STRATEGIC,
            json={"spec": {"template": {"spec": {"containers": [{"name": "m", "image": "x"}]}}}})),
        ("apply", lambda: api.patch(
            f"{cms}/{name}", params={"fieldManager": "bench"}, headers=APPLY,
            content=json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name}, "data": {"z": "3"}}))),
        ("list", lambda: api.get(cms, params={"limit": "50"})),
        ("delete", lambda: api.delete(f"{cms}/{name}")),
    ]  # fmt: skip
    for label, step in steps:
        started = time.perf_counter()
        response = await step()
        times[label].append(time.perf_counter() - started)
        if response.status_code >= 400:
            raise RuntimeError(f"{label}: {response.status_code} {response.text}")


async def _measure(api: httpx.AsyncClient, rounds: int) -> dict[str, list[float]]:
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    (await api.post("/api/v1/namespaces", json={"metadata": {"name": ns}})).raise_for_status()
    times: dict[str, list[float]] = defaultdict(list)
    for i in range(rounds):
        await _round(api, ns, i, times)
    return times


async def _fake(rounds: int) -> dict[str, list[float]]:
    async with FakeCluster(controllers=False).client() as api:
        return await _measure(api, rounds)


async def _real(plane: LocalControlPlane, rounds: int) -> dict[str, list[float]]:
    transport = KubeTransport(plane.ssl_context())
    async with httpx.AsyncClient(base_url=plane.server, transport=transport) as api:
        return await _measure(api, rounds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    fake = anyio.run(_fake, args.rounds)
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        real = anyio.run(_real, plane, args.rounds)
    print(f"{args.rounds} rounds, one request at a time; median wall time per request")
    print(f"{'request':20} {'fake us':>9} {'real us':>9} {'real/fake':>10}")
    for label in fake:
        f, r = statistics.median(fake[label]), statistics.median(real[label])
        print(f"{label:20} {f * 1e6:9.0f} {r * 1e6:9.0f} {r / f:9.1f}x")
    f_all = statistics.median([t for v in fake.values() for t in v])
    r_all = statistics.median([t for v in real.values() for t in v])
    print(f"{'all':20} {f_all * 1e6:9.0f} {r_all * 1e6:9.0f} {r_all / f_all:9.1f}x")


if __name__ == "__main__":
    main()
