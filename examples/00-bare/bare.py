"""A bare list-watch-patch loop on plain httpx: what an operator does, without a framework.

It greets every KopfExample in one namespace by patching ``status.greeting``. The demo used it
before anyop's engine existed; it stays as the floor that benchmarks compare anyop against.
Run: ``KUBECONFIG=... python bare.py NAMESPACE``.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml


def client_from_kubeconfig(path: str) -> httpx.AsyncClient:
    config = yaml.safe_load(Path(path).read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
    ctx.load_cert_chain(user["client-certificate"], user["client-key"])
    return httpx.AsyncClient(base_url=cluster["server"], verify=ctx, timeout=30)


async def greet(api: httpx.AsyncClient, url: str, obj: dict[str, Any]) -> None:
    name = obj["metadata"]["name"]
    if (obj.get("status") or {}).get("greeting"):
        return
    patch = {"status": {"greeting": f"hello, {name}"}}
    headers = {"Content-Type": "application/merge-patch+json"}
    response = await api.patch(f"{url}/{name}/status", content=json.dumps(patch), headers=headers)
    print(
        f"patched {name}: status.greeting={patch['status']['greeting']!r} "
        f"-> HTTP {response.status_code}",
        flush=True,
    )


async def main(namespace: str) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    kubeconfig = os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config"))
    async with client_from_kubeconfig(kubeconfig) as api:
        listing = (await api.get(url)).json()
        for obj in listing["items"]:
            await greet(api, url, obj)
        rv = listing["metadata"]["resourceVersion"]
        print(f"watching kopfexamples in {namespace} from resourceVersion {rv}", flush=True)
        while True:
            params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}
            async with api.stream("GET", url, params=params, timeout=None) as response:
                async for line in response.aiter_lines():
                    event = json.loads(line)
                    rv = event["object"]["metadata"]["resourceVersion"]
                    print(
                        f"event {event['type']} {event['object']['metadata'].get('name')}",
                        flush=True,
                    )
                    if event["type"] in ("ADDED", "MODIFIED"):
                        await greet(api, url, event["object"])


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "default")
    except KeyboardInterrupt:
        print("stopped.", flush=True)
