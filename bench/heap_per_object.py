"""What an operator keeps per object it has seen come and go: Python's heap and the RSS.

``python -m bench.heap_per_object [--warm 100] [--objects 500] [--backend asyncio|trio]
[--real] [--frames 8]``; ``--frames 0`` measures the RSS alone (tracemalloc's own tables grow
the RSS of a traced process).

One operator (create, update and delete handlers) in this process; the bench creates an
object, waits for its create handler, changes it, waits for its update handler, deletes it and
waits until it is gone, one object after another. After ``--warm`` such objects, tracemalloc
takes a snapshot and the RSS is read; after ``--objects`` more, again. Printed: the heap's growth
per object and the biggest growths by where they were allocated, and the RSS's. A leak per
object shows as a steady heap growth; an RSS growth with a flat heap is the allocator's or C
code's (OpenSSL's buffers, for instance).

On FakeCluster (in-process, virtual time: the default) the operator's own heap is measured
without TLS; with ``--real``, on a local control plane (etcd and kube-apiserver, no
controllers), with anyop's real client over TLS.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import resource
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import httpx

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, RunningOperator
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.handle import open_operator
from anyop.testing.pytest_plugin import kubectl, wait_for_crd

ROOT = Path(__file__).resolve().parents[1]
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
NAMESPACE = "heap"


def registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", id="create_fn", registry=registry)
    async def create_fn(**_: Any) -> str:
        return "ok"

    @anyop.on.update("kopfexamples", id="update_fn", registry=registry)
    async def update_fn(**_: Any) -> str:
        return "ok"

    @anyop.on.delete("kopfexamples", id="delete_fn", registry=registry)
    async def delete_fn(**_: Any) -> None:
        pass

    return registry


async def come_and_go(operator: RunningOperator, index: int) -> None:
    """One object: created, changed, deleted, each handled before the next step."""
    name = f"kex-{index}"
    await operator.create(KEX, {"metadata": {"name": name}, "spec": {"field": index}})
    await operator.wait_for(KEX, name, lambda o: o.get("status", {}).get("create_fn"), timeout=60)
    await operator.patch(KEX, name, {"spec": {"field": f"changed-{index}"}})
    await operator.wait_for(KEX, name, lambda o: o.get("status", {}).get("update_fn"), timeout=60)
    await operator.delete(KEX, name)
    await operator.wait_for_deletion(KEX, name, timeout=60)


def snapshot() -> tracemalloc.Snapshot | None:
    return tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None


def rss_kib() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() // 1024


async def measure(
    api: httpx.AsyncClient, vault: Any, args: argparse.Namespace, forget: Any
) -> tuple[Any, Any, int, int]:
    """The snapshots and RSS after the warm-up and after the measured objects."""
    async with open_operator(registry(), namespace=NAMESPACE, api=api, vault=vault) as operator:
        for index in range(args.warm):
            await come_and_go(operator, index)
        forget()
        gc.collect()
        before, rss_before = snapshot(), rss_kib()
        for index in range(args.warm, args.warm + args.objects):
            await come_and_go(operator, index)
            if (index - args.warm + 1) % max(1, args.objects // 5) == 0:
                print(f"  after {index + 1} objects: RSS {rss_kib()} KiB", flush=True)
        forget()
        gc.collect()
        return before, snapshot(), rss_before, rss_kib()


async def on_fake(args: argparse.Namespace) -> tuple[Any, Any, int, int]:
    fake = FakeCluster(seed=1)
    fake.apply(ROOT / "examples" / "crd.yaml")
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})

    def forget() -> None:  # the fake's own records: not the operator's
        fake.trace.lines.clear()
        fake.compact()

    with fake.routed():
        async with fake.client(faults=False, timeout=30) as api:
            return await measure(api, await fake.vault(), args, forget)


async def on_real(plane: LocalControlPlane, args: argparse.Namespace) -> tuple[Any, Any, int, int]:
    os.environ["KUBECONFIG"] = str(plane.kubeconfig)  # the operator logs in as `anyop run` does
    verify = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=verify, timeout=60) as api:
        return await measure(api, None, args, lambda: None)


def report(args: argparse.Namespace, before: Any, after: Any, rss: tuple[int, int]) -> None:
    where = "real control plane" if args.real else "FakeCluster"
    per_object = (rss[1] - rss[0]) * 1024 / args.objects
    grown = f"RSS {rss[0]} -> {rss[1]} KiB ({per_object:+.0f} B per object)"
    if before is None:
        print(
            f"{args.backend}, {where}, {args.objects} objects after {args.warm}, untraced: {grown}"
        )
        return
    ignored = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<*")]
    stats = after.filter_traces(ignored).compare_to(before.filter_traces(ignored), "traceback")
    heap = sum(stat.size_diff for stat in stats)
    print(
        f"{args.backend}, {where}, {args.objects} objects after {args.warm}: heap "
        f"{heap / 1024:+.1f} KiB ({heap / args.objects:+.0f} B per object); traced {grown}"
    )
    for stat in [stat for stat in stats if stat.size_diff > 0][: args.top]:
        print(f"\n{stat.size_diff / 1024:+.1f} KiB in {stat.count_diff:+d} blocks, allocated at:")
        for line in stat.traceback.format()[-2 * args.frames :]:
            print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--real", action="store_true", help="on a local control plane")
    parser.add_argument("--frames", type=int, default=8, help="tracemalloc's traceback depth")
    parser.add_argument("--top", type=int, default=5, help="how many growths to show")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # the records would be measured too
    if args.frames:
        tracemalloc.start(args.frames)
    if not args.real:
        before, after, *rss = anyio.run(on_fake, args, backend=args.backend)
    else:
        with LocalControlPlane(controllers=False, nodes=False) as plane:
            kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
            wait_for_crd(plane, "kopfexamples.kopf.dev")
            kubectl(plane, "create", "namespace", NAMESPACE)
            before, after, *rss = anyio.run(on_real, plane, args, backend=args.backend)
    report(args, before, after, (rss[0], rss[1]))


if __name__ == "__main__":
    sys.exit(main())
