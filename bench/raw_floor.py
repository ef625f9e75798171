"""The floor: a raw list-then-patch loop on httpx doing only the necessary API writes.

``python -m bench.raw_floor NAMESPACE`` lists the KopfExamples of a namespace, page by page, and
patches ``status.create_fn`` of each one that lacks it (16 requests in flight, one write per
object), then exits. No framework, no state, no watch: the least any operator must do.
It uses httpx's default transport, as a plain httpx user would.
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import yaml


def client_of_kubeconfig() -> httpx.AsyncClient:
    """An httpx client with the current context's server and client certificate (files only)."""
    with open(os.environ["KUBECONFIG"]) as f:
        config = yaml.safe_load(f)
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
    ctx = ssl.create_default_context(cafile=cluster["cluster"]["certificate-authority"])
    ctx.load_cert_chain(user["user"]["client-certificate"], user["user"]["client-key"])
    return httpx.AsyncClient(base_url=cluster["cluster"]["server"], verify=ctx, timeout=60)


async def main(namespace: str) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](1000)
    async with client_of_kubeconfig() as client, anyio.create_task_group() as tg:

        async def patcher(objects: anyio.abc.ObjectReceiveStream[dict[str, Any]]) -> None:
            async for obj in objects:
                name = obj["metadata"]["name"]
                body = {"status": {"create_fn": {"message": f"hello {name}"}}}
                headers = {"Content-Type": "application/merge-patch+json"}
                response = await client.patch(f"{url}/{name}/status", json=body, headers=headers)
                response.raise_for_status()

        for _ in range(16):
            tg.start_soon(patcher, receive.clone())
        receive.close()
        async with send:
            params = {"limit": "500"}
            while True:
                page = (await client.get(url, params=params)).json()
                for obj in page["items"]:
                    if "create_fn" not in (obj.get("status") or {}):
                        await send.send(obj)
                if not (token := page["metadata"].get("continue")):
                    break
                params["continue"] = token


def report() -> None:
    """``RAW <cpu seconds> <peak RSS MiB>`` on stderr (VmHWM: this program's, not its fork's)."""
    status = Path("/proc/self/status").read_text().splitlines()
    hwm = next(line for line in status if line.startswith("VmHWM"))
    print(f"RAW {time.process_time()} {int(hwm.split()[1]) / 1024}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("namespace")
    anyio.run(main, parser.parse_args().namespace)
    report()
