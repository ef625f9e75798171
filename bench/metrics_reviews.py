"""What secure metrics cost the API server: TokenReviews and SubjectAccessReviews per scrape.

``python -m bench.metrics_reviews [--interval 5] [--duration 180] [--fresh 20]``

One local control plane; ``anyop run`` (examples/01-minimal) with ``--metrics https://...`` and
the default cache; a ServiceAccount bound to the ``anyop-metrics-reader`` ClusterRole of
manifests/rbac.yaml scrapes every ``--interval`` seconds for ``--duration`` seconds with one
token (as Prometheus does), then ``--fresh`` scrapes each with a new token (the worst case). The
reviews are counted by the API server itself (``apiserver_request_total`` of ``tokenreviews``
and ``subjectaccessreviews``).
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
import yaml

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "metrics-bench"
ACCOUNT = "prometheus"


def reviews_done(admin: httpx.Client) -> float:
    """TokenReviews and SubjectAccessReviews created so far, by the API server's count."""
    total = 0.0
    reviews = ('resource="tokenreviews"', 'resource="subjectaccessreviews"')
    for line in admin.get("/metrics").text.splitlines():
        counted = line.startswith("apiserver_request_total{") and 'verb="POST"' in line
        if counted and any(review in line for review in reviews):
            total += float(line.rsplit(" ", 1)[1])
    return total


def reader(plane: LocalControlPlane) -> None:
    """The namespace, the ServiceAccount, and its binding to the metrics-reader role."""
    kubectl(plane, "create", "namespace", NAMESPACE)
    kubectl(plane, "create", "serviceaccount", "-n", NAMESPACE, ACCOUNT)
    docs = yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text())
    role = next(d for d in docs if d and d["metadata"]["name"] == "anyop-metrics-reader")
    kubectl(plane, "apply", "-f", "-", stdin=json.dumps(role))
    binding = ["clusterrolebinding", "bench-metrics-reader", "--clusterrole=anyop-metrics-reader"]
    kubectl(plane, "create", *binding, f"--serviceaccount={NAMESPACE}:{ACCOUNT}")


def token(admin: httpx.Client) -> str:
    path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token"
    response = admin.post(path, json={"spec": {"expirationSeconds": 3600}})
    response.raise_for_status()
    return str(response.json()["status"]["token"])


def scrape(url: str, bearer: str) -> int:
    headers = {"Authorization": f"Bearer {bearer}"}
    return httpx.get(url, headers=headers, verify=False, timeout=10).status_code


def wait_until_served(url: str, bearer: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if scrape(url, bearer) != 503:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the metrics were not served within 60 s")


def measure(plane: LocalControlPlane, args: argparse.Namespace) -> None:
    url = "https://127.0.0.1:18443/metrics"
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    example = ROOT / "examples" / "01-minimal" / "example.py"
    command = [sys.executable, "-m", "anyop", "run", str(example), "-n", NAMESPACE, "-q",
               "--metrics", url]  # fmt: skip
    operator = subprocess.Popen(command, env=env)
    admin = httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30)
    try:
        wait_until_served(url, token(admin))  # another token: the steady one starts uncached
        steady = token(admin)
        before, codes = reviews_done(admin), []
        started = time.monotonic()
        while time.monotonic() - started < args.duration:
            codes.append(scrape(url, steady))
            time.sleep(args.interval)
        steady_reviews = reviews_done(admin) - before
        before = reviews_done(admin)
        fresh_codes = [scrape(url, token(admin)) for _ in range(args.fresh)]
        fresh_reviews = reviews_done(admin) - before
    finally:
        operator.terminate()
        operator.wait(timeout=60)
        admin.close()
    print(f"one token, a scrape every {args.interval:g} s for {args.duration:g} s: "
          f"{len(codes)} scrapes (statuses {sorted(set(codes))}), {steady_reviews:g} reviews, "
          f"{steady_reviews / len(codes):.3f} per scrape")  # fmt: skip
    print(f"a new token per scrape: {len(fresh_codes)} scrapes (statuses "
          f"{sorted(set(fresh_codes))}), {fresh_reviews:g} reviews, "
          f"{fresh_reviews / max(1, len(fresh_codes)):.3f} per scrape")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=180.0)
    parser.add_argument("--fresh", type=int, default=20)
    args = parser.parse_args(argv)
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        reader(plane)
        measure(plane, args)


if __name__ == "__main__":
    main()
