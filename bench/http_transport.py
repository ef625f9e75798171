"""Client CPU per request and watch throughput: httpx + KubeTransport against the alternatives.

Run from the repository root: ``python -m bench.http_transport`` (``--help`` for options). It
starts a real local control plane, then, in alternating repetitions, measures for each client:

- CPU and wall time per GET of one namespace (JSON-decoded), with 16 and with 1 in flight;
- a watch of ConfigMaps from resourceVersion "0", which replays one ADDED event per existing
  ConfigMap: events parsed (split into lines and JSON-decoded) per second, and CPU per event.
  httpx clients read lines with ``response.aiter_lines()``; KubeTransport also with
  ``anyop.kube.transport.aiter_raw`` and a split of its chunks, as anyop's watches do.

CPU is this process's ``time.process_time()`` (user + system): the API server runs in processes
of its own. On a shared machine the numbers wander; medians and minima of alternating
repetitions are printed, with the load average. aiohttp and httpx's HTTP/2 (``h2``) are measured
when installed, and skipped with a note if not.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
import httpx

from anyop.kube.transport import KubeTransport, aiter_raw

WATCH = "/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0"


@dataclass(frozen=True)
class Target:
    """A running API server and the PKI folder with its CA and admin client certificate."""

    server: str
    pki: Path

    def ssl_context(self) -> ssl.SSLContext:
        """A fresh client context (each client gets its own: httpcore sets ALPN on it)."""
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx


class Client(Protocol):
    """What the benchmark needs from each HTTP client library."""

    async def get_json(self, path: str) -> Any: ...

    async def count_events(self, path: str, limit: int, reader: str) -> int: ...

    async def aclose(self) -> None: ...


class HttpxClient:
    """httpx with KubeTransport (``kube``), its default transport, or HTTP/2 (``h2``)."""

    def __init__(self, target: Target, kind: str) -> None:
        ctx = target.ssl_context()
        self._client = httpx.AsyncClient(
            base_url=target.server,
            verify=ctx,
            transport=KubeTransport(ctx) if kind == "kube" else None,
            http2=kind == "h2",
            timeout=60,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    async def get_json(self, path: str) -> Any:
        response = await self._client.get(path)
        response.raise_for_status()
        return response.json()

    async def count_events(self, path: str, limit: int, reader: str) -> int:
        async with self._client.stream("GET", path) as response:
            if reader == "raw":
                return await count_raw(response, limit)
            count = 0
            async for line in response.aiter_lines():
                if line and json.loads(line)["type"] == "ADDED":
                    count += 1
                    if count >= limit:
                        break
            return count

    async def aclose(self) -> None:
        await self._client.aclose()


async def count_raw(response: httpx.Response, limit: int) -> int:
    """Count ADDED events in the raw chunks of a KubeTransport body, split into lines by hand."""
    chunks, tail, count = aiter_raw(response), b"", 0
    while count < limit:
        *lines, tail = (tail + await chunks.__anext__()).split(b"\n")
        for line in lines:
            if line and json.loads(line)["type"] == "ADDED":
                count += 1
    return count


class AiohttpClient:
    """aiohttp (Kopf's HTTP client), as Kopf uses it: ``resp.json()``, lines of ``resp.content``."""

    def __init__(self, target: Target) -> None:
        import aiohttp

        connector = aiohttp.TCPConnector(ssl=target.ssl_context(), limit=64)
        self._session = aiohttp.ClientSession(
            base_url=target.server, connector=connector, timeout=aiohttp.ClientTimeout(60)
        )

    async def get_json(self, path: str) -> Any:
        async with self._session.get(path) as response:
            response.raise_for_status()
            return await response.json()

    async def count_events(self, path: str, limit: int, reader: str) -> int:
        count = 0
        async with self._session.get(path) as response:
            async for line in response.content:
                if line.strip() and json.loads(line)["type"] == "ADDED":
                    count += 1
                    if count >= limit:
                        break
        return count

    async def aclose(self) -> None:
        await self._session.close()


@dataclass(frozen=True)
class Contender:
    """One client library on one event loop, and how it reads watch lines."""

    name: str
    backend: str
    make: Callable[[Target], Client]
    readers: tuple[str, ...] = ("lines",)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.backend})"


