"""The ASGI app of webhook servers: bounded requests in, admission reviews out.

``POST {path}/{handler_id}`` runs that handler; ``POST {path}`` runs all matching ones. The
body must be JSON (``Content-Type: application/json``), at most ``max_body_size`` bytes (a larger
``Content-Length`` is refused with 413 before anything is read; a chunked body is cut off at the
limit), and it must arrive within ``body_timeout`` seconds (else 408). Bad reviews get the status
of their :class:`~anyop.webhooks.review.ReviewError`. None of this is logged as a traceback.

Memory: a body is held once, as the chunks that arrive and then as one bytes object (the chunks
go as soon as it is made; a refused body's at once); after a request with a large body, the
freed memory is given back to the system (:mod:`anyop.webhooks.memory`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import urllib.parse
from collections.abc import Mapping
from typing import Any

import anyio

from anyop.servers import Receive, Scope, Send, lifespan_ready
from anyop.webhooks.memory import release_freed_memory, trims_after
from anyop.webhooks.review import ReviewError, WebhookFn, decode_review
from anyop.webhooks.tls import current_sslpeer

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_CONCURRENCY",
    "AdmissionApp",
    "HTTPError",
]

logger = logging.getLogger("anyop.webhooks")

DEFAULT_MAX_BODY_SIZE = 7 * 1024 * 1024
"""Bytes: an object and its old version, each up to the API server's 3 MiB, plus the review."""

DEFAULT_BODY_TIMEOUT = 10.0
"""Seconds a client may take to send a whole request body."""

DEFAULT_MAX_CONCURRENCY = 64
"""Requests read and reviewed at once by one server."""

DRAIN_FACTOR = 4
"""After refusing a body, up to this many times the size limit is read and dropped."""


class HTTPError(Exception):
    """An HTTP error answer with a plain-text message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AdmissionApp:
    """An ASGI app that hands admission reviews to a :class:`~anyop.webhooks.review.WebhookFn`.

    Args:
        fn: Runs the handlers for a review and returns the response review.
        path: The root path; handler ids follow it as the last path components.
        max_body_size: The largest accepted body, in bytes.
        body_timeout: Seconds a client may take to send the body.
        max_concurrency: How many requests are read and reviewed at once; more get 503 at once
            (so memory stays bounded by this many bodies, whatever the clients do).
    """

    def __init__(
        self,
        fn: WebhookFn,
        *,
        path: str = "",
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        self.fn = fn
        self.path = "/" + path.strip("/") if path.strip("/") else ""
        self.max_body_size = max_body_size
        self.body_timeout = body_timeout
        self.limiter = anyio.CapacityLimiter(max_concurrency)
        self._trim_next = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan_ready(receive, send)
            return
        if scope["type"] != "http":
            return
        body = _Body(receive)
        try:
            status, answer = 200, await self._limited(scope, body)
        except (HTTPError, ReviewError) as e:
            status, answer = e.status, {"error": str(e)}
            what = "Webhook request" if isinstance(e, HTTPError) else "Bad admission review"
            logger.warning("%s refused with %d: %s", what, e.status, e)
        except Exception as e:  # e.g. a filter callback failed: a bug to see, not a crash
            status, answer = 500, {"error": f"The review failed: {e!r:.500}"}
            logger.exception("An admission review failed unexpectedly.")
        await _respond(send, status, answer, more=not body.finished)
        if not body.finished:
            # The answer is out, but the response is left open: ending it now would close the
            # connection while the client still sends, which breaks TLS's close_notify (an
            # SSLError with a traceback in Hypercorn's logs). So let the unwanted rest arrive,
            # boundedly, and drop it.
            with anyio.move_on_after(self.body_timeout):
                await body.drain(limit=DRAIN_FACTOR * self.max_body_size)
            await send({"type": "http.response.body", "body": b""})
        trim, self._trim_next = trims_after(body.received, armed=self._trim_next)
        if trim:
            release_freed_memory()  # the body, its JSON and its chunks are all freed by now

    async def _limited(self, scope: Scope, body: _Body) -> dict[str, Any]:
        # Asked first, not caught: AnyIO before 4.14 lets Trio's own WouldBlock through here.
        if self.limiter.available_tokens < 1:
            raise HTTPError(503, "Too many concurrent requests; try again.")
        self.limiter.acquire_nowait()
        try:
            return await self._answer(scope, body)
        finally:
            self.limiter.release()

    async def _answer(self, scope: Scope, body: _Body) -> dict[str, Any]:
        if scope["method"] != "POST":
            raise HTTPError(405, f"Only POST is served, not {scope['method']}.")
        webhook = self._webhook_id(scope["path"])
        headers = _headers(scope)
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HTTPError(415, f"Content-Type must be application/json, not {content_type!r}.")
        # No name holds the raw bytes: they go once decoded, before the handlers run.
        payload = decode_review(await self._read_body(headers, body))
        return await self.fn(
            payload, webhook=webhook, headers=headers, sslpeer=current_sslpeer.get()
        )

    def _webhook_id(self, path: str) -> str | None:
        if path != self.path and not path.startswith(self.path + "/"):
            raise HTTPError(404, f"No webhooks at {path!r}; they are under {self.path or '/'!r}.")
        rest = urllib.parse.unquote(path[len(self.path) :].strip("/"))
        return rest or None

    async def _read_body(self, headers: Mapping[str, str], body: _Body) -> bytes:
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_size):
            raise HTTPError(413, f"The body is larger than {self.max_body_size} bytes.")
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout):
            while not body.finished:
                chunk = await body.receive()
                size += len(chunk)
                if size > self.max_body_size:
                    chunks.clear()  # not kept while the refusal is answered and the rest drained
                    raise HTTPError(413, f"The body is larger than {self.max_body_size} bytes.")
                chunks.append(chunk)
            return _joined(chunks)
        chunks.clear()
        raise HTTPError(408, f"The body did not arrive within {self.body_timeout} seconds.")


def _joined(chunks: list[bytes]) -> bytes:
    """The chunks as one bytes object, emptying the list (a lone chunk is not copied)."""
    joined = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    chunks.clear()
    return joined


class _Body:
    """A request body arriving in chunks; remembers whether all of it has arrived."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.finished = False
        self.received = 0

    async def receive(self) -> bytes:
        """The next chunk (the last one sets :attr:`finished`).

        Raises:
            HTTPError: The client disconnected.
        """
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.finished = True
            raise HTTPError(400, "The client disconnected before sending the whole body.")
        self.finished = not message.get("more_body", False)
        chunk = message.get("body", b"")
        chunk = chunk if type(chunk) is bytes else bytes(chunk)
        self.received += len(chunk)
        return chunk

    async def drain(self, *, limit: int) -> None:
        """Receive and drop the rest, up to ``limit`` bytes."""
        dropped = 0
        with contextlib.suppress(HTTPError):
            while not self.finished and dropped <= limit:
                dropped += len(await self.receive())


def _headers(scope: Scope) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", ())
    }


async def _respond(send: Send, status: int, answer: Mapping[str, Any], *, more: bool) -> None:
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status >= 400:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": more})
