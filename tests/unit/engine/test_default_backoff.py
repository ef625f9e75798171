"""``settings.execution.default_backoff``: the retry delay after an arbitrary error, everywhere."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from tests.unit.engine.test_once import WITH_STATUS, World

import anyop.on as on
from anyop.engine.operator.activities import run_activity
from anyop.handlers.bodies import Memo
from anyop.handlers.causes import Activity
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio


async def test_a_resource_handler_retries_after_the_default_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World("status", WITH_STATUS, 5.0)
    world.settings.execution.default_backoff = 7
    registry = world.reconciler.registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="flaky")
    def flaky(**_: Any) -> None:
        raise ValueError("boom")

    with caplog.at_level(logging.DEBUG, logger="anyop"):
        result = await world.handle(world.server.body(), "ADDED", listed=True)
        while result.delay == 0:  # the finalizer's own cycle first, if any
            result = await world.handle(world.server.body())
    assert result.delay == pytest.approx(7, abs=0.5)
    assert any("will try again in 7 seconds: boom" in m for m in caplog.messages)


async def test_an_activity_retries_after_the_default_backoff() -> None:
    registry = OperatorRegistry()
    attempts: list[int] = []

    @on.startup(registry=registry)
    def startup(retry: int, **_: Any) -> None:
        attempts.append(retry)
        if retry < 2:
            raise ValueError("not yet")

    settings = OperatorSettings()
    settings.execution.default_backoff = 0.01
    with anyio.fail_after(5):  # the default of 60 seconds would not make it
        await run_activity(registry, Activity.STARTUP, settings=settings, memo=Memo())
    assert attempts == [0, 1, 2]


async def test_without_error_delays_a_failed_cycle_waits_for_the_next_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kopf's "no throttling sleeps": no retry is scheduled, and the next event is handled."""
    world = World("status", WITH_STATUS, 5.0, fail=[2])  # the finalizer lands, then a refusal
    world.settings.queueing.error_delays = ()
    result = await world.handle(world.server.body(), "ADDED", listed=True)
    while result.delay == 0:
        result = await world.handle(world.server.body())
    assert result.delay is None
    assert not result.throttled
    assert any(m.startswith("Failed with an unexpected error") for m in caplog.messages)
