"""The webhook server under garbage: answers, tracebacks, memory and a clean stop, per backend.

``python -m bench.webhook_bad_input [--rounds 84] [--backend asyncio|trio] [--json]``

Serves one validating handler on a generated certificate (the default 7 MiB body limit). The
handler allows a review whose spec has ``a: 1`` and denies any other with
``AdmissionError("bad spec")``, the documented way to deny. Each round sends twelve garbage
requests (random bytes, truncated JSON, an empty body, a 5 000-deep array, a review whose
``object`` is a string, one whose ``spec`` is a list, a wrong apiVersion, no uid, a wrong
Content-Type, a 2 MB spec, a declared 8 MiB body of which 1 byte is sent, an 8 MiB chunked
body) and two valid reviews (one to allow, one to deny). The same server also converts
KopfExamples between v1alpha1 and v1 (``@on.convert``, at ``convert/kopfexamples.kopf.dev``):
each round sends it six bad conversion requests (an AdmissionReview, no uid, objects that are
not a list, an unknown target version, an object of another kind, an unknown CRD) and two valid
ConversionReviews (one converted, one refused by the function). At the end, eight requests are
left half-sent and open while the server is stopped.

Reports: the statuses seen per kind; tracebacks (log records of ERROR or above that carry
``exc_info``, the asyncio loop's own reports included); 5xx answers; wrong answers to the valid
reviews (not 200, another uid or apiVersion, the wrong verdict or message); the growth of the
process's RSS (from /proc/self/statm) between the first round and the last; and whether the
server stopped without an error. The exit code is 1 if it did not. The client runs in the same
process: after each round's garbage it collects its own reference cycles (httpx keeps request
bodies in them), as a client in another process would free its memory by itself.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import json
import logging
import os
import random
import ssl
import sys
import tempfile
import tracemalloc
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx

import anyop
from anyop.engine.operator.admission_reviews import Reviewer
from anyop.engine.operator.conversion_reviews import Converter, WebhookRouter
from anyop.kube.resources import Resource
from anyop.webhooks.conversion_routes import plan_routes
from anyop.webhooks.managed import WebhookClientConfig

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
HALF_SENT_LEFT_OPEN = 8
JSON_HEADERS = {"content-type": "application/json"}


def rss_mib() -> float:
    """The resident set size of this process, in MiB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class Records(logging.Handler):
    """Counts the log records of ERROR and above, and those with a traceback among them."""

    def __init__(self) -> None:
        """Start with no records."""
        super().__init__(logging.ERROR)
        self.errors: list[str] = []
        self.tracebacks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record's message, and note whether it carries a traceback."""
        message = f"{record.name}: {record.getMessage()}"
        self.errors.append(message)
        if record.exc_info:
            self.tracebacks.append(message)


@dataclass
class Tally:
    """What the requests met."""

    rounds: int
    statuses: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    garbage: int = 0
    valid: int = 0
    wrong: list[str] = field(default_factory=list)

    def count(self, kind: str, status: int | str) -> None:
        """Count one answer (or a transport error's name) to a request of this kind."""
        self.statuses[kind, str(status)] += 1

    @property
    def server_errors(self) -> int:
        """How many answers were 5xx."""
        return sum(n for (_, s), n in self.statuses.items() if s.isdigit() and int(s) >= 500)


def review(uid: str | None = "u", **changes: Any) -> dict[str, Any]:
    """An AdmissionReview (v1) about a KopfExample; ``changes`` replace its request's fields."""
    request = {
        "uid": uid,
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "x"}, "spec": {"a": 1}},
        **changes,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def check(handler_id: str) -> Callable[..., None]:
    """The validating handler: allow ``spec.a == 1``, deny anything else as a user would."""

    def validate(spec: Any, **_: Any) -> None:
        if spec.get("a") != 1:
            raise anyop.AdmissionError("bad spec")

    validate.__name__ = handler_id
    return validate


