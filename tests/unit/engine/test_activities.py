"""Startup and cleanup activities: retried until success, a final failure fails the activity."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

import anyop.on as on
from anyop.engine.indexer import operator_indexes
from anyop.engine.operator.activities import ActivityError, activity_kwargs, run_activity
from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.bodies import Memo
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import Index
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio


async def test_a_startup_handler_is_retried_until_it_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    registry = OperatorRegistry()
    retries: list[int] = []

    @on.startup(registry=registry, id="startup_fn_retried")
    async def startup_fn_retried(retry: int, settings: OperatorSettings, **_: Any) -> str:
        retries.append(retry)
        settings.watching.inactivity_timeout = 30
        if retry < 3:
            raise TemporaryError("Going to succeed soon.", delay=0)
        return "done"

    settings = OperatorSettings()
    with anyio.fail_after(5):
        results = await run_activity(registry, Activity.STARTUP, settings=settings, memo=Memo())
    assert results == {"startup_fn_retried": "done"}
    assert retries == [0, 1, 2, 3]
    assert settings.watching.inactivity_timeout == 30
    assert "Activity 'startup_fn_retried' succeeded." in caplog.messages


async def test_a_permanent_failure_fails_the_activity_and_names_the_handler() -> None:
    registry = OperatorRegistry()

    @on.startup(registry=registry, id="broken_startup")
    def broken_startup(**_: Any) -> None:
        raise PermanentError("no database")

    with pytest.raises(ActivityError, match="broken_startup") as info:
        await run_activity(registry, Activity.STARTUP, settings=OperatorSettings(), memo=Memo())
    assert str(info.value.failures["broken_startup"]) == "no database"


async def test_all_handlers_of_an_activity_share_the_memo_and_run_once() -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    @on.cleanup(registry=registry)
    async def first(memo: Memo, **_: Any) -> None:
        calls.append("first")
        memo.seen = True

    @on.cleanup(registry=registry)
    def second(memo: Memo, **_: Any) -> None:
        calls.append("second")

    memo = Memo()
    await run_activity(registry, Activity.CLEANUP, settings=OperatorSettings(), memo=memo)
    assert sorted(calls) == ["first", "second"]
    assert memo.seen is True


async def test_an_activity_without_handlers_does_nothing() -> None:
    registry = OperatorRegistry()
    assert (
        await run_activity(registry, Activity.STARTUP, settings=OperatorSettings(), memo=None) == {}
    )


async def test_operator_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from anyop.engine.operator import launch as running

    seen: list[OperatorSettings] = []

    async def fake_serve(**kwargs: Any) -> None:
        seen.append(kwargs["settings"])

    monkeypatch.setattr(running, "serve", fake_serve)
    monkeypatch.setenv("ANYOP_WATCHING__INACTIVITY_TIMEOUT", "12.5")
    await running.operator(registry=OperatorRegistry(), namespaces=["x"])
    assert seen[0].watching.inactivity_timeout == 12.5


def test_an_index_named_like_a_framework_kwarg_wins_as_for_resource_handlers() -> None:
    registry = OperatorRegistry()
    on.index("kopfexamples", registry=registry, id="settings")(lambda **_: None)
    kwargs = activity_kwargs(
        OperatorSettings(), Memo(), Activity.STARTUP, indexes=operator_indexes(registry)
    )
    assert isinstance(kwargs["settings"], Index)
    assert isinstance(kwargs["memo"], Memo)
