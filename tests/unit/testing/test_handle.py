"""The operator of the ``anyop_operator`` fixture: how its failures reach the test, its logs.

``serve()`` is replaced by small fakes (the seam is the module's ``serve``); the real operator
against the control plane is in ``tests/e2e/test_async_fixtures_e2e.py``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

import anyop
from anyop.logs import ObjectLogger
from anyop.testing import handle
from anyop.testing.handle import RunningOperator, open_operator

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

FakeServe = Callable[..., Awaitable[None]]


class Broken(Exception):
    """What the fake operators raise."""


@asynccontextmanager
async def running(
    monkeypatch: pytest.MonkeyPatch, fake: FakeServe, **options: Any
) -> AsyncIterator[RunningOperator]:
    monkeypatch.setattr(handle, "serve", fake)
    async with (
        httpx.AsyncClient() as api,
        open_operator(anyop.OperatorRegistry(), namespace="ns", api=api, **options) as operator,
    ):
        yield operator


async def test_a_wait_raises_what_the_operator_raised_as_soon_as_it_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failing = anyio.Event()

    async def fake(*, ready_event: anyio.Event, **_: Any) -> None:
        ready_event.set()
        await failing.wait()
        raise Broken("The operator broke.")

    async with running(monkeypatch, fake) as operator:
        failing.set()
        with pytest.raises(Broken, match="The operator broke"):
            await operator.wait_for_log("never logged", timeout=60)  # not the timeout's error
    # the block's end does not raise it again: the test has seen it


async def test_the_end_raises_what_the_operator_raised_when_no_wait_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(*, ready_event: anyio.Event, **_: Any) -> None:
        ready_event.set()
        raise Broken("The operator broke.")

    with pytest.raises(Broken, match="The operator broke"):
        async with running(monkeypatch, fake):
            await anyio.wait_all_tasks_blocked()  # it has raised


async def test_an_operator_that_fails_before_it_is_ready_fails_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(**_: Any) -> None:
        raise Broken("No credentials.")

    with pytest.raises(Broken, match="No credentials"):
        async with running(monkeypatch, fake, ready_timeout=60):
            raise AssertionError("The block runs although the operator is not ready.")


async def test_an_operator_that_is_never_ready_fails_after_the_ready_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(*, stop_event: anyio.Event, **_: Any) -> None:
        await stop_event.wait()

    with pytest.raises(TimeoutError, match=r"The operator was not ready within 0\.05 seconds"):
        async with running(monkeypatch, fake, ready_timeout=0.05):
            raise AssertionError("The block runs although the operator is not ready.")


async def test_an_operator_that_exits_on_its_own_fails_the_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(*, ready_event: anyio.Event, **_: Any) -> None:
        ready_event.set()
        await anyio.sleep(0.01)  # fake time: it exits while the test waits

    async with running(monkeypatch, fake) as operator:
        with pytest.raises(RuntimeError, match="The operator exited before the test ended"):
            await operator.wait_for_log("never logged", timeout=60)


async def test_an_operator_that_does_not_stop_fails_after_the_stop_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def fake(*, ready_event: anyio.Event, **_: Any) -> None:
        ready_event.set()
        await anyio.sleep_forever()

    with pytest.raises(TimeoutError, match=r"The operator did not stop within 0\.05 seconds"):
        async with running(monkeypatch, fake, stop_timeout=0.05):
            pass


async def test_the_anyop_loggers_records_are_kept_at_all_levels_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod1", "namespace": "ns"}}

    async def fake(*, ready_event: anyio.Event, stop_event: anyio.Event, **_: Any) -> None:
        logging.getLogger("anyop.engine").debug("Serving %d resources.", 2)
        ObjectLogger(body=body).info("Handler 'fn' succeeded.")
        logging.getLogger("elsewhere").warning("Not the operator's.")
        ready_event.set()
        await stop_event.wait()

    level = logging.getLogger("anyop").level
    async with running(monkeypatch, fake) as operator:
        line = await operator.wait_for_log("succeeded")
    assert line == "[ns/pod1] Handler 'fn' succeeded."
    assert operator.messages == ["Serving 2 resources.", "[ns/pod1] Handler 'fn' succeeded."]
    assert [r.levelno for r in operator.records] == [logging.DEBUG, logging.INFO]
    assert logging.getLogger("anyop").level == level
    assert not any(isinstance(h, handle.LogRecords) for h in logging.getLogger("anyop").handlers)


async def test_objects_are_addressed_in_the_tests_namespace_unless_cluster_scoped() -> None:
    operator = RunningOperator("ns", httpx.AsyncClient())  # no request is made
    kex = anyop.Resource("kopf.dev", "v1", "kopfexamples")
    nodes = anyop.Resource("", "v1", "nodes", namespaced=False)
    assert operator.url(kex) == "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
    assert operator.url(kex, "x") == "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x"
    assert operator.url(anyop.Resource("", "v1", "pods"), "p") == "/api/v1/namespaces/ns/pods/p"
    assert operator.url(nodes, "n1") == "/api/v1/nodes/n1"
