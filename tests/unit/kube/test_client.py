"""The API client against respx routes standing in for the API server, on both Trio and asyncio.

respx's global patching does not reach anyop's own transport, so the client gets the routes
through its ``transport_factory`` (see :func:`through`).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import respx
import trio

from anyop.errors import (
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    ServerError,
    TransportError,
    UnauthorizedError,
)
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, PatchType, Request, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.kube.sessions import TransportFactory
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

SERVER = "https://k8s.test:6443"
DEADLINE = 10  # seconds; only reached when a test is broken
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
NODES = Resource("", "v1", "nodes", kind="Node", namespaced=False)
X = "/api/v1/namespaces/ns/configmaps/x"


def settings(**networking: Any) -> OperatorSettings:
    """Settings with tiny backoffs, so retries take milliseconds."""
    options = {"error_backoffs": (0.001, 0.001, 0.001), **networking}
    return OperatorSettings.model_validate({"networking": options})


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """The API server: respx routes under SERVER, each of which must be called.

    A request that no route matches fails the test. ``using=None`` patches nothing in httpx:
    the client reaches the routes through its transport factory only.
    """
    with respx.mock(base_url=SERVER, using=None) as router:
        yield router


def through(router: respx.Router) -> TransportFactory:
    """A transport factory whose transports send every request to ``router``'s routes."""
    return lambda info, context: httpx.MockTransport(router.async_handler)


def ok(body: Any, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def status(code: int, reason: str, message: str = "", **details: Any) -> httpx.Response:
    body = {"kind": "Status", "status": "Failure", "code": code, "reason": reason}
    return httpx.Response(code, json={**body, "message": message, "details": details})


def cm(name: str, rv: str = "1", **extra: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, **extra}


async def vault_with(*tokens: str) -> Vault:
    vault = Vault()
    await vault.populate({token: ConnectionInfo(SERVER, token=token) for token in tokens})
    return vault


@pytest.fixture
async def vault() -> Vault:
    return await vault_with("secret-token")


def client_for(vault: Vault, api: respx.Router, **networking: Any) -> KubeClient:
    return open_client(vault, settings=settings(**networking), transport_factory=through(api))


# Requests and answers


async def test_get_reads_an_object_with_our_identity(vault: Vault, api: respx.MockRouter) -> None:
    route = api.get(X).respond(json=cm("x"))
    async with client_for(vault, api) as client:
        body = await client.get(CONFIGMAPS, name="x", namespace="ns")
    assert body == cm("x")
    request = route.calls.last.request
    assert str(request.url) == f"{SERVER}/api/v1/namespaces/ns/configmaps/x"
    assert request.headers["Authorization"] == "Bearer secret-token"
    assert request.headers["User-Agent"].startswith("anyop/")


async def test_managed_fields_are_stripped_unless_kept(vault: Vault, api: respx.MockRouter) -> None:
    managed = cm("x")
    managed["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    api.get(X).respond(json=managed)
    async with client_for(vault, api) as client:
        assert (
            "managedFields"
            not in (await client.get(CONFIGMAPS, name="x", namespace="ns"))["metadata"]
        )
    async with open_client(
        vault, transport_factory=through(api), keep_managed_fields=True
    ) as client:
        assert (await client.get(CONFIGMAPS, name="x", namespace="ns"))["metadata"]["managedFields"]


async def test_the_status_subresource_is_addressed(vault: Vault, api: respx.MockRouter) -> None:
    path = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x/status"
    routes = [api.request(method, path).respond(json=cm("x")) for method in ("GET", "PUT", "PATCH")]
    async with client_for(vault, api) as client:
        await client.get(KEX, name="x", namespace="ns", subresource="status")
        await client.replace(
            KEX, {"metadata": {"name": "x", "namespace": "ns"}}, subresource="status"
        )
        await client.patch(
            KEX, {"status": {"a": 1}}, name="x", namespace="ns", subresource="status"
        )
    assert [route.call_count for route in routes] == [1, 1, 1]


async def test_create_posts_to_the_namespace_of_the_body(
    vault: Vault, api: respx.MockRouter
) -> None:
    configmaps = api.post("/api/v1/namespaces/ns/configmaps").respond(201, json=cm("x"))
    api.post("/api/v1/nodes").respond(201, json=cm("x"))
    async with client_for(vault, api) as client:
        await client.create(CONFIGMAPS, cm("x"))
        await client.create(NODES, {"metadata": {"name": "n1"}})
    assert [call.request.url.path for call in api.calls] == [
        "/api/v1/namespaces/ns/configmaps",
        "/api/v1/nodes",
    ]
    assert json.loads(configmaps.calls.last.request.content) == cm("x")


@pytest.mark.parametrize("patch_type", list(PatchType))
async def test_patches_carry_their_content_type(
    vault: Vault, api: respx.MockRouter, patch_type: PatchType
) -> None:
    route = api.patch(X).respond(json=cm("x"))
    patch: Any = (
        [{"op": "replace", "path": "/data", "value": {}}] if patch_type is PatchType.JSON else {}
    )
    async with client_for(vault, api) as client:
        await client.patch(
            CONFIGMAPS, patch, name="x", namespace="ns", patch_type=patch_type, field_manager="me"
        )
    request = route.calls.last.request
    assert request.headers["Content-Type"] == patch_type.value
    assert request.url.params["fieldManager"] == "me"


async def test_server_side_apply_names_the_manager_and_may_force(
    vault: Vault, api: respx.MockRouter
) -> None:
    route = api.patch(X).respond(json=cm("x"))
    async with client_for(vault, api) as client:
        await client.apply(CONFIGMAPS, cm("x", data={"a": "1"}), field_manager="me", force=True)
        with pytest.raises(ValueError, match="field_manager"):
            await client.patch(CONFIGMAPS, {}, name="x", namespace="ns", patch_type=PatchType.APPLY)
    (call,) = route.calls
    assert dict(call.request.url.params) == {"fieldManager": "me", "force": "true"}
    assert call.request.headers["Content-Type"] == "application/apply-patch+yaml"


async def test_delete_sends_its_options_and_preconditions(
    vault: Vault, api: respx.MockRouter
) -> None:
    route = api.delete(X).respond(json={"kind": "Status", "status": "Success"})
    async with client_for(vault, api) as client:
        await client.delete(
            CONFIGMAPS,
            name="x",
            namespace="ns",
            propagation_policy="Foreground",
            uid="u1",
            resource_version="7",
            grace_period_seconds=0,
        )
    assert json.loads(route.calls.last.request.content) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"uid": "u1", "resourceVersion": "7"},
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
    }