@dataclass
class Samples:
    """Measurements of one contender, by metric name, one value per repetition."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.values.setdefault(metric, []).append(value)

    def merge(self, other: Samples) -> None:
        for metric, values in other.values.items():
            self.values.setdefault(metric, []).extend(values)

    def median(self, metric: str) -> float | None:
        got = self.values.get(metric)
        return statistics.median(got) if got else None

    def minimum(self, metric: str) -> float | None:
        got = self.values.get(metric)
        return min(got) if got else None


Job = Callable[[Client], Awaitable[tuple[float, float]]]


async def timed(work: Awaitable[Any]) -> tuple[float, float]:
    """Await ``work``; return the CPU and wall seconds it took."""
    cpu, wall = time.process_time(), time.perf_counter()
    await work
    return time.process_time() - cpu, time.perf_counter() - wall


async def run_gets(client: Client, path: str, *, total: int, in_flight: int) -> tuple[float, float]:
    """GET ``path`` ``total`` times with ``in_flight`` concurrent workers; (cpu, wall)."""

    async def worker(count: int) -> None:
        for _ in range(count):
            await client.get_json(path)

    async def workers(count: int) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(in_flight):
                tg.start_soon(worker, count)

    await workers(2)  # warm-up: open every connection
    return await timed(workers(total // in_flight))


async def run_watch(client: Client, path: str, *, events: int, reader: str) -> tuple[float, float]:
    """Watch until ``events`` ADDED events have been parsed; (cpu, wall)."""
    await client.get_json("/version")  # warm-up: open the connection

    async def watch() -> None:
        seen = await client.count_events(path, events, reader)
        assert seen == events, f"saw {seen} of {events} events"

    return await timed(watch())


def measure(contender: Contender, target: Target, job: Job) -> tuple[float, float]:
    """Run ``job`` with a new client of ``contender`` in a new event loop; (cpu, wall)."""

    async def main() -> tuple[float, float]:
        client = contender.make(target)
        try:
            return await job(client)
        finally:
            await client.aclose()

    return anyio.run(main, backend=contender.backend)


# -- set-up -------------------------------------------------------------------------------------


async def populate(target: Target, namespace: str, count: int) -> None:
    """Create ``namespace`` with ``count`` ConfigMaps of about 1 KiB each."""
    transport = KubeTransport(target.ssl_context())
    async with httpx.AsyncClient(base_url=target.server, transport=transport, timeout=60) as api:
        created = await api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
        created.raise_for_status()
        path = f"/api/v1/namespaces/{namespace}/configmaps"

        async def create(first: int) -> None:
            for i in range(first, count, 32):
                body = {"metadata": {"name": f"cm-{i:05d}"}, "data": {"payload": "x" * 1000}}
                (await api.post(path, json=body)).raise_for_status()

        async with anyio.create_task_group() as tg:
            for first in range(32):
                tg.start_soon(create, first)


def _httpx(kind: str) -> Callable[[Target], Client]:
    return lambda target: HttpxClient(target, kind)


def contenders(only: list[str] | None) -> tuple[list[Contender], list[str]]:
    """The contenders to run, and notes on those skipped."""
    found = [
        Contender("httpx default transport", "asyncio", _httpx("default")),
        Contender("httpx + KubeTransport", "asyncio", _httpx("kube"), ("lines", "raw")),
        Contender("httpx + KubeTransport", "trio", _httpx("kube"), ("lines", "raw")),
    ]
    notes = []
    try:
        import h2  # noqa: F401

        found.insert(1, Contender("httpx http2", "asyncio", _httpx("h2")))
    except ImportError:
        notes.append("httpx http2 skipped: h2 is not installed")
    try:
        import aiohttp  # noqa: F401

        found.append(Contender("aiohttp", "asyncio", AiohttpClient))
    except ImportError:
        notes.append("aiohttp skipped: not installed (pip install aiohttp)")
    if only:
        found = [c for c in found if any(word in c.label for word in only)]
    return found, notes


# -- the run ------------------------------------------------------------------------------------


def run(args: argparse.Namespace, target: Target) -> dict[str, Samples]:
    """Measure every contender, ``args.repeats`` times, rotating the order each time."""
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    anyio.run(populate, target, namespace, args.events)
    chosen, notes = contenders(args.only)
    for note in notes:
        print(f"note: {note}")
    results = {c.label: Samples() for c in chosen}
    for rep in range(args.repeats):
        order = chosen[rep % len(chosen) :] + chosen[: rep % len(chosen)]
        for contender in order:
            one = measure_one(contender, target, args=args, namespace=namespace)
            results[contender.label].merge(one)
        print(f"repetition {rep + 1}/{args.repeats} done, load {_load()}", flush=True)
    return results


def measure_one(
    contender: Contender, target: Target, *, args: argparse.Namespace, namespace: str
) -> Samples:
    """One repetition of every measurement of one contender."""
    samples = Samples()
    path = f"/api/v1/namespaces/{namespace}"
    for flight in (16, 1):
        cpu, wall = measure(contender, target, gets_job(path, args.requests, flight))
        samples.add(f"cpu{flight}", cpu / args.requests)
        samples.add(f"wall{flight}", wall / args.requests)
    for reader in contender.readers:
        cpu, wall = measure(contender, target, watch_job(namespace, args.events, reader))
        samples.add(f"ev_cpu_{reader}", cpu / args.events)
        samples.add(f"ev_rate_{reader}", args.events / wall)
    return samples


def gets_job(path: str, total: int, in_flight: int) -> Job:
    """A job: ``total`` GETs of ``path``, ``in_flight`` at a time."""

    async def job(client: Client) -> tuple[float, float]:
        return await run_gets(client, path, total=total, in_flight=in_flight)

    return job


def watch_job(namespace: str, events: int, reader: str) -> Job:
    """A job: a watch of the namespace's ConfigMaps until ``events`` ADDED events."""

    async def job(client: Client) -> tuple[float, float]:
        return await run_watch(client, WATCH.format(ns=namespace), events=events, reader=reader)

    return job


