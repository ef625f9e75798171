"""Embedding: the operator as one task of your own AnyIO program, on asyncio or on Trio.

No thread and no second event loop: ``anyop.serve()`` is the whole operator (startup and cleanup
handlers included), runs in your task group (on Trio, a nursery) beside your own tasks, installs
no signal handlers, and returns when its stop event is set (or it is cancelled).
Here the program's own task creates three objects, waits until the operator has greeted them,
deletes them, and then stops the operator.

Run it with python, not with ``anyop run``::

    python examples/11-embedding/example.py -n default                 # on asyncio
    python examples/11-embedding/example.py -n default --backend trio  # on Trio
"""

import argparse
import functools
from collections.abc import Callable
from typing import Any

import anyio
import httpx

import anyop


@anyop.on.startup()
def started(logger: anyop.Logger, **_: Any) -> None:
    logger.info("The operator starts: its startup handlers run inside anyop.serve().")


@anyop.on.cleanup()
def cleaned_up(logger: anyop.Logger, **_: Any) -> None:
    logger.info("The operator stops: its cleanup handlers run before anyop.serve() returns.")


@anyop.on.create("kopfexamples")
async def greet(name: str, memo: anyop.Memo, **_: Any) -> dict[str, str]:
    memo.greeted.append(name)  # the operator's memo is the program's own object
    return {"message": f"Hello, {name}!"}


@anyop.on.delete("kopfexamples")
async def say_goodbye(name: str, logger: anyop.Logger, **_: Any) -> None:
    logger.info(f"Good bye, {name}!")


async def open_api() -> httpx.AsyncClient:
    """The program's own API client, with the same kubeconfig that the operator uses."""
    info = await anyop.login_with_kubeconfig()
    if info is None:
        raise SystemExit("No kubeconfig: point KUBECONFIG to one (see `anyop controlplane up`).")
    tls = await anyio.to_thread.run_sync(info.as_ssl_context)
    return httpx.AsyncClient(base_url=info.server, verify=tls, headers=info.as_http_headers())


async def poll(api: httpx.AsyncClient, url: str, done: Callable[[httpx.Response], bool]) -> None:
    """Ask the API server for ``url`` again and again, until ``done`` likes the answer."""
    while True:
        if done(await api.get(url)):
            return
        await anyio.sleep(0.1)


def greeted(response: httpx.Response) -> bool:
    return "greet" in (response.json().get("status") or {})


def gone(response: httpx.Response) -> bool:
    return response.status_code == 404


async def exercise(namespace: str, count: int) -> None:
    """The program's own work: create objects, wait for the operator's greetings, delete them."""
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    names = [f"kex-embedded-{i}" for i in range(count)]
    async with await open_api() as api:
        for name in names:
            body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                    "metadata": {"name": name}, "spec": {}}  # fmt: skip
            (await api.post(url, json=body)).raise_for_status()
        for name in names:
            await poll(api, f"{url}/{name}", greeted)
            status = (await api.get(f"{url}/{name}")).json()["status"]
            print(f"The operator says: {status['greet']['message']}", flush=True)
        for name in names:
            (await api.delete(f"{url}/{name}")).raise_for_status()
        for name in names:  # the finalizer holds each object until say_goodbye succeeds
            await poll(api, f"{url}/{name}", gone)


async def main(namespace: str, count: int) -> None:
    memo = anyop.Memo(greeted=[])
    stop, ready = anyio.Event(), anyio.Event()
    operator = functools.partial(
        anyop.serve, namespaces=[namespace], memo=memo, stop_event=stop, ready_event=ready
    )
    async with anyio.create_task_group() as tg:  # on Trio, a nursery: trio.open_nursery() too
        tg.start_soon(operator)
        await ready.wait()  # every watched resource is listed: nothing is missed from now on
        print("The operator is ready.", flush=True)
        await exercise(namespace, count)
        stop.set()  # a graceful stop: the operator's task returns, and the task group exits
    print(f"The operator has stopped after greeting {sorted(memo.greeted)}.", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--count", type=int, default=3)
    args = parser.parse_args()
    anyop.configure(log_format="plain")
    anyio.run(main, args.namespace, args.count, backend=args.backend)
