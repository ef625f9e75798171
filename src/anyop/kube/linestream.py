"""Reading a watch-stream: its events, and the lines of one streamed response.

:class:`LineStream` opens one watch request through the session pool and yields its lines as
they arrive; :class:`WatchEvent` is what a :class:`~anyop.kube.watch.Watcher` dispatches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import anyio
import httpx

from anyop.kube.client import Body
from anyop.kube.sessions import Request, Session, SessionPool, transport_error

__all__ = ["EventType", "Handler", "LineStream", "WatchEvent"]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
_CLOSE_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change of one object, as dispatched to the engine.

    Attributes:
        type: ``ADDED``, ``MODIFIED`` or ``DELETED``.
        object: The object's body (``metadata.managedFields`` stripped, unless the client keeps
            them).
        listed: The object comes from a (re)listing, not from the stream: it may be unchanged.
        synthetic: A ``DELETED`` made up after a relist, for an object that vanished while the
            watch was away; its body has only ``apiVersion``, ``kind`` and ``metadata`` (uid, name,
            namespace, last known resourceVersion).
    """

    type: EventType
    object: Body
    listed: bool = False
    synthetic: bool = False


Handler = Callable[[WatchEvent], Awaitable[None]]


class LineStream:
    """The lines of one streamed response, read without async generators of our own.

    ``async with LineStream(sessions, request, ...) as lines: line = await lines.next_line()``.
    An incomplete last line (a stream cut mid-object) is discarded, never returned.

    WARNING: httpx's body iterators are nested async generators; abandoning them mid-way leaves
    them to the garbage collector (Trio warns). So a stream is closed by cancelling a read of it,
    which ends every nested generator with the cancellation, and then closing the response.
    """

    def __init__(
        self,
        sessions: SessionPool,
        request: Request,
        *,
        timeout: httpx.Timeout,
        open_timeout: float,
    ) -> None:
        self._sessions = sessions
        self._request = request
        self._timeout = timeout
        self._open_timeout = open_timeout
        self._session: Session | None = None
        self._response: httpx.Response | None = None
        self._chunks: Any = None
        self._lines: list[bytes] = []
        self._tail: list[bytes] = []
        self._finished = False

    async def __aenter__(self) -> Self:
        """Send the request and wait for the answer's headers.

        Raises:
            ApiError: The server answered with an error status.
            TransportError: No answer within ``open_timeout``, or no connection at all.
        """
        self._session = session = await self._sessions.checkout()
        try:
            self._response = await self._open(session)
        except BaseException:
            await self._sessions.checkin(session)
            raise
        stream = self._response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        self._chunks = stream.__aiter__()
        return self

    async def _open(self, session: Session) -> httpx.Response:
        built = self._sessions.build(session, self._request, self._timeout)
        built.headers["Accept-Encoding"] = "identity"
        try:
            with anyio.fail_after(self._open_timeout):
                response = await session.http.send(built, stream=True)
        except TimeoutError as exc:
            what = f"No answer to the watch request within {self._open_timeout:g}s"
            raise transport_error(exc, what) from exc
        except httpx.HTTPError as exc:
            raise transport_error(exc, "The watch request failed") from exc
        if response.is_error:
            try:
                try:
                    content = await response.aread()
                except httpx.HTTPError:
                    content = b""  # the status alone is enough
                status, headers = response.status_code, response.headers
                raise await self._sessions.reject(session, status, headers=headers, content=content)
            finally:
                await _close_response(response)
        return response

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        line = await self.next_line()
        if line is None:
            raise StopAsyncIteration
        return line

    def buffered_line(self) -> bytes | None:
        """The next complete non-empty line if it has arrived already, else ``None``."""
        return self._lines.pop() if self._lines else None

    async def next_line(self) -> bytes | None:
        """The next complete non-empty line, or ``None`` at the end of the stream.

        Raises:
            TransportError: The connection broke or timed out.
        """
        while not self._lines:
            if self._finished:
                return None
            await self._read()
        return self._lines.pop()

    async def _read(self) -> None:
        try:
            chunk: bytes = await self._chunks.__anext__()
        except StopAsyncIteration:
            self._finished, self._tail = True, []  # an incomplete last line is dropped
            return
        except httpx.HTTPError as exc:
            self._finished = True
            raise transport_error(exc, "The watch-stream broke") from exc
        except BaseException:
            self._finished = True  # cancelled: the generators below have ended with it
            raise
        if b"\n" not in chunk:
            self._tail.append(chunk)
            return
        *lines, rest = b"".join([*self._tail, chunk]).split(b"\n")
        self._tail = [rest] if rest else []
        self._lines = [line for line in reversed(lines) if line.strip()]

    async def aclose(self) -> None:
        """Stop reading, close the response, and give the connection's session back."""
        if self._session is None or self._response is None:
            return
        session, response, self._session = self._session, self._response, None
        try:
            if not self._finished:
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    await self._drain()
        finally:
            await _close_response(response)
            await self._sessions.checkin(session)

    async def _drain(self) -> None:
        try:
            while True:
                await self._chunks.__anext__()
        except (StopAsyncIteration, httpx.HTTPError):
            pass


async def _close_response(response: httpx.Response) -> None:
    with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
        await response.aclose()
