"""An httpx transport that answers from a FakeCluster in-process, without sockets.

Give it to anyop's client (``transport_factory``) or to any ``httpx.AsyncClient``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from urllib.parse import parse_qsl

import anyio
import anyio.lowlevel
import httpx

from anyop.testing.fake.api import ApiRequest, ApiResponse
from anyop.testing.fake.faults import ConnectionDropped

__all__ = ["FakeTransport", "api_request_of"]

Responder = Callable[[ApiRequest], Awaitable["ApiResponse | AsyncIterator[bytes]"]]
"""Answers one request: a whole response, or a watch's lines; raises
:class:`~anyop.testing.fake.faults.ConnectionDropped` to cut the connection."""


def api_request_of(
    method: str,
    target: httpx.URL,
    *,
    content_type: str,
    body: bytes,
    user_agent: str = "",
    accept: str = "",
    if_none_match: str = "",
) -> ApiRequest:
    """The API request of an HTTP request (the first value of each query parameter)."""
    query: dict[str, str] = {}
    if raw := target.query:
        # What httpx's own ``URL.params`` gives (``parse_qs``, blanks kept), at a fifth of the
        # cost: the fake's fixed cost per request is mostly the transport's. Without an escape
        # (``%``, ``+``), its pairs are the text's own.
        text = raw.decode("ascii")
        if "%" in text or "+" in text:
            pairs: Iterable[tuple[str, str]] = parse_qsl(text, keep_blank_values=True)
        else:
            pairs = (_pair(part) for part in text.split("&") if part)
        for key, value in pairs:
            query.setdefault(key, value)
    kind = content_type.split(";")[0].strip()
    return ApiRequest(
        method,
        target.path,
        query,
        kind,
        body,
        user_agent=user_agent,
        accept=accept,
        if_none_match=if_none_match,
    )


def _pair(part: str) -> tuple[str, str]:
    name, _, value = part.partition("=")
    return name, value


class _Body(httpx.AsyncByteStream):
    def __init__(self, lines: AsyncIterator[bytes]) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The lines' own iterator, not an async generator: one abandoned midway leaves nothing
        # for Trio to finalize.
        return self._lines

    async def aclose(self) -> None:
        close = getattr(self._lines, "aclose", None)
        if close is not None:
            await close()


class FakeTransport(httpx.AsyncBaseTransport):
    """Send httpx requests to a fake API in the same process.

    Args:
        respond: Answers one request: a whole response, or the lines of a watch (see
            :meth:`FakeCluster.respond <anyop.testing.fake.cluster.FakeCluster.respond>`).

    Guarantees:
        Every request passes a checkpoint, so other tasks run and cancellation is seen even
        when all requests are answered at once.
    """

    def __init__(self, respond: Responder) -> None:
        self._respond = respond

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Answer a request from the fake API."""
        body = await request.aread()
        await anyio.lowlevel.checkpoint()
        read = _headers_of(request)
        api_request = api_request_of(
            request.method,
            request.url,
            content_type=read.get(b"content-type", "application/json"),
            body=body,
            user_agent=read.get(b"user-agent", ""),
            accept=read.get(b"accept", ""),
            if_none_match=read.get(b"if-none-match", ""),
        )
        try:
            answer = await self._respond(api_request)
        except ConnectionDropped:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        if isinstance(answer, ApiResponse):
            # As a network transport gives httpx a response: a stream that the client reads, and
            # every header set here (``content=`` would read it at once, at 8x the cost).
            content, head = answer.encoded()
            return httpx.Response(answer.status, headers=head, stream=httpx.ByteStream(content))
        chunked = {"content-type": "application/json", "transfer-encoding": "chunked"}
        return httpx.Response(200, headers=chunked, stream=_Body(answer))


_WANTED = (b"content-type", b"user-agent", b"accept", b"if-none-match")


def _headers_of(request: httpx.Request) -> dict[bytes, str]:
    """The request's headers that the fake reads, in one pass (a repeated one's values joined
    by commas, as ``httpx.Headers.get`` gives them)."""
    found: dict[bytes, str] = {}
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered in _WANTED:
            text = value.decode("latin-1")
            found[lowered] = f"{found[lowered]}, {text}" if lowered in found else text
    return found
