"""KubeTransport against a small scriptable HTTP/1.1 server on 127.0.0.1, plain and with TLS.

The one ``httpx.MockTransport`` here is not a fake API but the subject of its test: ``aiter_raw``
reads the bodies of such transports (respx's included) through httpx.
"""

from __future__ import annotations

import socket
import ssl
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
import h11
import httpx
import pytest
from anyio.streams.tls import TLSStream

from anyop.kube import http11, sockets
from anyop.kube.http11 import encode_chunk, encode_head
from anyop.kube.transport import KubeTransport, aiter_raw, may_resend
from anyop.webhooks.certs import CertificateAuthority

pytestmark = pytest.mark.anyio

DEADLINE = 10  # seconds: a hang fails the test instead of the suite


# -- a scriptable server ------------------------------------------------------------------------


@dataclass(frozen=True)
class Received:
    """One request as the server got it."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class Peer:
    """The server's side of one connection: h11 over an AnyIO stream."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER)
        self.closed = False

    async def next_request(self) -> Received | None:
        """The next complete request, or ``None`` once the client has gone."""
        request, body = None, b""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self._receive())
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                headers = {k.decode(): v.decode() for k, v in request.headers}
                return Received(request.method.decode(), request.target.decode(), headers, body)
            else:
                return None

    async def _receive(self) -> bytes:
        try:
            return await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return b""

    async def send(self, *events: h11.Event) -> None:
        for event in events:
            if data := self.h11.send(event):
                await self.stream.send(data)

    async def start(self, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> None:
        """Send a response head; without a content-length, h11 chunks the body."""
        await self.send(h11.Response(status_code=status, headers=list(headers)))

    async def respond(
        self, body: bytes = b"", status: int = 200, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        length = ("content-length", str(len(body)))
        await self.send(
            h11.Response(status_code=status, headers=[length, *headers]),
            h11.Data(data=body),
            h11.EndOfMessage(),
        )

    async def wait_closed(self) -> None:
        """Wait until the client closes the connection."""
        while await self._receive():
            pass

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send(data)

    async def close(self) -> None:
        self.closed = True
        await anyio.aclose_forcefully(self.stream)


Handler = Callable[["Server", Peer, Received], Awaitable[None]]


class Server:
    """Counts connections and requests; a handler per test answers them."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None) -> None:
        self.handler = handler
        self.ssl_context = ssl_context
        self.port = 0
        self.connections = 0
        self.requests: list[Received] = []
        self.arrived: defaultdict[int, anyio.Event] = defaultdict(anyio.Event)
        self.ended: defaultdict[int, anyio.Event] = defaultdict(anyio.Event)

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        index = self.connections
        self.connections += 1
        try:
            if self.ssl_context is not None:
                stream = await TLSStream.wrap(
                    stream,
                    server_side=True,
                    ssl_context=self.ssl_context,
                    standard_compatible=False,
                )
            await self._exchange(Peer(stream))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.ProtocolError):
            pass
        finally:
            await anyio.aclose_forcefully(stream)
            self.ended[index].set()

    async def _exchange(self, peer: Peer) -> None:
        while (request := await peer.next_request()) is not None:
            self.requests.append(request)
            self.arrived[len(self.requests)].set()
            await self.handler(self, peer, request)
            if peer.closed or peer.h11.our_state is not h11.DONE:
                return
            peer.h11.start_next_cycle()


@asynccontextmanager
async def serving(
    handler: Handler, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[Server]:
    server = Server(handler, ssl_context)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        with anyio.fail_after(DEADLINE):
            yield server
        tg.cancel_scope.cancel()


def reply(body: bytes = b"hello") -> Handler:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        await peer.respond(body)

    return handler


def client_for(server: Server, transport: KubeTransport | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url, transport=transport or KubeTransport(), timeout=DEADLINE
    )


# -- keep-alive and limits ---------------------------------------------------------------------


async def test_sequential_requests_share_one_kept_alive_connection() -> None:
    async with serving(reply(b"hello")) as server, client_for(server) as client:
        for _ in range(5):
            response = await client.get("/")
            assert (response.status_code, response.content) == (200, b"hello")
            assert response.http_version == "HTTP/1.1"
    assert server.connections == 1


async def test_a_request_beyond_the_origin_limit_times_out_waiting_for_a_connection() -> None:
    release = anyio.Event()

    async def hold(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/hold":
            await release.wait()
        await peer.respond(b"done")

    transport = KubeTransport(max_connections_per_origin=2)
    async with serving(hold) as server, client_for(server, transport) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.get, "/hold")
            tg.start_soon(client.get, "/hold")
            await server.arrived[2].wait()
            with pytest.raises(httpx.PoolTimeout):
                await client.get("/third", timeout=httpx.Timeout(DEADLINE, pool=0.2))
            release.set()
        assert (await client.get("/fourth")).content == b"done"
    assert [r.target for r in server.requests] == ["/hold", "/hold", "/fourth"]
    assert server.connections == 2


async def test_watches_have_a_pool_of_their_own_beyond_the_limit_of_requests() -> None:
    release = anyio.Event()

    async def hold(server: Server, peer: Peer, request: Received) -> None:
        if "watch=true" in request.target:
            await release.wait()
        await peer.respond(b"ok")

    transport = KubeTransport(max_connections_per_origin=1)
    async with (
        serving(hold) as server,
        client_for(server, transport) as client,
        anyio.create_task_group() as tg,
    ):
        for _ in range(3):  # three watches hold three connections: none waits
            tg.start_soon(client.get, "/things?watch=true")
        await server.arrived[3].wait()
        quick = httpx.Timeout(DEADLINE, pool=0.5)
        assert (await client.get("/request", timeout=quick)).content == b"ok"
        assert (await client.get("/request", timeout=quick)).content == b"ok"
        release.set()
    assert server.connections == 4  # 3 watches + 1 for the requests, reused


async def test_a_waiting_request_gets_the_connection_that_a_finished_one_frees() -> None:
    release = anyio.Event()
    results: list[bytes] = []

    async def hold(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/hold":
            await release.wait()
        await peer.respond(request.target.encode())

    async def get(client: httpx.AsyncClient, path: str) -> None:
        results.append((await client.get(path)).content)

    transport = KubeTransport(max_connections_per_origin=1)
    async with (
        serving(hold) as server,
        client_for(server, transport) as client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(get, client, "/hold")
        await server.arrived[1].wait()
        tg.start_soon(get, client, "/next")  # Trio starts these two in random order.
        tg.start_soon(get, client, "/last")
        release.set()
    assert results[0] == b"/hold"
    assert sorted(results[1:]) == [b"/last", b"/next"]
    assert server.connections == 1


async def test_a_cancelled_waiter_gives_up_its_turn() -> None:
    release = anyio.Event()

    async def hold(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/hold":
            await release.wait()
        await peer.respond(b"ok")

    transport = KubeTransport(max_connections_per_origin=1)
    async with serving(hold) as server, client_for(server, transport) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.get, "/hold")
            await server.arrived[1].wait()
            with anyio.move_on_after(0.1) as waited:
                await client.get("/gave-up")
            assert waited.cancelled_caught
            release.set()
        assert (await client.get("/after")).content == b"ok"
    assert [r.target for r in server.requests] == ["/hold", "/after"]


async def test_idle_connections_past_their_expiry_are_not_reused() -> None:
    transport = KubeTransport(keepalive_expiry=0)
    async with serving(reply()) as server, client_for(server, transport) as client:
        for _ in range(3):
            await client.get("/")
    assert server.connections == 3


async def test_closing_the_transport_closes_its_idle_connections() -> None:
    async with serving(reply()) as server:
        transport = KubeTransport()
        async with client_for(server, transport) as client:
            await client.get("/")
            await anyio.wait_all_tasks_blocked()
            assert not server.ended[0].is_set()  # kept alive while idle
            await transport.aclose()
            with anyio.move_on_after(DEADLINE / 2):  # within the deadline of serving()
                await server.ended[0].wait()
            assert server.ended[0].is_set(), "the idle connection is still open"
    assert server.connections == 1


async def test_a_response_that_ends_after_the_transport_closed_closes_its_connection() -> None:
    async def parts(server: Server, peer: Peer, request: Received) -> None:
        await peer.start()
        await peer.send(h11.Data(data=b"one,"))
        await peer.send(h11.Data(data=b"two"), h11.EndOfMessage())

    transport = KubeTransport()
    async with serving(parts) as server, client_for(server, transport) as client:
        async with client.stream("GET", "/") as response:
            await transport.aclose()
            assert await response.aread() == b"one,two"
        await server.ended[0].wait()
        with pytest.raises(RuntimeError, match="closed"):
            await client.get("/")


async def test_aiter_raw_reads_bodies_of_mock_transports_through_httpx() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"mocked"))
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("GET", "http://example.com/") as response,
    ):
        assert [chunk async for chunk in aiter_raw(response)] == [b"mocked"]


# -- bodies ------------------------------------------------------------------------------------


async def test_content_length_and_chunked_bodies_are_read_whole() -> None:
    async def bodies(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/chunked":
            await peer.start()
            for part in (b"one,", b"two,", b"three"):
                await peer.send(h11.Data(data=part))
            await peer.send(h11.EndOfMessage())
        else:
            await peer.respond(b"x" * 100_000)

    async with serving(bodies) as server, client_for(server) as client:
        assert (await client.get("/chunked")).content == b"one,two,three"
        assert (await client.get("/length")).content == b"x" * 100_000
        assert (await client.get("/chunked")).content == b"one,two,three"
    assert server.connections == 1


async def test_request_bodies_arrive_whole_from_bytes_and_from_a_stream() -> None:
    async def echo(server: Server, peer: Peer, request: Received) -> None:
        await peer.respond(request.body)

    async def parts() -> AsyncIterator[bytes]:
        for part in (b"streamed ", b"", b"in parts"):
            yield part

    async with serving(echo) as server, client_for(server) as client:
        assert (await client.post("/", content=b"as bytes")).content == b"as bytes"
        assert (await client.post("/", content=parts())).content == b"streamed in parts"
    assert server.requests[1].headers["transfer-encoding"] == "chunked"


async def test_a_streamed_body_arrives_piece_by_piece_while_the_server_still_sends() -> None:
    next_line = anyio.Event()

    async def watch(server: Server, peer: Peer, request: Received) -> None:
        await peer.start(headers=(("content-type", "application/json"),))
        await peer.send(h11.Data(data=b'{"n": 1}\n'))
        await next_line.wait()
        await peer.send(h11.Data(data=b'{"n": 2}\n'), h11.EndOfMessage())

    async with serving(watch) as server, client_for(server) as client:
        async with client.stream("GET", "/watch") as response:
            chunks = aiter_raw(response)
            assert await chunks.__anext__() == b'{"n": 1}\n'
            next_line.set()
            assert await chunks.__anext__() == b'{"n": 2}\n'
            with pytest.raises(StopAsyncIteration):
                await chunks.__anext__()
        assert (await client.get("/watch")).text.splitlines() == ['{"n": 1}', '{"n": 2}']
    assert server.connections == 1


async def test_httpx_reads_lines_of_a_stream_to_its_end() -> None:
    read = [anyio.Event() for _ in range(3)]
    lines: list[str] = []

    async def watch(server: Server, peer: Peer, request: Received) -> None:
        await peer.start()
        for n in range(3):  # a line at a time: each arrives in a read of its own
            await peer.send(h11.Data(data=b'{"n": %d}\n' % n))
            await read[n].wait()
        await peer.send(h11.EndOfMessage())

    async with (
        serving(watch) as server,
        client_for(server) as client,
        client.stream("GET", "/watch") as response,
    ):
        async for line in response.aiter_lines():
            lines.append(line)
            read[len(lines) - 1].set()
    assert lines == ['{"n": 0}', '{"n": 1}', '{"n": 2}']


async def test_a_stream_closed_early_does_not_give_its_connection_back() -> None:
    async def endless(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/endless":
            await peer.start()
            await peer.send(h11.Data(data=b"first\n"))
            await peer.wait_closed()
        else:
            await peer.respond(b"ok")

    async with serving(endless) as server, client_for(server) as client:
        async with client.stream("GET", "/endless") as response:
            assert await aiter_raw(response).__anext__() == b"first\n"
        await server.ended[0].wait()
        assert (await client.get("/after")).content == b"ok"
    assert server.connections == 2


async def test_a_head_response_has_no_body_and_keeps_the_connection() -> None:
    async def head(server: Server, peer: Peer, request: Received) -> None:
        if request.method == "HEAD":  # the length of the body that a GET would get
            await peer.send(h11.Response(status_code=200, headers=[("content-length", "4")]))
            await peer.send(h11.EndOfMessage())
        else:
            await peer.respond(b"body")

    async with serving(head) as server, client_for(server) as client:
        response = await client.head("/")
        assert (response.content, response.headers["content-length"]) == (b"", "4")
        assert (await client.get("/")).content == b"body"
        assert (await client.head("/")).content == b""
    assert server.connections == 1


async def test_an_interim_response_is_skipped() -> None:
    async def early_hints(server: Server, peer: Peer, request: Received) -> None:
        await peer.send(h11.InformationalResponse(status_code=103, headers=[("link", "</a>")]))
        await peer.respond(b"final", headers=(("x-final", "yes"),))

    async with serving(early_hints) as server, client_for(server) as client:
        response = await client.get("/")
        assert (response.status_code, response.content) == (200, b"final")
        assert "link" not in response.headers
        assert response.headers["x-final"] == "yes"
        assert (await client.get("/")).content == b"final"
    assert server.connections == 1


async def test_a_body_that_ends_with_the_connection_is_read_to_the_end() -> None:
    async def until_eof(server: Server, peer: Peer, request: Received) -> None:
        await peer.send_raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
        await peer.close()

    async with serving(until_eof) as server, client_for(server) as client:
        assert (await client.get("/")).content == b"until the end"
        assert (await client.get("/")).content == b"until the end"
    assert server.connections == 2


# -- the server closes -------------------------------------------------------------------------


async def test_a_connection_close_answer_is_not_reused() -> None:
    async def closing(server: Server, peer: Peer, request: Received) -> None:
        await peer.respond(b"bye", headers=(("connection", "close"),))

    async with serving(closing) as server, client_for(server) as client:
        assert (await client.get("/")).content == b"bye"
        assert (await client.get("/")).content == b"bye"
    assert server.connections == 2


async def test_a_connection_close_answer_is_obeyed_even_if_the_server_keeps_the_socket() -> None:
    async def lingering(server: Server, peer: Peer, request: Received) -> None:
        await peer.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye")
        await peer.wait_closed()  # the client must hang up

    async with serving(lingering) as server, client_for(server) as client:
        timeout = httpx.Timeout(DEADLINE, read=1)
        assert (await client.get("/", timeout=timeout)).content == b"bye"
        await server.ended[0].wait()
        assert (await client.get("/", timeout=timeout)).content == b"bye"
    assert server.connections == 2


async def test_an_idle_connection_that_the_server_closed_is_replaced_before_sending() -> None:
    async def once(server: Server, peer: Peer, request: Received) -> None:
        await peer.respond(b"ok")
        await peer.close()  # without "Connection: close": the client learns it from the socket

    async with serving(once) as server, client_for(server) as client:
        await client.get("/")
        await server.ended[0].wait()
        # A POST is never resent: it succeeds only if the dead connection is noticed before.
        assert (await client.post("/", content=b"x")).content == b"ok"
    assert [r.method for r in server.requests] == ["GET", "POST"]
    assert server.connections == 2


def close_on_second_request(server: Server, peer: Peer, request: Received) -> Awaitable[None]:
    """Answer the first request; drop the connection on the second without a word."""
    if len(server.requests) == 2:
        return peer.close()
    return peer.respond(b"ok")


async def test_a_get_is_resent_once_when_a_reused_connection_closes_without_answering() -> None:
    async with serving(close_on_second_request) as server, client_for(server) as client:
        await client.get("/first")
        assert (await client.get("/again")).content == b"ok"
    assert [r.target for r in server.requests] == ["/first", "/again", "/again"]
    assert server.connections == 2


async def test_a_post_is_not_resent_when_a_reused_connection_closes_without_answering() -> None:
    async with serving(close_on_second_request) as server, client_for(server) as client:
        await client.get("/first")
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.post("/create", content=b"{}")
    assert [r.target for r in server.requests] == ["/first", "/create"]


@pytest.mark.parametrize("method", ["POST", "PATCH", "GET"])
async def test_a_request_is_never_resent_after_the_connection_broke_mid_response(
    method: str,
) -> None:
    async def half(server: Server, peer: Peer, request: Received) -> None:
        if len(server.requests) == 1:
            await peer.respond(b"ok")
        else:
            await peer.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            await peer.close()

    async with serving(half) as server, client_for(server) as client:
        await client.get("/first")
        with pytest.raises(httpx.RemoteProtocolError, match="middle of a response"):
            await client.request(method, "/change", content=b"{}")
    assert [r.method for r in server.requests] == ["GET", method]


async def test_a_garbled_answer_is_a_remote_protocol_error() -> None:
    async def garbage(server: Server, peer: Peer, request: Received) -> None:
        await peer.send_raw(b"HTTP/1.1 abc\r\n\r\n")

    async with serving(garbage) as server, client_for(server) as client:
        with pytest.raises(httpx.RemoteProtocolError, match="Malformed"):
            await client.get("/")


# -- timeouts, failures, cancellation ----------------------------------------------------------


async def test_a_stalled_stream_raises_read_timeout() -> None:
    async def stall(server: Server, peer: Peer, request: Received) -> None:
        await peer.start()
        await peer.send(h11.Data(data=b"one\n"))
        await anyio.sleep_forever()

    async with serving(stall) as server, client_for(server) as client:
        timeout = httpx.Timeout(DEADLINE, read=0.2)
        async with client.stream("GET", "/", timeout=timeout) as response:
            chunks = aiter_raw(response)
            assert await chunks.__anext__() == b"one\n"
            with pytest.raises(httpx.ReadTimeout):
                await chunks.__anext__()


async def test_a_slow_answer_raises_read_timeout_through_httpx() -> None:
    async def slow(server: Server, peer: Peer, request: Received) -> None:
        await anyio.sleep_forever()

    async with serving(slow) as server, client_for(server) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/", timeout=httpx.Timeout(DEADLINE, read=0.1))


async def test_a_refused_connection_raises_connect_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    async with httpx.AsyncClient(transport=KubeTransport()) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")


async def closed_port() -> int:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()
    return port


@asynccontextmanager
async def echoing(received: list[bytes], accepted: anyio.Event | None = None) -> AsyncIterator[int]:
    """A TCP server on 127.0.0.1 that echoes each connection's first receive (and notes it);
    yields its port. It sets ``accepted`` as it takes a connection."""

    async def echo(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            if accepted is not None:
                accepted.set()
            received.append(await stream.receive())
            await stream.send(received[-1])

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, echo)
        with anyio.fail_after(DEADLINE):
            yield listener.extra(anyio.abc.SocketAttribute.local_port)
        tg.cancel_scope.cancel()


async def test_a_new_connection_stays_whole_until_the_client_sends() -> None:
    # AnyIO's asyncio streams before 4.16 half-close the socket as they close: a connection
    # taken over from one reached the server as an end of stream before the first request.
    first: list[bytes] = []
    accepted = anyio.Event()
    async with echoing(first, accepted) as port:
        conn = await http11._connect("127.0.0.1", port, [])
        await accepted.wait()
        await anyio.wait_all_tasks_blocked()  # the server waits: a stray FIN would end its wait
        await conn.send(b"ping")
        assert await conn.receive(100) == b"ping"
        conn.close()
    assert first == [b"ping"]


async def test_a_host_name_is_resolved_and_its_addresses_tried_until_one_answers() -> None:
    # "localhost" may resolve to ::1 as well; only 127.0.0.1 listens, so ::1 is refused.
    async with echoing([]) as port:
        conn = await http11._connect("localhost", port, [])
        await conn.send(b"ping")
        assert await conn.receive(100) == b"ping"
        conn.close()


def test_addresses_are_tried_with_families_alternating_the_first_family_first() -> None:
    v4a, v4b = (socket.AF_INET, ("10.0.0.1", 1)), (socket.AF_INET, ("10.0.0.2", 1))
    v6a, v6b = (socket.AF_INET6, ("::1", 1, 0, 0)), (socket.AF_INET6, ("::2", 1, 0, 0))
    assert sockets.connect_order([v6a, v6b, v4a, v4b, v6a]) == [v6a, v4a, v6b, v4b]
    assert sockets.connect_order([v4a, v6a, v4b]) == [v4a, v6a, v4b]
    with pytest.raises(OSError, match="no address"):
        sockets.connect_order([])


async def connects_to_a_listener_after(first: sockets.Address) -> None:
    """``_first_connected([first, a listener])`` connects to the listener, within the deadline."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener:
        with anyio.fail_after(DEADLINE):
            sock = await sockets._first_connected(
                [first, (socket.AF_INET, ("127.0.0.1", port))], []
            )
        with sock:
            assert sock.getpeername() == ("127.0.0.1", port)


async def test_a_refused_address_hands_over_to_the_next_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sockets, "HAPPY_EYEBALLS_DELAY", DEADLINE * 2)  # waiting it out fails
    refused = (socket.AF_INET, ("127.0.0.1", await closed_port()))
    attempts: list[tuple[str, sockets.Address]] = []
    attempt = sockets._attempt

    async def noted(address: sockets.Address, options: list[sockets.SocketOption]) -> socket.socket:
        attempts.append(("tried", address))
        try:
            return await attempt(address, options)
        except ConnectionRefusedError:
            attempts.append(("refused", address))
            raise

    monkeypatch.setattr(sockets, "_attempt", noted)
    await connects_to_a_listener_after(refused)
    assert attempts[:2] == [("tried", refused), ("refused", refused)]
    assert [what for what, _ in attempts] == ["tried", "refused", "tried"]  # the next, after it


async def test_a_silent_address_is_raced_by_the_next_one_and_then_abandoned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sockets, "HAPPY_EYEBALLS_DELAY", 0.01)
    silent = (socket.AF_INET6, ("::9", 1, 0, 0))
    abandoned = anyio.Event()
    attempt = sockets._attempt

    async def attempt_or_hang(
        address: sockets.Address, options: list[sockets.SocketOption]
    ) -> socket.socket:
        if address == silent:
            try:
                await anyio.sleep_forever()
            finally:
                abandoned.set()
        return await attempt(address, options)

    monkeypatch.setattr(sockets, "_attempt", attempt_or_hang)
    await connects_to_a_listener_after(silent)
    assert abandoned.is_set()