# Lists


def page(names: list[str], rv: str, token: str | None) -> httpx.Response:
    items = [{"metadata": {"name": n, "uid": n}} for n in names]
    metadata = {"resourceVersion": rv, **({"continue": token} if token else {})}
    return ok({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": metadata, "items": items})


async def test_lists_are_fetched_page_by_page(vault: Vault, api: respx.MockRouter) -> None:
    pages = [page(["a", "b"], "10", "t1"), page(["c", "d"], "10", "t2"), page(["e"], "10", None)]
    route = api.get("/api/v1/namespaces/ns/configmaps").mock(side_effect=pages)
    async with client_for(vault, api) as client:
        found = await client.list(CONFIGMAPS, namespace="ns", label_selector="app=x", page_size=2)
    assert [item["metadata"]["name"] for item in found.items] == ["a", "b", "c", "d", "e"]
    assert found.resource_version == "10"
    assert {(item["apiVersion"], item["kind"]) for item in found.items} == {("v1", "ConfigMap")}
    params = [dict(call.request.url.params) for call in route.calls]
    assert [p.get("continue") for p in params] == [None, "t1", "t2"]
    assert all(p["limit"] == "2" and p["labelSelector"] == "app=x" for p in params)


async def test_an_expired_continue_token_restarts_the_list(
    vault: Vault, api: respx.MockRouter
) -> None:
    gone = status(410, "Expired", "The provided continue parameter is too old")
    pages = [page(["a"], "10", "t1"), gone, page(["a", "b"], "12", "t2"), page(["c"], "12", None)]
    route = api.get("/api/v1/configmaps").mock(side_effect=pages)
    async with client_for(vault, api) as client:
        found = await client.list(CONFIGMAPS, page_size=2)
        assert [i["metadata"]["name"] for i in found.items] == ["a", "b", "c"]
    assert found.resource_version == "12"
    assert [call.request.url.params.get("continue") for call in route.calls] == [
        None, "t1", None, "t2"
    ]  # fmt: skip


async def test_pages_can_be_left_early(vault: Vault, api: respx.MockRouter) -> None:
    route = api.get("/api/v1/configmaps").mock(side_effect=[page(["a"], "10", "t1")])
    async with client_for(vault, api) as client:
        async for first in client.list_pages(CONFIGMAPS):
            assert first.items[0]["metadata"]["name"] == "a"
            break
    assert route.call_count == 1


# The API server's warnings


async def test_the_warnings_of_answers_and_refusals_are_logged(
    vault: Vault, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    api.get(X).mock(return_value=ok(cm("x"), warning='299 - "v1 ConfigMap: a remark"'))
    refused = status(422, "Invalid", "refused")
    refused.headers["Warning"] = '299 - "the webhook says no", 299 - "v1 ConfigMap: a remark"'
    api.patch(X).mock(return_value=refused)
    with caplog.at_level(logging.WARNING, logger="anyop.kube"):
        async with client_for(vault, api) as client:
            await client.get(CONFIGMAPS, name="x", namespace="ns")
            with pytest.raises(InvalidError):
                await client.patch(CONFIGMAPS, {"data": {}}, name="x", namespace="ns")
    assert [record.getMessage() for record in caplog.records] == [
        f"The API server warns (GET {X}): v1 ConfigMap: a remark",
        f"The API server warns (PATCH {X}): the webhook says no",
    ]


# Typed errors


async def test_error_statuses_become_typed_errors(vault: Vault, api: respx.MockRouter) -> None:
    api.get(X).mock(
        status(404, "NotFound", 'configmaps "x" not found', name="x", kind="configmaps")
    )
    api.post("/api/v1/namespaces/ns/configmaps").mock(
        side_effect=[
            status(409, "AlreadyExists", 'configmaps "x" already exists'),
            status(422, "Invalid", "bad name", causes=[{"field": "metadata.name"}]),
        ]
    )
    async with client_for(vault, api) as client:
        with pytest.raises(NotFoundError) as missing:
            await client.get(CONFIGMAPS, name="x", namespace="ns")
        with pytest.raises(ConflictError) as exists:
            await client.create(CONFIGMAPS, cm("x"))
        with pytest.raises(InvalidError) as invalid:
            await client.create(CONFIGMAPS, cm("X_"))
    assert (missing.value.reason, missing.value.details["name"]) == ("NotFound", "x")
    assert exists.value.reason == "AlreadyExists"
    assert invalid.value.details["causes"] == [{"field": "metadata.name"}]
    assert api.calls.call_count == 3  # none of them repeated


async def test_a_non_json_error_body_becomes_the_message(
    vault: Vault, api: respx.MockRouter
) -> None:
    api.get(X).respond(403, text="<html>Forbidden by the proxy</html>")
    async with client_for(vault, api) as client:
        with pytest.raises(ForbiddenError, match="Forbidden by the proxy") as error:
            await client.get(CONFIGMAPS, name="x", namespace="ns")
    assert error.value.status == 403


async def test_a_non_json_success_body_is_a_transport_error(
    vault: Vault, api: respx.MockRouter
) -> None:
    api.get(X).respond(200, text="<html>a captive portal</html>")
    async with client_for(vault, api) as client:
        with pytest.raises(TransportError, match="not JSON"):
            await client.get(CONFIGMAPS, name="x", namespace="ns")


# Retries


async def test_429_is_retried_after_a_capped_retry_after(
    vault: Vault, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    throttled = status(429, "TooManyRequests", "slow down", retryAfterSeconds=3600)
    route = api.post("/api/v1/namespaces/ns/configmaps").mock(side_effect=[throttled, ok(cm("x"))])
    async with client_for(vault, api, max_retry_after=0.01) as client:
        with anyio.fail_after(DEADLINE):
            assert await client.create(CONFIGMAPS, cm("x")) == cm("x")
    assert route.call_count == 2  # even a create: the server refused it before doing anything
    assert "Request attempt #1/4 failed; will retry" in caplog.text
    assert all(r.name == "anyop.kube" for r in caplog.records if "attempt" in r.message)


@pytest.mark.trio
@pytest.mark.parametrize(
    "throttled",
    [
        ok({"kind": "Status"}, 429, **{"Retry-After": "7"}),
        status(429, "TooManyRequests", "x", retryAfterSeconds=7),
    ],
)
async def test_429_waits_as_long_as_the_server_asks(
    autojump_clock: trio.testing.MockClock, api: respx.MockRouter, throttled: httpx.Response
) -> None:
    vault = await vault_with("t")
    route = api.get(X).mock(side_effect=[throttled, ok(cm("x"))])
    async with client_for(vault, api) as client:
        start = trio.current_time()
        await client.get(CONFIGMAPS, name="x", namespace="ns")
        waited = trio.current_time() - start
    assert 7 <= waited <= 7 * 1.1
    assert route.call_count == 2


async def test_a_burst_of_server_errors_is_retried_for_reads(
    vault: Vault, api: respx.MockRouter
) -> None:
    burst = [status(500, "InternalError"), status(503, "ServiceUnavailable"), ok(cm("x"))]
    route = api.get(X).mock(side_effect=burst)
    async with client_for(vault, api) as client:
        assert await client.get(CONFIGMAPS, name="x", namespace="ns") == cm("x")
    assert route.call_count == 3


async def test_server_errors_give_up_after_the_last_backoff(
    vault: Vault, api: respx.MockRouter
) -> None:
    route = api.get(X).mock(status(500, "InternalError", "etcd is down"))
    async with client_for(vault, api) as client:
        with pytest.raises(ServerError, match="etcd is down"):
            await client.get(CONFIGMAPS, name="x", namespace="ns")
    assert route.call_count == 4


async def test_a_server_error_on_create_is_not_retried(vault: Vault, api: respx.MockRouter) -> None:
    route = api.post("/api/v1/namespaces/ns/configmaps")
    route.side_effect = [status(504, "Timeout", "maybe it was created"), ok(cm("x"))]
    async with client_for(vault, api) as client:
        with pytest.raises(ServerError):
            await client.create(CONFIGMAPS, cm("x"))
    assert route.call_count == 1


async def test_connection_errors_are_retried_for_reads(vault: Vault, api: respx.MockRouter) -> None:
    failures: list[Exception | httpx.Response] = [
        httpx.ConnectError("refused"), httpx.ReadError("reset"), ok(cm("x"))
    ]  # fmt: skip
    route = api.get(X).mock(side_effect=failures)
    async with client_for(vault, api) as client:
        assert await client.get(CONFIGMAPS, name="x", namespace="ns") == cm("x")
    assert route.call_count == 3


async def test_a_create_is_not_resent_after_a_read_error(
    vault: Vault, api: respx.MockRouter
) -> None:
    route = api.post("/api/v1/namespaces/ns/configmaps")
    route.side_effect = [httpx.ReadError("connection reset"), ok(cm("x"), 201)]
    async with client_for(vault, api) as client:
        with pytest.raises(TransportError, match="ReadError") as error:
            await client.create(CONFIGMAPS, cm("x"))
    assert route.call_count == 1
    assert isinstance(error.value.__cause__, httpx.ReadError)


async def test_a_create_is_resent_when_it_never_left(vault: Vault, api: respx.MockRouter) -> None:
    route = api.post("/api/v1/namespaces/ns/configmaps")
    route.side_effect = [httpx.ConnectError("refused"), ok(cm("x"), 201)]
    async with client_for(vault, api) as client:
        assert await client.create(CONFIGMAPS, cm("x")) == cm("x")
    assert route.call_count == 2


async def test_an_unguarded_json_patch_is_not_resent_after_a_read_error(
    vault: Vault, api: respx.MockRouter
) -> None:
    route = api.patch(X)
    route.side_effect = [httpx.ReadError("reset"), httpx.ReadError("reset"), ok(cm("x"))]
    ops = [{"op": "add", "path": "/metadata/finalizers/-", "value": "f"}]
    async with client_for(vault, api) as client:
        with pytest.raises(TransportError):
            await client.patch(CONFIGMAPS, ops, name="x", namespace="ns", patch_type=PatchType.JSON)
        ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": "1"})
        await client.patch(CONFIGMAPS, ops, name="x", namespace="ns", patch_type=PatchType.JSON)
    assert route.call_count == 3


async def test_a_slow_answer_times_out_and_is_retried(vault: Vault, api: respx.MockRouter) -> None:
    attempts: list[httpx.Request] = []

    async def slow_at_first(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        if len(attempts) == 1:
            # Cancelled once the client gives up (0.05 s): real time, as the client opens its
            # session in a thread, which a fake clock would jump past.
            await anyio.sleep(DEADLINE)
            return ok(cm("late"))
        return ok(cm("x"))

    api.get(X).mock(side_effect=slow_at_first)
    async with client_for(vault, api, request_timeout=0.05) as client:
        with anyio.fail_after(DEADLINE):
            assert await client.get(CONFIGMAPS, name="x", namespace="ns") == cm("x")
    assert len(attempts) == 2


async def test_httpx_errors_never_escape(vault: Vault, api: respx.MockRouter) -> None:
    api.get(X).mock(side_effect=httpx.RemoteProtocolError("garbage"))
    async with client_for(vault, api) as client:
        with pytest.raises(TransportError):
            await client.get(CONFIGMAPS, name="x", namespace="ns")


# Credentials


async def test_401_invalidates_the_credential_and_retries_after_a_relogin(
    api: respx.MockRouter,
) -> None:
    vault = await vault_with("old")

    def by_token(request: httpx.Request) -> httpx.Response:
        if request.headers["Authorization"] == "Bearer old":
            return status(401, "Unauthorized", "token expired")
        return ok(cm("x"))

    route = api.get(X).mock(side_effect=by_token)
    result: dict[str, Any] = {}
    async with client_for(vault, api) as client, anyio.create_task_group() as tg:

        async def fetch() -> None:
            result["body"] = await client.get(CONFIGMAPS, name="x", namespace="ns")

        tg.start_soon(fetch)
        with anyio.fail_after(DEADLINE):
            await vault.wait_for_emptiness()  # the engine's login activity wakes up here
            await vault.populate({"relogin": ConnectionInfo(SERVER, token="new")})
    assert result["body"] == cm("x")
    assert [call.request.headers["Authorization"] for call in route.calls] == [
        "Bearer old",
        "Bearer new",
    ]


async def test_a_credential_rejected_again_and_again_fails_in_the_end(
    api: respx.MockRouter,
) -> None:
    vault = await vault_with("a", "b", "c", "d", "e")
    route = api.get(X).mock(status(401, "Unauthorized"))
    async with client_for(vault, api) as client:
        with anyio.fail_after(DEADLINE), pytest.raises(UnauthorizedError):
            await client.get(CONFIGMAPS, name="x", namespace="ns")
    tried = [call.request.headers["Authorization"] for call in route.calls]
    assert len(tried) == len(set(tried)) == 4  # each attempt with the vault's next credential


async def test_secrets_never_reach_the_logs(
    vault: Vault, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "c2VjcmV0LWRhdGE="}}
    api.get("/api/v1/namespaces/ns/secrets/s").mock(
        side_effect=[status(500, "InternalError"), ok(secret)]
    )
    caplog.set_level(logging.DEBUG)
    async with client_for(vault, api) as client:
        await client.request(Request("GET", "/api/v1/namespaces/ns/secrets/s"))
    assert "Request attempt #1" in caplog.text
    assert "secret-token" not in caplog.text
    assert "c2VjcmV0LWRhdGE=" not in caplog.text


async def test_a_body_without_a_name_cannot_be_replaced_or_applied(
    vault: Vault, api: respx.MockRouter
) -> None:
    async with client_for(vault, api) as client:
        with pytest.raises(ValueError, match=r"metadata\.name"):
            await client.replace(CONFIGMAPS, {"metadata": {"namespace": "ns"}})
        with pytest.raises(ValueError, match=r"metadata\.name"):
            await client.apply(CONFIGMAPS, {"data": {}}, field_manager="me")
    assert not api.calls.called


@pytest.mark.parametrize(("trust_env", "expected"), [(False, False), (True, True)])
async def test_proxies_come_from_the_environment_only_when_trusted(
    vault: Vault, api: respx.MockRouter, trust_env: bool, expected: bool
) -> None:
    seen: list[ConnectionInfo] = []
    api.get(X).respond(json=cm("x"))

    def factory(info: ConnectionInfo, context: object) -> httpx.AsyncBaseTransport:
        seen.append(info)
        return httpx.MockTransport(api.async_handler)

    options = settings(trust_env=trust_env)
    async with open_client(vault, settings=options, transport_factory=factory) as client:
        await client.get(CONFIGMAPS, name="x", namespace="ns")
    environ = {"HTTPS_PROXY": "http://proxy.test:3128"}
    assert (seen[0].effective_proxy_url(environ) is not None) is expected


async def test_requests_wait_for_credentials(api: respx.MockRouter) -> None:
    vault = Vault()
    route = api.get(X).respond(json=cm("x"))
    with anyio.fail_after(DEADLINE):
        async with client_for(vault, api) as client, anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(client.get, CONFIGMAPS, name="x", namespace="ns"))
            await anyio.wait_all_tasks_blocked()
            assert not route.called
            await vault.populate({"late": ConnectionInfo(SERVER, token="late")})
    assert route.calls.last.request.headers["Authorization"] == "Bearer late"


async def test_the_limiter_is_shared_by_all_requests(vault: Vault, api: respx.MockRouter) -> None:
    route = api.get(X).respond(json=cm("x"))
    async with client_for(vault, api, qps=0.001, burst=5) as client:
        limiter = client.sessions.limiter
        for _ in range(5):
            await client.get(CONFIGMAPS, name="x", namespace="ns")
        assert limiter.reserve(anyio.current_time()) > 0  # the burst is used up
    assert route.call_count == 5
