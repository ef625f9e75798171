"""Memory and answers of the webhook server under a stream of bad and good requests.

``python -m bench.webhook_bad_input [--rounds 200] [--backend asyncio|trio]``

Serves one validating handler on a generated certificate (the default 7 MiB body limit), then
sends rounds of: a declared 8 MiB body of which 1 byte is sent, the same with all 8 MiB sent, an
8 MiB chunked body, non-JSON, a 5 000-deep array, a review without a uid, and one valid review.
Reports the statuses seen and the process's RSS before and after (from /proc/self/statm).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import ssl
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx

import anyop
from anyop.engine.operator.admission_reviews import Reviewer
from anyop.kube.resources import Resource
from anyop.webhooks.managed import WebhookClientConfig

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)


def rss_mib() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def review(uid: str | None = "u") -> dict[str, Any]:
    request = {
        "uid": uid,
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "x"}, "spec": {"a": 1}},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def chunks() -> AsyncIterator[bytes]:
    for _ in range(128):
        yield b" " * 65536


async def declared(url: str, ctx: ssl.SSLContext, body: bytes) -> str:
    """Declare 8 MiB, send ``body`` (all or a little of it), return the answer's status."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    head = b"POST /v HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: 8388608\r\n\r\n"
    stream = await anyio.connect_tcp(
        host, int(port), tls=True, ssl_context=ctx, tls_standard_compatible=False
    )
    async with stream:
        with contextlib.suppress(anyio.BrokenResourceError):
            await stream.send(head + body)
        answer = b""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            while b"\r\n" not in answer:
                answer += await stream.receive()
    return answer.split(b" ")[1].decode() if answer else "nothing"


async def one_round(
    client: httpx.AsyncClient, url: str, statuses: collections.Counter[Any], ctx: ssl.SSLContext
) -> None:
    statuses["declared 8 MiB, sent 1 B", await declared(url, ctx, b"{")] += 1
    statuses["declared 8 MiB, sent all", await declared(url, ctx, b" " * 8388608)] += 1
    json_headers = {"content-type": "application/json"}
    cases: list[tuple[str, Any]] = [
        ("chunked 8 MiB", {"content": chunks(), "headers": json_headers}),
        ("not json", {"content": b"{nope", "headers": json_headers}),
        ("5000-deep", {"content": b"[" * 5000 + b"]" * 5000, "headers": json_headers}),
        ("no uid", {"json": review(None)}),
        ("valid", {"json": review()}),
    ]
    for name, kwargs in cases:
        try:
            response = await client.post(url, **kwargs)
            statuses[name, response.status_code] += 1
        except httpx.TransportError as e:
            statuses[name, type(e).__name__] += 1


async def main(rounds: int) -> None:
    registry = anyop.OperatorRegistry()
    anyop.on.validate("kopfexamples", registry=registry, id="v")(lambda **_: None)
    reviewer = Reviewer(registry, anyop.OperatorSettings(), [KEX], new_memo=dict)
    with tempfile.TemporaryDirectory() as folder:
        cadump = Path(folder) / "ca.pem"
        server = anyop.WebhookServer(addr="127.0.0.1", port=0, cadump=cadump)
        send, receive = anyio.create_memory_object_stream[WebhookClientConfig](1)

        async def pump() -> None:
            async with send, contextlib.aclosing(server(reviewer)) as configs:
                async for config in configs:
                    await send.send(config)

        async with receive, anyio.create_task_group() as tg:
            tg.start_soon(pump)
            url = (await receive.receive())["url"] + "/v"
            ctx = ssl.create_default_context(cafile=str(cadump))
            statuses: collections.Counter[Any] = collections.Counter()
            async with httpx.AsyncClient(verify=ctx, timeout=10) as client:
                await one_round(client, url, statuses, ctx)
                before = rss_mib()
                for _ in range(rounds):
                    await one_round(client, url, statuses, ctx)
                after = rss_mib()
            tg.cancel_scope.cancel()
    for key, count in sorted(statuses.items(), key=str):
        print(f"{key[0]:>16}: {key[1]} x{count}")
    print(f"RSS after 1 round: {before:.1f} MiB; after {rounds} more: {after:.1f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    anyio.run(main, args.rounds, backend=args.backend)
