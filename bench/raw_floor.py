"""The floor: a raw list-watch-patch loop doing only the necessary API writes.

``python -m bench.raw_floor NAMESPACE [--client httpx|aiohttp] [--list-only]`` lists the
KopfExamples of a namespace, page by page, and patches ``status.create_fn`` of each one that lacks
it (16 requests in flight, one write per object). Meanwhile it watches the namespace from the
listing's resourceVersion, as an operator must, and decodes every event: the echo of each write
comes back on the watch. It exits once every write's echo came. No framework, no state: the least
any operator must do (issue 10's anchors name such a loop). ``--list-only`` skips the watch (the
floor of earlier sessions, cheaper for client and server alike). ``httpx`` uses httpx's default
transport, as a plain httpx user would; ``aiohttp`` is the client Kopf is built on.

``--state`` adds the least state that Kopf's semantics need: each write also stores the handled
spec (``status.anyop.last-handled-configuration``, as anyop writes it), and each event's stored spec
is decoded and compared with its spec, which is how an operator tells a change from the echo of its
own write. Kopf and anyop both keep this state; the plain floor keeps none.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import yaml


def kubeconfig() -> tuple[str, ssl.SSLContext]:
    """The current context's server and TLS context with its client certificate (files only)."""
    with open(os.environ["KUBECONFIG"]) as f:
        config = yaml.safe_load(f)
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
    ctx = ssl.create_default_context(cafile=cluster["cluster"]["certificate-authority"])
    ctx.load_cert_chain(user["user"]["client-certificate"], user["user"]["client-key"])
    return cluster["cluster"]["server"], ctx


Get = Callable[[str, dict[str, str]], Awaitable[dict[str, Any]]]
Patch = Callable[[str, dict[str, Any]], Awaitable[None]]
Lines = Callable[[str, dict[str, str]], AsyncGenerator[bytes, None]]
MERGE = {"Content-Type": "application/merge-patch+json"}


def handled(spec: Any) -> str:
    """The stored form of a handled spec (anyop's ``last-handled-configuration``)."""
    return json.dumps({"spec": spec}, separators=(",", ":"))


def changed(obj: dict[str, Any]) -> bool:
    """Whether an object's spec differs from the one its stored state says was handled."""
    stored = ((obj.get("status") or {}).get("anyop") or {}).get("last-handled-configuration")
    return stored is None or json.loads(stored).get("spec") != obj.get("spec")


async def floor(
    namespace: str, get: Get, patch: Patch, lines: Lines | None, state: bool = False
) -> None:
    """List page by page; 16 tasks patch the objects that lack ``status.create_fn``; with
    ``lines``, watch from the listing until each written object came back with it; with
    ``state``, store the handled spec too and check every event against it."""
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](1000)
    unseen: set[str] = set()  # written (or to write), and its echo not seen yet
    async with anyio.create_task_group() as tg:

        async def patcher(objects: anyio.abc.ObjectReceiveStream[dict[str, Any]]) -> None:
            async for obj in objects:
                name = obj["metadata"]["name"]
                body: dict[str, Any] = {"status": {"create_fn": {"message": f"hello {name}"}}}
                if state:
                    body["status"]["anyop"] = {"last-handled-configuration": handled(obj["spec"])}
                await patch(f"{url}/{name}/status", body)

        for _ in range(16):
            tg.start_soon(patcher, receive.clone())
        receive.close()
        async with send:
            params = {"limit": "500"}
            while True:
                page = await get(url, params)
                for obj in page["items"]:
                    if "create_fn" not in (obj.get("status") or {}):
                        unseen.add(obj["metadata"]["name"])
                        await send.send(obj)
                if not (token := page["metadata"].get("continue")):
                    break
                params["continue"] = token
        if lines is None or not unseen:
            return
        version = page["metadata"]["resourceVersion"]
        watch = {"watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true"}
        async with aclosing(lines(url, watch)) as events:
            async for line in events:
                obj = json.loads(line)["object"]
                if state and changed(obj):
                    continue  # not our echo: an operator would handle it (none come here)
                if "create_fn" in (obj.get("status") or {}):
                    unseen.discard(obj["metadata"]["name"])
                    if not unseen:
                        break


async def with_httpx(namespace: str, watch: bool, state: bool) -> None:
    server, ctx = kubeconfig()
    timeout = httpx.Timeout(60, read=None)  # a watch may be quiet for long
    async with httpx.AsyncClient(base_url=server, verify=ctx, timeout=timeout) as client:

        async def get(url: str, params: dict[str, str]) -> dict[str, Any]:
            return (await client.get(url, params=params)).raise_for_status().json()  # type: ignore[no-any-return]

        async def patch(url: str, body: dict[str, Any]) -> None:
            (await client.patch(url, json=body, headers=MERGE)).raise_for_status()

        async def lines(url: str, params: dict[str, str]) -> AsyncGenerator[bytes, None]:
            async with client.stream("GET", url, params=params) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    yield line.encode()

        await floor(namespace, get, patch, lines if watch else None, state)


async def with_aiohttp(namespace: str, watch: bool, state: bool) -> None:
    import aiohttp  # only in the bench environment (nox -s bench)

    server, ctx = kubeconfig()
    connector = aiohttp.TCPConnector(ssl=ctx)
    async with aiohttp.ClientSession(server, connector=connector) as session:

        async def get(url: str, params: dict[str, str]) -> dict[str, Any]:
            async with session.get(url, params=params, raise_for_status=True) as response:
                return await response.json()  # type: ignore[no-any-return]

        async def patch(url: str, body: dict[str, Any]) -> None:
            async with session.patch(url, json=body, headers=MERGE, raise_for_status=True):
                pass

        async def lines(url: str, params: dict[str, str]) -> AsyncGenerator[bytes, None]:
            quiet = aiohttp.ClientTimeout(total=None, sock_read=None)
            async with session.get(url, params=params, timeout=quiet) as response:
                response.raise_for_status()
                async for line in response.content:
                    yield line

        await floor(namespace, get, patch, lines if watch else None, state)


def report() -> None:
    """``RAW <cpu seconds> <peak RSS MiB>`` on stderr (VmHWM: this program's, not its fork's)."""
    status = Path("/proc/self/status").read_text().splitlines()
    hwm = next(line for line in status if line.startswith("VmHWM"))
    print(f"RAW {time.process_time()} {int(hwm.split()[1]) / 1024}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("namespace")
    parser.add_argument("--client", choices=["httpx", "aiohttp"], default="httpx")
    parser.add_argument("--list-only", action="store_true", help="no watch (the older floor)")
    parser.add_argument("--state", action="store_true", help="store and check the handled spec")
    args = parser.parse_args()
    run = with_aiohttp if args.client == "aiohttp" else with_httpx
    anyio.run(run, args.namespace, not args.list_only, args.state)
    report()
