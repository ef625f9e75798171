"""List-then-watch that never goes blind: pagination, bookmarks, relists, inactivity deadlines.

A :class:`Watcher` keeps one resource (in one namespace, or cluster-wide) mirrored into the
engine's ``handle`` callback. Its loop is the state machine of :mod:`anyop.kube.watchstate`: this
module only does the I/O of each phase, and reads the stream with :class:`LineStream`.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NoReturn, Self

import anyio
import anyio.abc
import httpx

from anyop.errors import AnyopError, LoginError
from anyop.kube.client import PAGE_SIZE, Body, KubeClient, ListOptions
from anyop.kube.resources import Resource
from anyop.kube.sessions import (
    Request,
    Session,
    SessionPool,
    strip_managed_fields,
    transport_error,
)
from anyop.kube.watchstate import (
    Ended,
    Expired,
    Failed,
    Listed,
    Outcome,
    Phase,
    Stalled,
    Waited,
    WatchPolicy,
    WatchState,
    advance,
    outcome_of_error,
    outcome_of_status,
)
from anyop.settings import OperatorSettings

__all__ = ["Handler", "LineStream", "WatchEvent", "Watcher"]

logger = logging.getLogger("anyop.kube")

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
_SERVER_TIMEOUTS = (240, 290)  # a random timeoutSeconds in this range spreads reconnects out
_READ_MARGIN = 30.0  # the client's read timeout is timeoutSeconds plus this
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
                raise await self._sessions.reject(session, response)
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


class Watcher:
    """Lists and then watches one resource forever, dispatching every change to ``handle``.

    Args:
        client: The API client.
        resource: What to watch; it must support ``list`` and ``watch``.
        namespace: One namespace, or ``None`` for the whole cluster.
        label_selector: Evaluated by the server: other objects never reach memory.
        field_selector: Evaluated by the server.
        settings: ``settings.watching`` gives the server timeout, the client's hard limit per
            stream, the inactivity deadline and the reconnect pause.
        policy: The timing rules, when they should differ from those of ``settings``.
        page_size: The ``limit`` of each list page.

    Guarantees:
        * ``run`` reports ``started`` only after every object of the initial listing has been
          dispatched (as a listed ``ADDED``): then the engine's view is synced.
        * It never ends by itself: every error is classified and followed by a re-watch from the
          last resourceVersion, a relist, or a backoff; only cancellation stops it.
        * Bookmarks advance the resourceVersion and are never dispatched.
        * After a relist, objects that vanished meanwhile get a synthetic ``DELETED``. Memory per
          object is its uid, name, namespace and resourceVersion, never its body.
        * ``state`` is always a consistent snapshot, for probes and metrics.

    Caveats:
        * After a relist every existing object comes again as a listed ``ADDED``, changed or
          not: the engine compares resourceVersions or contents.
        * An exception from ``handle`` is a bug in the engine: it is logged with its traceback
          and the watch goes on. ``handle`` should be quick (queue the work, don't do it).
        * Objects whose event arrived but whose dispatch was interrupted by cancellation are not
          redelivered by this instance: a new watcher starts with a fresh listing.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        settings: OperatorSettings | None = None,
        policy: WatchPolicy | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.settings = settings or client.settings
        self.state = WatchState()
        self._path = resource.get_url(namespace=namespace)  # fails early if it makes no sense
        self._selectors = {"labelSelector": label_selector, "fieldSelector": field_selector}
        self._list_options = ListOptions(
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
        )
        reconnect = self.settings.watching.reconnect_backoff
        self._policy = policy or WatchPolicy(reconnect_pause=reconnect)
        self._known: dict[str, tuple[str | None, str, str]] = {}  # uid -> (namespace, name, rv)

    def __repr__(self) -> str:
        where = f" in {self.namespace!r}" if self.namespace else ""
        return f"<Watcher {self.resource!r}{where} {self.state.phase.value}>"

    async def run(
        self,
        handle: Handler,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> NoReturn:
        """List, then watch, forever; dispatch every change to ``handle``.

        Args:
            handle: Called with every :class:`WatchEvent`, one at a time, in order.
            task_status: Reported ``started`` once the initial listing has been dispatched.
        """
        ready = False
        while True:
            if self.state.delay > 0:
                await anyio.sleep(self.state.delay)
            outcome = await self._step(self.state.phase, handle)
            self.state = advance(self.state, outcome, policy=self._policy, rand=random.random())
            self._report(outcome)
            if self.state.synced and not ready:
                ready = True
                task_status.started()

    async def _step(self, phase: Phase, handle: Handler) -> Outcome:
        try:
            match phase:
                case Phase.LISTING | Phase.RELISTING:
                    return await self._list(handle)
                case Phase.WATCHING:
                    return await self._watch(handle)
                case Phase.BACKING_OFF:
                    return Waited()
        except LoginError:
            raise  # the vault is closed: no request can succeed, the operator must fail
        except AnyopError as exc:
            return outcome_of_error(exc)
        except Exception as exc:  # a surprise must not end the watch: report it and go on
            logger.exception("Watch-stream for %r failed unexpectedly.", self.resource)
            return Failed(f"{type(exc).__name__}: {exc}")

    def _report(self, outcome: Outcome) -> None:
        match outcome:
            case Stalled():
                logger.warning("Watch-stream for %r is inactive, reconnecting.", self.resource)
            case Expired(reason):
                logger.info("Watch-stream for %r expired, relisting: %s", self.resource, reason)
            case Failed(error):
                delay = self.state.delay
                logger.warning(
                    "Watch-stream for %r failed; retrying in %.1fs: %s", self.resource, delay, error
                )

    # -- listing --------------------------------------------------------------------------------

    async def _list(self, handle: Handler) -> Listed:
        fresh: set[str] = set()
        version = ""
        async for page in self.client.list_pages(self.resource, **self._list_options):
            if page.restarted:
                fresh.clear()
            for body in page.items:
                fresh.add(self._remember(body))
                await self._dispatch(handle, WatchEvent("ADDED", body, listed=True))
            version = page.resource_version
            self.state = self.state.listed(anyio.current_time())
        for uid in [uid for uid in self._known if uid not in fresh]:
            await self._dispatch(handle, WatchEvent("DELETED", self._forget(uid), synthetic=True))
        return Listed(version)

    def _remember(self, body: Body) -> str:
        metadata = body.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        name, namespace = str(metadata.get("name") or ""), metadata.get("namespace")
        self._known[uid] = (namespace, name, str(metadata.get("resourceVersion") or ""))
        return uid

    def _forget(self, uid: str) -> Body:
        """Drop a vanished object; return the last known metadata as its tombstone."""
        namespace, name, version = self._known.pop(uid)
        metadata = {"uid": uid, "name": name, "resourceVersion": version}
        metadata |= {"namespace": namespace} if namespace else {}
        kind = {"kind": self.resource.kind} if self.resource.kind else {}
        return {"apiVersion": self.resource.api_version, **kind, "metadata": metadata}

    async def _dispatch(self, handle: Handler, event: WatchEvent) -> None:
        try:
            await handle(event)
        except Exception:
            logger.exception(
                "The handler of %r failed on a %s event; continuing.", self.resource, event.type
            )

    # -- watching -------------------------------------------------------------------------------

    async def _watch(self, handle: Handler) -> Outcome:
        watching = self.settings.watching
        server_timeout = int(watching.server_timeout or random.randint(*_SERVER_TIMEOUTS))
        connect = watching.connect_timeout or self.settings.networking.connect_timeout
        stream = LineStream(
            self.client.sessions,
            self._request(server_timeout),
            timeout=httpx.Timeout(server_timeout + _READ_MARGIN, connect=connect),
            open_timeout=self._open_timeout(),
        )
        started = anyio.current_time()
        hard_deadline = started + (watching.client_timeout or math.inf)
        events = 0
        try:
            async with stream:
                self.state = self.state.with_stream(open=True)
                while True:
                    line, stalled = await self._next_line(stream, hard_deadline)
                    if line is None:
                        elapsed = anyio.current_time() - started
                        return Stalled(stalled) if stalled else Ended(events, elapsed)
                    if (outcome := await self._consume(line, handle)) is not None:
                        return outcome
                    events += 1
        finally:
            self.state = self.state.with_stream(open=False)

    def _request(self, server_timeout: int) -> Request:
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(server_timeout),
            "resourceVersion": self.state.resource_version or "",
        }
        params |= {key: value for key, value in self._selectors.items() if value}
        return Request("GET", self._path, params)

    def _open_timeout(self) -> float:
        watching, networking = self.settings.watching, self.settings.networking
        return watching.inactivity_timeout or networking.request_timeout or 60.0

    async def _next_line(
        self, stream: LineStream, hard_deadline: float
    ) -> tuple[bytes | None, float]:
        """Read a line within the inactivity deadline; ``(None, seconds)`` if it stalled."""
        now = anyio.current_time()
        inactivity = self.settings.watching.inactivity_timeout or math.inf
        with anyio.move_on_after(min(inactivity, hard_deadline - now)) as scope:
            return await stream.next_line(), 0.0
        stalled = anyio.current_time() - now
        return None, (stalled if scope.deadline < hard_deadline else 0.0)

    async def _consume(self, line: bytes, handle: Handler) -> Outcome | None:
        try:
            event = json.loads(line)
            kind, body = event["type"], event["object"]
        except (ValueError, RecursionError, KeyError, TypeError):
            body = None
        if not isinstance(body, dict):
            return Failed(f"A garbled line in the watch-stream: {line[:100]!r}")
        if kind == "ERROR":
            return outcome_of_status(body)
        version = (body.get("metadata") or {}).get("resourceVersion")
        self.state = self.state.seen(version, anyio.current_time())
        if kind not in _EVENT_TYPES:
            return None  # BOOKMARK, or something newer than us: only its resourceVersion counts
        if kind == "DELETED":
            self._known.pop(str(body.get("metadata", {}).get("uid")), None)
        else:
            self._remember(body)
        body = body if self.client.keep_managed_fields else strip_managed_fields(body)
        await self._dispatch(handle, WatchEvent(kind, body))
        return None