def garbage(rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """One round of garbage requests for httpx: (kind, keyword arguments of ``post``)."""
    truncated = json.dumps(review()).encode()
    wrong_version = review()
    wrong_version["apiVersion"] = "admission.k8s.io/v2"
    return [
        ("random bytes", {"content": rng.randbytes(512), "headers": JSON_HEADERS}),
        ("truncated json", {"content": truncated[: len(truncated) // 2], "headers": JSON_HEADERS}),
        ("empty body", {"content": b"", "headers": JSON_HEADERS}),
        ("5000-deep", {"content": b"[" * 5000 + b"]" * 5000, "headers": JSON_HEADERS}),
        ("object a string", {"json": review(object="not an object")}),
        ("spec a list", {"json": review(object={"metadata": {"name": "x"}, "spec": [1, 2]})}),
        ("wrong apiVersion", {"json": wrong_version}),
        ("no uid", {"json": review(None)}),
        ("text/plain", {"content": json.dumps(review()).encode()}),
        ("2 MB spec", {"json": review(object={"spec": {"a": 1, "blob": "x" * 2_000_000}})}),
        ("chunked 8 MiB", {"content": chunks(), "headers": JSON_HEADERS}),
    ]


async def chunks() -> AsyncIterator[bytes]:
    """8 MiB in 64 KiB chunks, sent without a Content-Length."""
    for _ in range(128):
        yield b" " * 65536


async def connect(url: str, ctx: ssl.SSLContext) -> anyio.abc.ByteStream:
    """A TLS connection to the server of ``url``, for requests that httpx would not send."""
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    return await anyio.connect_tcp(
        host, int(port), tls=True, ssl_context=ctx, tls_standard_compatible=False
    )


async def half_sent(url: str, ctx: ssl.SSLContext, *, declared: int) -> anyio.abc.ByteStream:
    """Send a request head declaring ``declared`` bytes and one byte of the body; keep it open."""
    stream = await connect(url, ctx)
    head = b"POST /v HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    await stream.send(head + b"Content-Length: %d\r\n\r\n{" % declared)
    return stream


async def answer_status(stream: anyio.abc.ByteStream) -> str:
    """The status code of the answer on ``stream``, or ``nothing`` if it closed without one."""
    answer = b""
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
        while b"\r\n" not in answer:
            answer += await stream.receive()
    return answer.split(b" ")[1].decode() if answer else "nothing"


async def valid(client: httpx.AsyncClient, url: str, tally: Tally) -> None:
    """Send a review to allow and one to deny; note every wrong answer."""
    for uid, spec, allowed in (("allow-me", {"a": 1}, True), ("deny-me", {"a": 2}, False)):
        sent = review(uid, object={"metadata": {"name": "x"}, "spec": spec})
        tally.valid += 1
        response = await client.post(url, json=sent)
        tally.count("valid " + uid, response.status_code)
        got = response.json() if response.status_code == 200 else {}
        answer = got.get("response", {})
        expected_message = None if allowed else "bad spec"
        if (
            got.get("apiVersion") != sent["apiVersion"]
            or answer.get("uid") != uid
            or answer.get("allowed") is not allowed
            or (answer.get("status") or {}).get("message") != expected_message
        ):
            tally.wrong.append(f"{uid}: {response.status_code} {response.text[:200]}")


def conversion_review(uid: str | None = "c", **changes: Any) -> dict[str, Any]:
    """A ConversionReview (v1) of a KopfExample to v1; ``changes`` replace its request's fields."""
    item = {
        "apiVersion": "kopf.dev/v1alpha1",
        "kind": "KopfExample",
        "metadata": {"name": "x", "uid": "x-1"},
        "spec": {"a": 1},
    }
    request = {"uid": uid, "desiredAPIVersion": "kopf.dev/v1", "objects": [item], **changes}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}


def convert_up(spec: Any, **_: Any) -> None:
    """v1alpha1 -> v1: ``a`` becomes ``b``; ``a: 2`` is refused as a user would."""
    if spec.get("a") != 1:
        raise anyop.PermanentError("bad spec")
    spec["b"] = spec.pop("a")


def convert_down(spec: Any, **_: Any) -> None:
    """v1 -> v1alpha1: ``b`` becomes ``a``."""
    spec["a"] = spec.pop("b", None)


def conversion_garbage() -> list[tuple[str, str, dict[str, Any]]]:
    """One round of bad conversion requests: (kind, path after the root, ``post`` kwargs)."""
    crd = "convert/kopfexamples.kopf.dev"
    wrong_kind = conversion_review(objects=[{"apiVersion": "kopf.dev/v1alpha1", "kind": "Pod"}])
    return [
        ("conv: an AdmissionReview", crd, {"json": review()}),
        ("conv: no uid", crd, {"json": conversion_review(None)}),
        ("conv: objects a dict", crd, {"json": conversion_review(objects={"a": 1})}),
        (
            "conv: unknown version",
            crd,
            {"json": conversion_review(desiredAPIVersion="kopf.dev/v9")},
        ),
        ("conv: wrong kind", crd, {"json": wrong_kind}),
        ("conv: unknown CRD", "convert/nothing.example.dev", {"json": conversion_review()}),
    ]


async def conversions(client: httpx.AsyncClient, url: str, tally: Tally) -> None:
    """Send the bad conversion requests and two valid ones (one converted, one refused)."""
    root = url.rsplit("/", 1)[0]
    for kind, path, kwargs in conversion_garbage():
        tally.garbage += 1
        response = await client.post(f"{root}/{path}", **kwargs)
        result = response.json().get("response", {}).get("result", {}).get("status", "")
        tally.count(kind, f"{response.status_code} {result}".strip())
    for uid, spec, expected in (("convert-me", {"a": 1}, {"b": 1}), ("refuse-me", {"a": 2}, None)):
        tally.valid += 1
        sent = conversion_review(uid)
        sent["request"]["objects"][0]["spec"] = spec
        response = await client.post(f"{root}/convert/kopfexamples.kopf.dev", json=sent)
        answer = response.json().get("response", {}) if response.status_code == 200 else {}
        tally.count(
            "valid " + uid, f"{response.status_code} {answer.get('result', {}).get('status')}"
        )
        converted = [item.get("spec") for item in answer.get("convertedObjects", [])]
        if answer.get("uid") != uid or converted != ([expected] if expected else []):
            tally.wrong.append(f"{uid}: {response.status_code} {response.text[:200]}")


async def one_round(
    client: httpx.AsyncClient, url: str, tally: Tally, *, ctx: ssl.SSLContext, rng: random.Random
) -> None:
    """Send one round of garbage and the two valid reviews."""
    for kind, kwargs in garbage(rng):
        tally.garbage += 1
        try:
            response = await client.post(url, **kwargs)
            tally.count(kind, response.status_code)
        except httpx.TransportError as e:
            tally.count(kind, type(e).__name__)
    # httpx keeps each request's body in a reference cycle: the 2 MB one lives until a full
    # collection. A client in another process (the API server) frees its own, so this one does
    # too, before the next request: the RSS then is the server's.
    gc.collect()
    tally.garbage += 1
    async with await half_sent(url, ctx, declared=8 * 2**20) as stream:
        tally.count("declared 8 MiB, sent 1 B", await answer_status(stream))
    await valid(client, url, tally)
    await conversions(client, url, tally)


async def send_all(url: str, cadump: Path, figures: dict[str, Any], *, tally: Tally) -> None:
    """Send the rounds, noting the RSS after the first and the last."""
    ctx = ssl.create_default_context(cafile=str(cadump))
    rng = random.Random(34)
    async with httpx.AsyncClient(verify=ctx, timeout=30) as client:
        for index in range(tally.rounds):
            await one_round(client, url, tally, ctx=ctx, rng=rng)
            if index in (0, tally.rounds - 1):
                gc.collect()
                when = "first" if index == 0 else "last"
                figures[f"rss_{when}_round_mib"] = rss_mib()
                figures[f"heap_{when}_round_mib"] = tracemalloc.get_traced_memory()[0] / 2**20


async def serve_and_send(tally: Tally, records: Records) -> dict[str, Any]:
    """Serve the handler, send the rounds, stop the server with half-sent requests open."""
    registry = anyop.OperatorRegistry()
    anyop.on.validate("kopfexamples", registry=registry, id="check")(check("check"))
    reviewer = Reviewer(registry, anyop.OperatorSettings(), [KEX], new_memo=dict)
    anyop.on.convert("kopfexamples", from_="v1alpha1", to="v1", registry=registry)(convert_up)
    anyop.on.convert("kopfexamples", from_="v1", to="v1alpha1", registry=registry)(convert_down)
    steps = registry.webhooks.conversions
    routes = plan_routes(
        "kopfexamples.kopf.dev",
        group="kopf.dev",
        kind="KopfExample",
        versions=["v1alpha1", "v1"],
        steps=steps,
    )
    converter = Converter({routes.crd: routes}, anyop.OperatorSettings())
    router = WebhookRouter(reviewer, converter)  # the server's fn: admission and conversions
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        cadump = Path(folder) / "ca.pem"
        server = anyop.WebhookServer(addr="127.0.0.1", port=0, cadump=cadump)
        send, receive = anyio.create_memory_object_stream[WebhookClientConfig](1)

        async def pump() -> None:
            configs = server(router)
            async with send, contextlib.aclosing(configs):
                async for config in configs:
                    await send.send(config)

        left_open = contextlib.AsyncExitStack()
        async with receive, left_open, anyio.create_task_group() as tg:
            tg.start_soon(pump)
            url = (await receive.receive())["url"] + "/check"
            await send_all(url, cadump, figures, tally=tally)
            ctx = ssl.create_default_context(cafile=str(cadump))
            for _ in range(HALF_SENT_LEFT_OPEN):
                await left_open.enter_async_context(await half_sent(url, ctx, declared=1000))
                tally.garbage += 1
            await anyio.wait_all_tasks_blocked()
            figures["errors_before_stop"] = len(records.errors)
            figures["tracebacks_before_stop"] = len(records.tracebacks)
            tg.cancel_scope.cancel()  # the stop, as at an operator's exit
    return figures


def run(rounds: int, backend: str) -> dict[str, Any]:
    """Run the bench on ``backend``; return its figures (see the module's docstring)."""
    records, tally = Records(), Tally(rounds)
    logging.getLogger().addHandler(records)
    try:
        try:
            figures = anyio.run(serve_and_send, tally, records, backend=backend)
            stop_error = None
        except Exception as e:  # the figure: did the stop fail, and how
            figures, stop_error = {}, repr(e)
        gc.collect()  # the loop's "never retrieved" reports come when their futures go
    finally:
        logging.getLogger().removeHandler(records)
    first, last = figures.get("rss_first_round_mib", 0.0), figures.get("rss_last_round_mib", 0.0)
    at_stop = figures.get("errors_before_stop", 0)
    denials = [m for m in records.errors if m.endswith("failed permanently: bad spec")]
    return {
        "backend": backend,
        "rounds": rounds,
        "garbage_requests": tally.garbage,
        "valid_reviews": tally.valid,
        "tracebacks": len(records.tracebacks),
        "tracebacks_at_stop": len(records.tracebacks) - figures.get("tracebacks_before_stop", 0),
        "denials_logged": len(denials),
        "other_errors_logged": len(records.errors) - len(denials),
        "server_errors_5xx": tally.server_errors,
        "wrong_answers": len(tally.wrong),
        "rss_growth_mib": round(last - first, 1),
        "heap_growth_mib": (
            round(figures["heap_last_round_mib"] - figures["heap_first_round_mib"], 2)
            if tracemalloc.is_tracing() and figures
            else None
        ),
        "rss_mib": round(last, 1),
        "clean_stop": stop_error is None and len(records.errors) == at_stop,
        "stop_error": stop_error,
        "statuses": {
            f"{kind}: {status}": n for (kind, status), n in sorted(tally.statuses.items())
        },
        "examples": [m[:300] for m in records.tracebacks + tally.wrong][:5],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the bench from the command line; exit 1 if the server did not stop cleanly."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=84, help="84 rounds: 1,520 bad requests")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    parser.add_argument(
        "--heap", action="store_true", help="also trace Python's own heap (slower): is RSS a leak?"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    logging.getLogger("anyop").setLevel(logging.ERROR)  # the 4xx warnings are the expected ones
    if args.heap:
        tracemalloc.start()
    result = run(args.rounds, args.backend)
    if args.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            if name == "statuses":
                for kind, count in value.items():
                    print(f"  {kind} x{count}")
            else:
                print(f"{name}: {value}")
    return 0 if result["clean_stop"] else 1


if __name__ == "__main__":
    sys.exit(main())
