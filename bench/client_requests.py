"""CPU per API request through anyop's client, and through aiohttp, in one run.

``python -m bench.client_requests [--requests 2000] [--inflight 16] [--repeats 3]``

Starts a local control plane, then alternates: anyop's ``KubeClient.get`` of one namespace with
the direct path (``SessionPool.direct = True``: the transport without httpx's client layer), the
same through httpx's ``AsyncClient.send``, and aiohttp (if installed) -- on asyncio and Trio.
Reports the median client CPU per request and its ratio to aiohttp.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio

import anyop
from anyop.kube.auth import Vault
from anyop.kube.client import open_client
from anyop.kube.resources import Resource
from anyop.kube.sessions import SessionPool
from anyop.testing.controlplane import LocalControlPlane

NAMESPACES = Resource("", "v1", "namespaces", kind="Namespace", namespaced=False)


async def _measure(call: Callable[[], Awaitable[object]], requests: int, inflight: int) -> float:
    limiter = anyio.Semaphore(inflight)

    async def one() -> None:
        async with limiter:
            await call()

    for _ in range(50):  # warm-up: connections, caches
        await call()
    started = time.process_time()
    async with anyio.create_task_group() as tg:
        for _ in range(requests):
            await limiter.acquire()
            limiter.release()
            tg.start_soon(one)
    return (time.process_time() - started) / requests * 1e6


async def anyop_client(direct: bool, requests: int, inflight: int) -> float:
    SessionPool.direct = direct
    vault = Vault()
    await vault.populate({"kubeconfig": await anyop.login_with_kubeconfig()})
    async with open_client(vault) as client:
        return await _measure(lambda: client.get(NAMESPACES, name="default"), requests, inflight)


async def aiohttp_client(plane: LocalControlPlane, requests: int, inflight: int) -> float:
    import aiohttp

    connector = aiohttp.TCPConnector(ssl=plane.ssl_context(), limit=0)
    async with aiohttp.ClientSession(plane.server, connector=connector) as session:

        async def get() -> object:
            async with session.get("/api/v1/namespaces/default") as response:
                return await response.json()

        return await _measure(get, requests, inflight)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        os.environ["KUBECONFIG"] = str(plane.kubeconfig)
        for _ in range(args.repeats):
            for backend in ("asyncio", "trio"):
                for direct in (True, False):
                    name = f"anyop {'direct' if direct else 'via AsyncClient.send'} ({backend})"
                    cpu = anyio.run(
                        anyop_client, direct, args.requests, args.inflight, backend=backend
                    )
                    results.setdefault(name, []).append(cpu)
            try:
                cpu = anyio.run(aiohttp_client, plane, args.requests, args.inflight)
                results.setdefault("aiohttp (asyncio)", []).append(cpu)
            except ImportError:
                pass
    base = statistics.median(results.get("aiohttp (asyncio)", [float("nan")]))
    print(
        f"GET one namespace, {args.requests} requests, {args.inflight} in flight, "
        f"{args.repeats} repetitions; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'client':42} {'CPU us/req (median)':>20} {'vs aiohttp':>11}")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"{name:42} {median:20.0f} {median / base:10.2f}x")


if __name__ == "__main__":
    main()