def tables(results: dict[str, Samples]) -> str:
    """Format medians (and minima of CPU), with ratios against aiohttp where measured."""
    base = next((s for name, s in results.items() if name.startswith("aiohttp")), None)
    return "\n".join([*get_table(results, base), "", *watch_table(results, base)])


def get_table(results: dict[str, Samples], base: Samples | None) -> list[str]:
    """Lines of the GET table."""
    lines = [
        f"{'GET one namespace':36} {'CPU us/req @16':>15} {'min':>5} {'vs aiohttp':>10} "
        f"{'req/s @16':>9} {'CPU us/req @1':>13} {'wall ms @1':>10}"
    ]
    for name, s in results.items():
        wall16 = s.median("wall16")
        lines.append(
            f"{name:36} {_fmt(s.median('cpu16'), 1e6, 0):>15}"
            f" {_fmt(s.minimum('cpu16'), 1e6, 0):>5} {_ratio(s, base, 'cpu16'):>10}"
            f" {_fmt(1 / wall16 if wall16 else None, 1, 0):>9}"
            f" {_fmt(s.median('cpu1'), 1e6, 0):>13} {_fmt(s.median('wall1'), 1e3, 2):>10}"
        )
    return lines


def watch_table(results: dict[str, Samples], base: Samples | None) -> list[str]:
    """Lines of the watch table."""
    lines = [
        f"{'watch, ADDED events replayed':52} {'events/s':>9} {'vs aiohttp':>10} "
        f"{'CPU us/event':>12} {'min':>5} {'vs aiohttp':>10}"
    ]
    for name, s in results.items():
        for reader in ("lines", "raw"):
            if s.median(f"ev_rate_{reader}") is None:
                continue
            how = "aiohttp lines" if name.startswith("aiohttp") else _READERS[reader]
            lines.append(
                f"{name + ', ' + how:52} {_fmt(s.median(f'ev_rate_{reader}'), 1, 0):>9}"
                f" {_ratio(s, base, f'ev_rate_{reader}', like='ev_rate_lines'):>10}"
                f" {_fmt(s.median(f'ev_cpu_{reader}'), 1e6, 1):>12}"
                f" {_fmt(s.minimum(f'ev_cpu_{reader}'), 1e6, 1):>5}"
                f" {_ratio(s, base, f'ev_cpu_{reader}', like='ev_cpu_lines'):>10}"
            )
    return lines


_READERS = {"lines": "aiter_lines()", "raw": "aiter_raw() + split"}


def _fmt(value: float | None, scale: float, digits: int) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def _ratio(samples: Samples, base: Samples | None, metric: str, *, like: str = "") -> str:
    """The median of ``metric`` over aiohttp's median of ``like`` (default: the same)."""
    value, reference = samples.median(metric), base.median(like or metric) if base else None
    return "-" if value is None or not reference else f"{value / reference:.2f}x"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.http_transport", description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="GETs per measurement")
    parser.add_argument("--events", type=int, default=2000, help="ConfigMaps = watch events")
    parser.add_argument("--repeats", type=int, default=4, help="alternating repetitions")
    parser.add_argument("--only", nargs="*", help="run contenders whose name has these words")
    parser.add_argument("--server", help="use this running API server instead of starting one")
    parser.add_argument("--pki", type=Path, help="with --server: folder of ca.crt, admin.crt/key")
    return parser.parse_args()


def main() -> None:
    """Start a local control plane (unless given one), measure, print the tables."""
    args = parse_args()
    started = time.perf_counter()
    print(f"load average before: {_load()} ({os.cpu_count()} CPUs)")
    if args.server:
        results = run(args, Target(args.server, args.pki))
    else:
        from anyop.testing.controlplane import LocalControlPlane

        with LocalControlPlane(controllers=False, nodes=False) as plane:
            results = run(args, Target(plane.server, plane.ca_path.parent))
    print()
    print(tables(results))
    took = time.perf_counter() - started
    print(f"\nmedians of {args.repeats} alternating repetitions; took {took:.0f} s")


if __name__ == "__main__":
    main()
