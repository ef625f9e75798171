"""Kubernetes Events posted by handlers (sync and async) and by object loggers."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


async def events_about(
    api: httpx.AsyncClient, namespace: str, name: str, count: int
) -> list[dict[str, Any]]:
    """Poll the namespace's Events about one object until there are ``count`` of them."""
    params = {"fieldSelector": f"involvedObject.name={name}"}
    with anyio.fail_after(DEADLINE):
        while True:
            response = await api.get(f"/api/v1/namespaces/{namespace}/events", params=params)
            items: list[dict[str, Any]] = response.json()["items"]
            if len(items) >= count:
                return sorted(items, key=lambda item: item["reason"])
            await anyio.sleep(0.1)


async def test_handlers_post_events_from_the_loop_and_from_threads(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="async_fn")
    async def async_fn(body: anyop.Body, **_: Any) -> None:
        anyop.info(body, reason="AsyncInfo", message="from the event loop")

    @on.create("kopfexamples", registry=registry, id="sync_fn")
    def sync_fn(body: anyop.Body, **_: Any) -> None:
        anyop.warn([body], reason="SyncWarn", message="from a thread")
        try:
            raise ValueError("boom")
        except ValueError:
            anyop.exception(body, message="It failed:")

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "evented")
        events = await events_about(api, anyop_namespace, "evented", 3)
    assert [(e["reason"], e["type"], e["message"]) for e in events] == [
        ("AsyncInfo", "Normal", "from the event loop"),
        ("SyncWarn", "Warning", "from a thread"),
        ("ValueError", "Warning", "It failed: boom"),
    ]
    assert all(e["involvedObject"]["kind"] == "KopfExample" for e in events)


async def test_object_loggers_post_events_when_enabled(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="logging_fn")
    async def logging_fn(logger: anyop.Logger, **_: Any) -> None:
        logger.debug("too quiet to be an Event")
        logger.warning("Something looks odd.")

    settings = OperatorSettings.model_validate({"posting": {"loggers": True}})
    async with running(registry, anyop_namespace, settings):
        await create(api, anyop_namespace, "logged")
        events = await events_about(api, anyop_namespace, "logged", 3)
    messages = {(e["type"], e["message"]) for e in events}
    assert ("Warning", "Something looks odd.") in messages
    assert ("Normal", "Handler 'logging_fn' succeeded.") in messages
    assert all(e["reason"] == "Logging" for e in events)
    assert not any("too quiet" in message for _, message in messages)


async def test_posting_disabled_posts_nothing(api: httpx.AsyncClient, anyop_namespace: str) -> None:
    registry = OperatorRegistry()
    done = anyio.Event()

    @on.create("kopfexamples", registry=registry, id="quiet_fn")
    async def quiet_fn(body: anyop.Body, **_: Any) -> None:
        anyop.info(body, reason="Nope")
        done.set()

    settings = OperatorSettings.model_validate({"posting": {"enabled": False}})
    async with running(registry, anyop_namespace, settings):
        await create(api, anyop_namespace, "quiet")
        with anyio.fail_after(DEADLINE):
            await done.wait()
        await anyio.sleep(0.5)
    response = await api.get(f"/api/v1/namespaces/{anyop_namespace}/events")
    assert response.json()["items"] == []
