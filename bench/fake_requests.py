"""Wall time per request: FakeCluster in-process against the real API server.

`python -m bench.fake_requests [--rounds 200]`: the same mix of requests (create a ConfigMap,
get it, merge-patch it, create a Deployment, strategic-merge-patch it, server-side apply a
ConfigMap, list the namespace's ConfigMaps, delete the ConfigMap) is sent `--rounds` times, one
at a time, to a FakeCluster through its in-process transport and to a local control plane
(kube-apiserver and etcd, no controllers) over HTTPS. It prints two comparisons per kind of
request:

- the median wall time the client waits (httpx's own work, the same on both sides, included);
- the mean time the server spends on it: on the fake, from the transport's httpx request to the
  httpx response it returns (its body encoded, and read by the client afterwards as from a
  socket); on kube-apiserver, its own ``apiserver_request_duration_seconds`` (read from its
  ``/metrics`` before and after the rounds; etcd's part included, TLS and the client not).
"""

from __future__ import annotations

import argparse
import json
import re
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


# Each request of the mix, and the key of kube-apiserver's metrics that counts it (verb, group,
# resource): server-side apply counts as APPLY, a list as LIST.
METRIC_KEYS = {
    "create": ("POST", "", "configmaps"),
    "get": ("GET", "", "configmaps"),
    "merge patch": ("PATCH", "", "configmaps"),
    "create deployment": ("POST", "apps", "deployments"),
    "strategic patch": ("PATCH", "apps", "deployments"),
    "apply": ("APPLY", "", "configmaps"),
    "list": ("LIST", "", "configmaps"),
    "delete": ("DELETE", "", "configmaps"),
}
Times = dict[str, list[float]]


class _Timed(httpx.AsyncBaseTransport):
    """A transport that keeps the time its inner one takes per request (the fake's own): until
    it returns its response, whose body httpx then reads as it reads one from a socket."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self.last = 0.0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = await self._inner.handle_async_request(request)
        self.last = time.perf_counter() - started
        return response


async def _round(api: httpx.AsyncClient, ns: str, i: int, times: Times, served: Times,
                 timed: _Timed | None) -> None:  # fmt: skip
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
        if timed is not None:
            served[label].append(timed.last)
        if response.status_code >= 400:
            raise RuntimeError(f"{label}: {response.status_code} {response.text}")


async def _measure(
    api: httpx.AsyncClient, rounds: int, timed: _Timed | None
) -> tuple[Times, Times]:
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    (await api.post("/api/v1/namespaces", json={"metadata": {"name": ns}})).raise_for_status()
    times: Times = defaultdict(list)
    served: Times = defaultdict(list)
    for i in range(rounds):
        await _round(api, ns, i, times, served, timed)
    return times, served


async def _fake(rounds: int) -> tuple[Times, dict[str, float]]:
    fake = FakeCluster(controllers=False)
    timed = _Timed(fake.transport())
    async with httpx.AsyncClient(base_url=fake.url, transport=timed) as api:
        times, served = await _measure(api, rounds, timed)
    return times, {label: statistics.fmean(values) for label, values in served.items()}


def _durations(text: str) -> dict[tuple[str, str, str], tuple[float, float]]:
    """kube-apiserver's request durations from its metrics: (verb, group, resource) to (sum of
    seconds, count), over every subresource-less request of the key."""
    found: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for line in text.splitlines():
        for suffix, index in (("_sum{", 0), ("_count{", 1)):
            head = "apiserver_request_duration_seconds" + suffix
            if not line.startswith(head):
                continue
            labels_text, _, value = line[len(head) :].rpartition("} ")
            labels = dict(re.findall(r'(\w+)="([^"]*)"', labels_text))
            if labels.get("subresource") or labels.get("dry_run"):
                continue
            key = (labels["verb"], labels.get("group", ""), labels["resource"])
            found[key][index] += float(value)
    return {key: (total, count) for key, (total, count) in found.items()}


async def _real(plane: LocalControlPlane, rounds: int) -> tuple[Times, dict[str, float]]:
    transport = KubeTransport(plane.ssl_context())
    async with httpx.AsyncClient(base_url=plane.server, transport=transport) as api:
        before = _durations((await api.get("/metrics")).raise_for_status().text)
        times, _ = await _measure(api, rounds, None)
        after = _durations((await api.get("/metrics")).raise_for_status().text)
    served = {}
    for label, key in METRIC_KEYS.items():
        total, count = after.get(key, (0.0, 0.0))
        total_before, count_before = before.get(key, (0.0, 0.0))
        served[label] = (total - total_before) / max(count - count_before, 1)
    return times, served


def _table(title: str, fake: dict[str, float], real: dict[str, float]) -> None:
    print(title)
    print(f"{'request':20} {'fake us':>9} {'real us':>9} {'real/fake':>10}")
    for label in METRIC_KEYS:
        f, r = fake[label], real[label]
        print(f"{label:20} {f * 1e6:9.0f} {r * 1e6:9.0f} {r / f:9.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    fake, fake_served = anyio.run(_fake, args.rounds)
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        real, real_served = anyio.run(_real, plane, args.rounds)
    print(f"{args.rounds} rounds, one request at a time")
    median = {label: statistics.median(values) for label, values in fake.items()}
    _table("median wall time per request (the client's)", median,
           {label: statistics.median(values) for label, values in real.items()})  # fmt: skip
    f_all = statistics.median([t for v in fake.values() for t in v])
    r_all = statistics.median([t for v in real.values() for t in v])
    print(f"{'all':20} {f_all * 1e6:9.0f} {r_all * 1e6:9.0f} {r_all / f_all:9.1f}x")
    _table("mean time the server spends per request", fake_served, real_served)
    f_mean, r_mean = statistics.fmean(fake_served.values()), statistics.fmean(real_served.values())
    print(f"{'all (mean)':20} {f_mean * 1e6:9.0f} {r_mean * 1e6:9.0f} {r_mean / f_mean:9.1f}x")


if __name__ == "__main__":
    main()
