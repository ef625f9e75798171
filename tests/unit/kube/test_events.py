"""Posting Kubernetes Events: the body (pure), and failures that never raise."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import respx

from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.events import event_body, post_event
from anyop.settings import OperatorSettings

NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)
KEX = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex1", "namespace": "ns1", "uid": "uid1", "resourceVersion": "42"},
    "spec": {"field": "value"},
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "uid": "uid2"}}


def settings(**posting: Any) -> OperatorSettings:
    return OperatorSettings.model_validate({"posting": posting})


def test_the_event_describes_the_involved_object() -> None:
    body = event_body(
        KEX, type="Normal", reason="Created", message="It is done.", settings=settings(), now=NOW
    )
    assert body == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": "ns1", "generateName": "anyop-event-"},
        "involvedObject": {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "name": "kex1",
            "namespace": "ns1",
            "uid": "uid1",
            "resourceVersion": "42",
        },
        "type": "Normal",
        "reason": "Created",
        "message": "It is done.",
        "action": "Action?",
        "reportingComponent": "anyop",
        "reportingInstance": "dev",
        "source": {"component": "anyop"},
        "firstTimestamp": "2030-01-02T03:04:05Z",
        "lastTimestamp": "2030-01-02T03:04:05Z",
        "eventTime": "2030-01-02T03:04:05.678901Z",
        "count": 1,
    }


def test_the_reporter_and_the_name_prefix_come_from_the_settings() -> None:
    custom = settings(reporting_component="op", reporting_instance="pod-7", event_name_prefix="e-")
    body = event_body(KEX, type="Normal", reason="R", message="m", settings=custom)
    assert (body["reportingComponent"], body["reportingInstance"]) == ("op", "pod-7")
    assert body["source"] == {"component": "op"}
    assert body["metadata"]["generateName"] == "e-"


def test_events_about_cluster_scoped_objects_go_to_the_default_namespace() -> None:
    body = event_body(NAMESPACE, type="Warning", reason="R", message="m", settings=settings())
    assert body["metadata"]["namespace"] == "default"
    assert "namespace" not in body["involvedObject"]


def test_long_messages_lose_their_middle() -> None:
    message = "A" * 600 + "B" * 600 + "C" * 600
    cut = event_body(KEX, type="Normal", reason="R", message=message, settings=settings())[
        "message"
    ]
    assert len(cut) == 1024
    assert cut.startswith("A" * 510)
    assert cut.endswith("C" * 510)
    assert "..." in cut


SERVER = "https://k8s.test"
EVENTS = "/api/v1/namespaces/ns1/events"


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """The API server: respx routes, each of which must be called.

    ``post_event`` swallows every error, respx's "not mocked" included, so a request that no
    route matches is answered with an empty 200 and recorded in ``api.calls`` instead.
    """
    with respx.mock(base_url=SERVER, using=None, assert_all_mocked=False) as router:
        yield router


async def client_for(api: respx.Router, default_namespace: str | None = None) -> KubeClient:
    vault = Vault()
    info = ConnectionInfo(SERVER, token="t", default_namespace=default_namespace)
    await vault.populate({"t": info})
    factory = lambda info, ctx: httpx.MockTransport(api.async_handler)  # noqa: E731
    no_waits = OperatorSettings.model_validate({"networking": {"error_backoffs": (0.001,)}})
    return open_client(vault, settings=no_waits, transport_factory=factory)


@pytest.mark.anyio
async def test_an_event_is_posted_to_the_objects_namespace(api: respx.MockRouter) -> None:
    route = api.post(EVENTS).respond(201, json={"kind": "Event"})
    async with await client_for(api) as client:
        await post_event(client, obj=KEX, type="Normal", reason="Created", message="Hi")
    assert api.calls.call_count == route.call_count == 1
    assert json.loads(route.calls.last.request.content)["involvedObject"]["name"] == "kex1"


@pytest.mark.anyio
@pytest.mark.parametrize(("default_namespace", "posted_to"), [("ops", "ops"), (None, "default")])
async def test_events_about_cluster_scoped_objects_go_to_the_credentials_default_namespace(
    api: respx.MockRouter, default_namespace: str | None, posted_to: str
) -> None:
    route = api.post(f"/api/v1/namespaces/{posted_to}/events").respond(201, json={})
    async with await client_for(api, default_namespace) as client:
        await post_event(client, obj=NAMESPACE, type="Normal", reason="Seen", message="Hi")
    assert api.calls.call_count == route.call_count == 1
    assert json.loads(route.calls.last.request.content)["metadata"]["namespace"] == posted_to


@pytest.mark.anyio
@pytest.mark.parametrize("api_version", ["v1", "events.k8s.io/v1"])
async def test_events_about_events_are_never_posted(
    api: respx.MockRouter, api_version: str
) -> None:
    event = {
        "apiVersion": api_version,
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "n"},
    }
    async with await client_for(api) as client:
        await post_event(client, obj=event, type="Normal", reason="Loop", message="no")
    assert not api.calls.called


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        lambda request: httpx.Response(
            403, json={"kind": "Status", "code": 403, "message": "events is forbidden"}
        ),
        lambda request: httpx.Response(500, text="<html>oops</html>"),
        httpx.ReadError("connection reset"),
    ],
    ids=["forbidden", "server-error", "reset"],
)
async def test_a_failure_to_post_is_logged_and_ignored(
    api: respx.MockRouter,
    answer: Callable[[httpx.Request], httpx.Response] | Exception,
    caplog: pytest.LogCaptureFixture,
) -> None:
    route = api.post(EVENTS).mock(side_effect=answer)  # the same answer to every attempt
    async with await client_for(api) as client:
        await post_event(client, obj=KEX, type="Warning", reason="Failed", message="Boom")
    assert "Failed to post an event. Ignoring and continuing." in caplog.text
    assert "reason='Failed'" in caplog.text
    assert api.calls.call_count == route.call_count == 1  # a create is never sent twice
