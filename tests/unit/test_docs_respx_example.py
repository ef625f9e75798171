"""A handler that calls the API through anyop's client, unit-tested with respx: no cluster.

docs/testing.md quotes this file as it is. In an operator, the handler lives in the operator's
module and the tests in its test suite.
"""

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

import anyop
from anyop.errors import ConflictError, ForbiddenError
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client

CONFIGMAPS = anyop.Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
registry = anyop.OperatorRegistry()  # an operator uses the default one: no registry=...


@anyop.on.create("kopfexamples", registry=registry)
async def create_configmap(body: anyop.Body, memo: anyop.Memo, **_: Any) -> dict[str, Any]:
    """Give each KopfExample a ConfigMap of its own; one that exists already is done."""
    client: KubeClient = memo.client  # opened by a startup handler (open_client(vault))
    child: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": body.metadata.name,
            "namespace": body.metadata.namespace,
            "ownerReferences": [anyop.build_owner_reference(body)],
        },
        "data": {"greeting": body.spec.get("greeting", "Hello")},
    }
    with contextlib.suppress(ConflictError):  # handlers run at least once: it may be there
        await client.create(CONFIGMAPS, child)
    return {"configmap": child["metadata"]["name"]}


# The tests

SERVER = "https://k8s.test"
KEX = anyop.Body(
    {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "kex1", "namespace": "ns1", "uid": "uid-1"},
        "spec": {"greeting": "Hi"},
    }
)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """The API server: every route must be called, and a request without a route fails."""
    with respx.mock(base_url=SERVER, using=None) as router:
        yield router


@pytest.fixture
async def client(api: respx.MockRouter) -> AsyncIterator[KubeClient]:
    """anyop's client, sending its requests to the routes (respx cannot patch its transport)."""
    vault = Vault()
    await vault.populate({"test": anyop.ConnectionInfo(SERVER, token="test-token")})
    to_routes = lambda info, ssl_context: httpx.MockTransport(api.async_handler)  # noqa: E731
    async with open_client(vault, transport_factory=to_routes) as client:
        yield client


@pytest.mark.anyio
async def test_the_configmap_is_created_and_owned(
    api: respx.MockRouter, client: KubeClient
) -> None:
    echo = lambda request: httpx.Response(201, content=request.content)  # noqa: E731
    route = api.post("/api/v1/namespaces/ns1/configmaps").mock(side_effect=echo)
    result = await create_configmap(body=KEX, memo=anyop.Memo(client=client))
    assert result == {"configmap": "kex1"}
    sent = json.loads(route.calls.last.request.content)
    assert sent["data"] == {"greeting": "Hi"}
    assert sent["metadata"]["ownerReferences"][0]["uid"] == "uid-1"


@pytest.mark.anyio
async def test_an_existing_configmap_is_done(api: respx.MockRouter, client: KubeClient) -> None:
    exists = {"kind": "Status", "code": 409, "reason": "AlreadyExists"}
    api.post("/api/v1/namespaces/ns1/configmaps").respond(409, json=exists)
    result = await create_configmap(body=KEX, memo=anyop.Memo(client=client))
    assert result == {"configmap": "kex1"}


@pytest.mark.anyio
async def test_a_refusal_fails_the_handler(api: respx.MockRouter, client: KubeClient) -> None:
    forbidden = {"kind": "Status", "code": 403, "message": "configmaps is forbidden"}
    api.post("/api/v1/namespaces/ns1/configmaps").respond(403, json=forbidden)
    with pytest.raises(ForbiddenError, match="configmaps is forbidden"):
        await create_configmap(body=KEX, memo=anyop.Memo(client=client))
