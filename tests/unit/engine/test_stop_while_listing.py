"""A stop is honoured while a resource's first listing still fails (a 403 of missing RBAC)."""

from __future__ import annotations

import functools
import logging
from typing import Any

import anyio
import pytest

import anyop
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import FakeCluster, Fault

pytestmark = pytest.mark.anyio

KEX = "/apis/kopf.dev/v1/namespaces/default/kopfexamples"


@pytest.fixture
def fake_cluster(kex_cluster: FakeCluster) -> FakeCluster:
    return kex_cluster  # with the KopfExample CRD (tests/unit/conftest.py)


@pytest.fixture
def anyop_cluster() -> str:
    return "fake"


@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_an_operator_refused_its_listing_stops_when_asked(
    fake_cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    anyop.on.create("kopfexamples", registry=registry, id="greet")(lambda **_: "hi")
    fake_cluster.faults.script(Fault.forbidden(), method="GET", path="/kopfexamples", times=None)
    stop, ready = anyio.Event(), anyio.Event()
    run = functools.partial(serve, registry, namespaces=["default"])
    with caplog.at_level(logging.WARNING, logger="anyop"), anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(run, stop_event=stop, ready_event=ready))
            while "is forbidden" not in caplog.text:
                await anyio.sleep(0.05)
            stop.set()  # it waited for a listing that would never come, and did not stop
    assert not ready.is_set()
    assert 'cannot list resource "kopfexamples" in API group "kopf.dev"' in caplog.text


async def _refusal(cluster: FakeCluster, method: str, path: str, **params: str) -> str:
    cluster.faults.script(Fault.forbidden(user="system:serviceaccount:ops:op"), times=None)
    async with cluster.client() as api:
        answer = await api.request(method, path, params=params)
    assert answer.status_code == 403
    body: dict[str, Any] = answer.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)
    assert body["details"]["group"] == "kopf.dev"
    return str(body["message"])


@pytest.mark.parametrize(
    ("method", "path", "params", "verb"),
    [
        ("GET", KEX, {}, "list"),
        ("GET", KEX, {"watch": "true"}, "watch"),
        ("DELETE", KEX, {}, "deletecollection"),
        ("POST", KEX, {}, "create"),
    ],
)
async def test_a_forbidden_fault_words_the_refusal_as_the_api_server(
    fake_cluster: FakeCluster, method: str, path: str, params: dict[str, str], verb: str
) -> None:
    message = await _refusal(fake_cluster, method, path, **params)
    assert message == (
        'kopfexamples.kopf.dev is forbidden: User "system:serviceaccount:ops:op" cannot '
        f'{verb} resource "kopfexamples" in API group "kopf.dev" in the namespace "default"'
    )


async def test_a_forbidden_fault_names_the_object_and_its_subresource(
    fake_cluster: FakeCluster,
) -> None:
    message = await _refusal(fake_cluster, "PATCH", f"{KEX}/x/status")
    assert message.startswith('kopfexamples.kopf.dev "x" is forbidden: User "system:')
    assert 'cannot patch resource "kopfexamples/status" in API group "kopf.dev"' in message
