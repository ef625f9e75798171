"""The session pool's fast path: plain requests straight to KubeTransport, on both backends.

A scripted HTTP/1.1 server on 127.0.0.1 sees what goes over the wire; the same requests through
httpx's client must look the same to it, and answers must come back the same.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from tests.unit.kube.test_transport import Peer, Received, Server, serving

from anyop.errors import InvalidError, ServerError, TooManyRequestsError, TransportError
from anyop.kube.auth import Vault
from anyop.kube.client import PatchType, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.kube.sessions import Request, Route, SessionPool
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
QUIET = {"error_backoffs": (0.001, 0.001, 0.001)}
# httpx adds this to every request; the fast path keeps connections alive without saying so.
HTTPX_ONLY = {"connection"}


async def vault_for(url: str) -> Vault:
    vault = Vault()
    await vault.populate({"t": ConnectionInfo(url, token="tok")})
    return vault


async def pool_for(
    server: Server, *, direct: bool, path: str = "", **networking: Any
) -> SessionPool:
    vault = await vault_for(server.url + path)
    settings = OperatorSettings.model_validate({"networking": {**QUIET, **networking}})
    pool = SessionPool(vault, settings.networking)
    pool.direct = direct
    return pool


def echo(status: int = 200, **headers: str) -> Any:
    """Answer every request with a JSON document of what arrived."""

    async def handler(server: Server, peer: Peer, request: Received) -> None:
        document = {
            "method": request.method,
            "target": request.target,
            "body": request.body.decode(),
        }
        await peer.respond(json.dumps(document).encode(), status, tuple(headers.items()))

    return handler


def wire(request: Received) -> tuple[str, str, dict[str, str], bytes]:
    headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in HTTPX_ONLY}
    return request.method, request.target, headers, request.body


APPLY = "application/apply-patch+yaml"
REQUESTS = [
    Request("GET", "/api/v1/namespaces/ns/configmaps/x"),
    Request("GET", "/api/v1/configmaps", {"labelSelector": "app in (a,b),tier!=db", "limit": "5"}),
    Request("GET", "/api/v1/namespaces/ns/configmaps", {"fieldSelector": "metadata.name=a b"}),
    Request("POST", "/api/v1/namespaces/ns/configmaps", None, {"metadata": {"name": "é"}}),
    Request(
        "PATCH",
        "/apis/g/v1/x/y",
        {"fieldManager": "m", "force": "true"},
        {"a": 1},
        "application/apply-patch+yaml",
    ),
    Request(
        "DELETE", "/api/v1/namespaces/ns/configmaps/x", None, {"propagationPolicy": "Foreground"}
    ),
]


@pytest.mark.parametrize("path", ["", "/k8s/clusters/c-1"], ids=["root", "prefixed"])
async def test_requests_on_the_wire_are_those_httpx_sends(path: str) -> None:
    async with serving(echo()) as server:
        answers = {}
        for direct in (False, True):
            pool = await pool_for(server, direct=direct, path=path)
            answers[direct] = [await pool.send(request) for request in REQUESTS]
            await pool.aclose()
    half = len(REQUESTS)
    via_httpx, direct_ = server.requests[:half], server.requests[half:]
    assert [wire(r) for r in direct_] == [wire(r) for r in via_httpx]
    assert answers[True] == answers[False]
    assert all(r.target.startswith(path + "/ap") for r in direct_)
    assert direct_[0].headers["authorization"] == "Bearer tok"
    assert direct_[0].headers["host"] == f"127.0.0.1:{server.port}"
    assert "gzip" in direct_[0].headers["accept-encoding"]
    assert direct_[4].headers["content-type"] == "application/apply-patch+yaml"
    assert json.loads(direct_[3].body) == {"metadata": {"name": "é"}}
    assert server.connections == 2  # one per pool: the fast path keeps its connection alive


async def test_error_answers_are_typed_with_status_details_and_retry_after() -> None:
    status = {"kind": "Status", "code": 422, "reason": "Invalid", "message": "bad spec",
              "details": {"name": "x", "causes": [{"field": "spec.a"}]}}  # fmt: skip

    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if request.target.endswith("/busy"):
            await peer.respond(b"slow down", 429, (("Retry-After", "7"),))
        else:
            await peer.respond(json.dumps(status).encode(), 422)

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True, error_backoffs=())
        with pytest.raises(InvalidError) as invalid:
            await pool.send(Request("PATCH", "/x", body={}, content_type=str(PatchType.MERGE)))
        with pytest.raises(TooManyRequestsError) as busy:
            await pool.send(Request("GET", "/busy"))
        await pool.aclose()
    assert (invalid.value.status, invalid.value.reason) == (422, "Invalid")
    assert invalid.value.details["causes"] == [{"field": "spec.a"}]
    assert str(invalid.value) == "(422 Invalid) bad spec"
    assert busy.value.retry_after == 7
    assert "slow down" in str(busy.value)


async def test_server_errors_of_idempotent_requests_are_retried_then_raised() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if request.method == "GET" and len(server.requests) == 3:
            await peer.respond(b'{"kind": "ConfigMap"}')
        else:
            await peer.respond(b"<html>gateway</html>", 502)

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True)
        assert await pool.send(Request("GET", "/x")) == {"kind": "ConfigMap"}
        with pytest.raises(ServerError, match="gateway"):
            await pool.send(Request("POST", "/x", body={}))  # not idempotent: no retry
        await pool.aclose()
    assert [r.method for r in server.requests] == ["GET", "GET", "GET", "POST"]


async def test_an_answer_that_is_not_json_is_a_transport_error_naming_it() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        await peer.respond(b"<html>", 200)

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True, error_backoffs=())
        with pytest.raises(TransportError, match="not JSON"):
            await pool.send(Request("GET", "/x"))
        await pool.aclose()


async def test_a_compressed_answer_is_decoded() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        body = gzip.compress(b'{"metadata": {"name": "z", "managedFields": [1]}}')
        await peer.respond(body, 200, (("Content-Encoding", "gzip"),))

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True)
        assert await pool.send(Request("GET", "/x")) == {"metadata": {"name": "z"}}
        await pool.aclose()


async def test_a_get_is_resent_on_a_new_connection_when_the_kept_one_was_closed() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if len(server.requests) == 2:
            await peer.close()  # as a server closing an idle connection just as it is reused
        else:
            await peer.respond(b"{}")

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True, error_backoffs=())
        await pool.send(Request("GET", "/first"))
        assert await pool.send(Request("GET", "/again")) == {}
        await pool.aclose()
    assert [r.target for r in server.requests] == ["/first", "/again", "/again"]
    assert server.connections == 2


async def test_a_patch_is_never_resent_when_the_kept_connection_closes_unanswered() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if len(server.requests) == 2:
            await peer.close()
        else:
            await peer.respond(b"{}")

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True, error_backoffs=())
        await pool.send(Request("GET", "/first"))
        with pytest.raises(TransportError, match="without sending a response"):
            await pool.send(Request("PATCH", "/obj", body={}, content_type=str(PatchType.MERGE)))
        await pool.aclose()
    assert [r.target for r in server.requests] == ["/first", "/obj"]


async def test_a_request_without_an_answer_in_time_fails_and_frees_its_connection() -> None:
    async def handler(server: Server, peer: Peer, request: Received) -> None:
        if request.target == "/slow":
            await peer.wait_closed()
        else:
            await peer.respond(b"{}")

    async with serving(handler) as server:
        pool = await pool_for(server, direct=True, error_backoffs=(), request_timeout=0.2)
        with pytest.raises(TransportError, match=r"No answer within 0\.2s"):
            await pool.send(Request("GET", "/slow"))
        assert await pool.send(Request("GET", "/fine")) == {}
        await pool.aclose()
    assert server.connections == 2  # the timed-out connection was closed, not reused


async def test_the_client_uses_the_fast_path_against_a_kube_transport() -> None:
    async with serving(echo()) as server, open_client(await vault_for(server.url)) as client:
        body = await client.get(CONFIGMAPS, name="x", namespace="ns")
        session = await client.sessions.checkout()
        await client.sessions.checkin(session)
    assert body["target"] == "/api/v1/namespaces/ns/configmaps/x"
    assert isinstance(session.route, Route)


async def test_a_checkout_after_the_clients_closed_gets_a_new_one() -> None:
    async with serving(echo()) as server:
        pool = await pool_for(server, direct=True)
        first = await pool.checkout()
        await pool.checkin(first)
        assert await pool.checkout() is first  # the same credential: the same client
        await pool.checkin(first)
        await pool.aclose()
        second = await pool.checkout()
        await pool.checkin(second)
        await pool.aclose()
    assert first.retired
    assert second is not first