async def test_when_every_address_fails_the_error_names_each_one() -> None:
    ports = [await closed_port(), await closed_port()]
    with pytest.raises(OSError, match="Every address failed") as caught:
        await sockets._first_connected([(socket.AF_INET, ("127.0.0.1", p)) for p in ports], [])
    assert all(f"127.0.0.1:{port}" not in str(caught.value) for port in ports)
    assert str(caught.value).count("127.0.0.1: ") == 2


async def test_a_request_cancelled_midway_leaves_the_pool_usable() -> None:
    async def stall_first(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/stall":
            await anyio.sleep_forever()
        await peer.respond(b"ok")

    transport = KubeTransport(max_connections_per_origin=1)
    async with serving(stall_first) as server, client_for(server, transport) as client:
        with anyio.move_on_after(0.1) as scope:
            await client.get("/stall")
        assert scope.cancelled_caught
        assert (await client.get("/after")).content == b"ok"
        assert (await client.get("/after")).content == b"ok"
    assert server.connections == 2


async def test_a_body_read_cancelled_midway_leaves_the_pool_usable() -> None:
    async def trickle(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/trickle":
            await peer.start()
            await peer.send(h11.Data(data=b"some"))
            await anyio.sleep_forever()
        await peer.respond(b"ok")

    transport = KubeTransport(max_connections_per_origin=1)
    async with serving(trickle) as server, client_for(server, transport) as client:
        with anyio.move_on_after(0.1):
            async with client.stream("GET", "/trickle") as response:
                chunks = aiter_raw(response)
                await chunks.__anext__()
                await chunks.__anext__()
        assert (await client.get("/after")).content == b"ok"
    assert server.connections == 2


async def test_an_unsupported_scheme_is_refused() -> None:
    async with httpx.AsyncClient(transport=KubeTransport()) as client:
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get("ftp://127.0.0.1/")


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1, and a client context trusting it."""
    authority = CertificateAuthority()
    pair = authority.issue("localhost", sans=["127.0.0.1"], server=True)
    folder = tmp_path_factory.mktemp("pki")
    pair.write(folder / "server.crt", folder / "server.key")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(folder / "server.crt", folder / "server.key")
    client = ssl.create_default_context(cadata=authority.cert_pem.decode())
    return server, client


async def test_tls_requests_share_one_connection_and_read_large_streams(
    pki: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_context, client_context = pki
    parts = [bytes([65 + n % 26]) * 5000 + b"\n" for n in range(60)]

    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/stream":
            await peer.start()
            for part in parts:
                await peer.send(h11.Data(data=part))
            await peer.send(h11.EndOfMessage())
        else:
            await peer.respond(b"secure")

    transport = KubeTransport(client_context)
    async with serving(handler, server_context) as server, client_for(server, transport) as client:
        assert (await client.get("/")).content == b"secure"
        async with client.stream("GET", "/stream") as response:
            received = [chunk async for chunk in aiter_raw(response)]
        assert b"".join(received) == b"".join(parts)
        assert (await client.get("/")).content == b"secure"
    assert server.connections == 1


async def test_the_sni_hostname_extension_names_the_server_to_verify(
    pki: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_context, client_context = pki
    client_context = ssl.create_default_context(cadata=client_context.get_ca_certs(True)[0])
    transport = KubeTransport(client_context)
    async with serving(reply(), server_context) as server, client_for(server, transport) as client:
        named = await client.get("/", extensions={"sni_hostname": "localhost"})
        assert named.content == b"hello"
        with pytest.raises(httpx.ConnectError, match=r"mismatch|doesn't match"):
            await client.get("/", extensions={"sni_hostname": "elsewhere.example"})


async def test_a_server_certificate_from_an_unknown_authority_is_refused(
    pki: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    server_context, _ = pki
    transport = KubeTransport(ssl.create_default_context())
    async with serving(reply(), server_context) as server, client_for(server, transport) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get("/")


# -- pure parts --------------------------------------------------------------------------------


def test_a_request_head_is_the_request_line_and_headers_as_given() -> None:
    head = encode_head(b"GET", b"/api?x=1", [(b"Host", b"h"), (b"X-Mixed-Case", b"v")])
    assert head == b"GET /api?x=1 HTTP/1.1\r\nHost: h\r\nX-Mixed-Case: v\r\n\r\n"


@pytest.mark.parametrize("value", [b"v\r\nInjected: yes", b"v\nInjected: yes", b"v\rX"])
def test_a_line_break_in_a_header_is_refused(value: bytes) -> None:
    with pytest.raises(httpx.LocalProtocolError):
        encode_head(b"GET", b"/", [(b"Host", b"h"), (b"X-Value", value)])


async def test_a_header_with_a_line_break_never_reaches_the_server() -> None:
    async with serving(reply()) as server, client_for(server) as client:
        with pytest.raises(httpx.LocalProtocolError):
            await client.get("/", headers={"X-Value": "v\r\nInjected: yes"})
        assert (await client.get("/")).status_code == 200
    assert [r.headers.get("injected") for r in server.requests] == [None]


def test_a_chunk_is_framed_with_its_hex_size_and_empty_data_is_not_sent() -> None:
    assert encode_chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"
    assert encode_chunk(b"") == b""


@dataclass(frozen=True)
class Failure:
    """A request that failed, and whether it may be resent."""

    method: str
    reused: bool
    answered: bool
    error: Exception
    resend: bool


@pytest.mark.parametrize(
    "case",
    [
        Failure(
            "GET", reused=True, answered=False, error=httpx.RemoteProtocolError(""), resend=True
        ),
        Failure("DELETE", reused=True, answered=False, error=httpx.ReadError(""), resend=True),
        Failure("PUT", reused=True, answered=False, error=httpx.WriteError(""), resend=True),
        Failure("GET", reused=False, answered=False, error=httpx.ReadError(""), resend=False),
        Failure("GET", reused=True, answered=True, error=httpx.ReadError(""), resend=False),
        Failure("GET", reused=True, answered=False, error=httpx.ReadTimeout(""), resend=False),
        Failure("POST", reused=True, answered=False, error=httpx.ReadError(""), resend=False),
        Failure("PATCH", reused=True, answered=False, error=httpx.ReadError(""), resend=False),
    ],
    ids=lambda case: (
        f"{case.method}-{type(case.error).__name__}-reused={case.reused}-answered={case.answered}"
    ),
)
def test_only_idempotent_unanswered_requests_on_reused_connections_are_resent(
    case: Failure,
) -> None:
    request = httpx.Request(case.method, "https://k8s/", content=b"{}")
    decision = may_resend(request, case.error, reused=case.reused, answered=case.answered)
    assert decision is case.resend


async def stream_parts() -> AsyncIterator[bytes]:
    yield b"{}"


def test_a_streamed_body_is_never_resent() -> None:
    request = httpx.Request("PUT", "https://k8s/", content=stream_parts())
    error = httpx.RemoteProtocolError("eof")
    assert not may_resend(request, error, reused=True, answered=False)
