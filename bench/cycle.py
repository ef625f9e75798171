"""The engine's own CPU per object, without a server: ``python -m bench.cycle [--objects 5000]``.

N listed KopfExamples go through anyop's real :class:`~anyop.engine.resource.workers.ObjectWorkers`
and :class:`~anyop.engine.cycle.reconciler.Reconciler` with one async create handler returning a
dict (the ``bulk`` scenario's operator). The API client is an in-memory stand-in: a patch is merged
into the object (with a new ``resourceVersion``), the response comes back as a fresh JSON-decoded
body, and the same body comes back once more as the watch's ``MODIFIED`` echo, which the engine
handles too. So each object costs two handling cycles, one patch and no network: the part of
``bulk``'s ``cpu_s`` that is anyop's engine and not its HTTP client, the server, or the start-up.

The cyclic garbage collector is tuned as ``anyop run`` tunes it. Printed: CPU microseconds per
object (``time.process_time()``) for each backend, medians of the repetitions, which alternate.
``--profile FILE`` writes a cProfile of one more asyncio run (read it with ``python -m pstats
FILE``); ``--cycles`` times the create cycle and the echo's cycle instead, each called directly
(no workers, no tasks). Use it for before/after ratios of engine changes, alternating with an
older checkout (``PYTHONPATH=<checkout>/src python -m bench.cycle``): it is steadier than the
side-by-side runs, whose time is shared with kube-apiserver and etcd.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import json
import statistics
import time
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import anyio.lowlevel

import anyop
from anyop.engine.cycle.object_slots import ObjectSlot
from anyop.engine.cycle.reconciler import Observed, Reconciler
from anyop.engine.operator.launch import OPERATOR_GC_THRESHOLDS
from anyop.engine.resource.serve_resource import persistence_for
from anyop.engine.resource.workers import ObjectWorkers
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.inflight import InFlight
from anyop.kube.patches import merge
from anyop.kube.resources import Resource

RESOURCE = Resource(
    "kopf.dev", "v1", "kopfexamples", kind="KopfExample", subresources=frozenset({"status"}),
    namespaced=True,
)  # fmt: skip


async def create_fn(name: str, **_: Any) -> dict[str, str]:
    """The ``bulk`` scenario's handler (``bench/operators/kopf_code.py``)."""
    return {"message": f"hello {name}"}


def registry() -> OperatorRegistry:
    """The ``bulk`` scenario's operator: one async create handler returning a dict."""
    registry = OperatorRegistry()
    anyop.on.create("kopfexamples", registry=registry)(create_fn)
    return registry


def body(index: int) -> dict[str, Any]:
    """A KopfExample as a listing returns it."""
    return {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {
            "name": f"kex-{index}",
            "namespace": "bench",
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(1000 + index),
            "generation": 1,
            "creationTimestamp": "2026-11-25T00:00:00Z",
        },
        "spec": {"field": "value", "items": ["item1", "item2"]},
    }


class Server:
    """The API client's stand-in: keeps the objects, merges patches, echoes them to a watch.

    Bodies cross it as JSON text, both ways, as they would cross the network.
    """

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.in_flight = InFlight()
        self.patches = 0
        self.objects = {item["metadata"]["name"]: json.dumps(item) for item in objects}
        self._watch, self.echoes = anyio.create_memory_object_stream[str](len(objects) * 2)
        self._version = 10**6

    def close(self) -> None:
        """Close the watch's stream, both ends."""
        self._watch.close()
        self.echoes.close()

    async def patch(self, resource: Resource, patch: Any, *, name: str, **_: Any) -> Any:
        """A merge-patch (the cycle sends one per object); the response, and the echo queued."""
        with self.in_flight:
            await anyio.lowlevel.checkpoint()
            self.patches += 1
            self._version += 1
            merged = merge(json.loads(self.objects[name]), json.loads(json.dumps(patch)))
            merged["metadata"]["resourceVersion"] = str(self._version)
            self.objects[name] = text = json.dumps(merged)
        self._watch.send_nowait(text)
        return json.loads(text)


class Counted:
    """The reconciler, counting its finished cycles."""

    def __init__(self, reconciler: Reconciler, expected: int) -> None:
        self.reconciler = reconciler
        self.cycles = 0
        self.expected = expected
        self.done = anyio.Event()

    async def __call__(self, slot: Any, body: Mapping[str, Any]) -> Any:
        result = await self.reconciler(slot, body)
        self.cycles += 1
        if self.cycles == self.expected:
            self.done.set()
        return result


def operator(count: int) -> tuple[list[dict[str, Any]], Server, Reconciler]:
    """``count`` listed objects, the stand-in API holding them, and the bulk operator's cycle."""
    listed = [body(index) for index in range(count)]
    server = Server(listed)
    settings = anyop.OperatorSettings()
    persistence = persistence_for(RESOURCE, settings)
    client: Any = server  # a stand-in for KubeClient: it has what the cycle calls
    return listed, server, Reconciler(client, RESOURCE, registry(), settings, persistence)


async def run(count: int, seconds: float = 600) -> float:
    """CPU seconds for ``count`` objects, from their listing until every echo is handled.

    Raises:
        RuntimeError: An object was not handled with one patch, or the cycles did not all end
            within ``seconds``.
    """
    listed, server, reconciler = operator(count)
    counted = Counted(reconciler, expected=2 * count)  # the listed body's, and its echo's
    gc.collect()
    started = time.process_time()
    with contextlib.closing(server):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(counted, tg)
            for item in listed:
                workers.dispatch(Observed(item, type="ADDED", listed=True))
            with anyio.move_on_after(seconds) as waiting:
                for _ in range(count):  # the watch: every echo, decoded, in order
                    echo = json.loads(await server.echoes.receive())
                    workers.dispatch(Observed(echo, type="MODIFIED"))
                await counted.done.wait()
            spent = time.process_time() - started
            workers.close()
            if waiting.cancelled_caught:
                tg.cancel_scope.cancel()  # the stuck cycles too
    if waiting.cancelled_caught:
        raise RuntimeError(
            f"{server.patches} patches and {counted.cycles} of {2 * count} cycles in {seconds} s"
        )
    if server.patches != count:
        raise RuntimeError(f"{server.patches} patches for {count} objects (expected one each)")
    objects = [json.loads(text) for text in server.objects.values()]
    handled = sum(1 for item in objects if "create_fn" in item.get("status", {}))
    if handled != count:
        raise RuntimeError(f"{handled} of {count} objects handled")
    return spent


async def cycles(count: int) -> tuple[float, float]:
    """Seconds per object of its create cycle and of its echo's cycle, each called directly.

    No workers and no tasks: the reconciler is called for the listed body, then for the echo of
    its write (the same stand-in API). Steadier than :func:`run` for changes to one cycle.
    """
    listed, server, reconciler = operator(count)
    creating = echoing = 0.0
    with contextlib.closing(server):
        for item in listed:
            slot = ObjectSlot(uid=item["metadata"]["uid"])
            started = time.perf_counter()
            await reconciler(slot, Observed(item, type="ADDED", listed=True))
            created = time.perf_counter()
            try:
                text = server.echoes.receive_nowait()
            except anyio.WouldBlock:
                name = item["metadata"]["name"]
                raise RuntimeError(f"{name}: its create cycle sent no patch") from None
            echo = Observed(json.loads(text), type="MODIFIED")
            echoed = time.perf_counter()
            await reconciler(slot, echo)
            creating += created - started
            echoing += time.perf_counter() - echoed
    if server.patches != count:
        raise RuntimeError(f"{server.patches} patches for {count} objects (expected one each)")
    return creating / count, echoing / count


@contextlib.contextmanager
def tuned_collector() -> Iterator[None]:
    """The cyclic garbage collector as ``anyop run`` tunes it, until the block ends."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*OPERATOR_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backends", nargs="+", default=["asyncio", "trio"])
    parser.add_argument("--profile", help="Write a cProfile of one more asyncio run here.")
    parser.add_argument(
        "--cycles", action="store_true", help="Time the create and the echo cycle, called directly."
    )
    args = parser.parse_args(argv)
    if args.cycles:
        with tuned_collector():
            timed = measure_cycles(args.objects, args.repeats, args.backends)
        for backend, (create, echo) in timed.items():
            print(f"{backend}: create cycle {create:.1f} us, echo cycle {echo:.1f} us (medians)")
        return
    with tuned_collector():
        runs = measure(args.objects, args.repeats, args.backends)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            anyio.run(run, args.objects, backend="asyncio")
            profiler.disable()
            profiler.dump_stats(args.profile)
    for backend, values in runs.items():
        print(f"{backend}: {statistics.median(values):.1f} us per object (median of {len(values)})")
    if args.profile:
        print(f"profile: {args.profile}")


def measure(count: int, repeats: int, backends: list[str]) -> dict[str, list[float]]:
    """CPU microseconds per object of every run, by backend; the backends alternate."""
    runs: dict[str, list[float]] = {backend: [] for backend in backends}
    for repeat in range(repeats):
        order = backends[repeat % 2 :] + backends[: repeat % 2]
        for backend in order:
            spent = anyio.run(run, count, backend=backend)
            runs[backend].append(spent / count * 1e6)
            print(f"  #{repeat + 1} {backend}: {runs[backend][-1]:.1f} us per object", flush=True)
    return runs


def measure_cycles(count: int, repeats: int, backends: list[str]) -> dict[str, tuple[float, float]]:
    """Median microseconds of the create and the echo cycle, by backend; backends alternate."""
    runs: dict[str, list[tuple[float, float]]] = {backend: [] for backend in backends}
    for repeat in range(repeats):
        for backend in backends[repeat % 2 :] + backends[: repeat % 2]:
            runs[backend].append(anyio.run(cycles, count, backend=backend))
    return {
        backend: (
            statistics.median(create for create, _ in values) * 1e6,
            statistics.median(echo for _, echo in values) * 1e6,
        )
        for backend, values in runs.items()
    }


if __name__ == "__main__":
    main()
