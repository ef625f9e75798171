"""Kopf's execution settings do what they say, on the real control plane."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]


async def test_sync_handlers_daemons_and_timers_run_in_the_executor_of_the_settings(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    threads: dict[str, str] = {}

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> None:
        threads["create"] = threading.current_thread().name

    @on.daemon("kopfexamples", registry=registry, id="daemon_fn")
    def daemon_fn(stopped: Any, **_: Any) -> None:
        threads["daemon"] = threading.current_thread().name
        stopped.wait()

    @on.timer("kopfexamples", registry=registry, id="timer_fn", interval=60)
    def timer_fn(**_: Any) -> None:
        threads["timer"] = threading.current_thread().name

    executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="users-executor")
    settings = OperatorSettings()
    settings.execution.executor = executor
    try:
        async with running(registry, anyop_namespace, settings):
            await create(api, anyop_namespace, "executed")
            with anyio.fail_after(DEADLINE):
                while len(threads) < 3:
                    await anyio.sleep(0.05)
    finally:
        executor.shutdown(wait=True)
    assert sorted(threads) == ["create", "daemon", "timer"]
    assert all(name.startswith("users-executor") for name in threads.values()), threads


async def test_a_timer_is_retried_after_the_default_backoff(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    calls: list[float] = []

    @on.timer("kopfexamples", registry=registry, id="timer_fn", interval=60)
    async def timer_fn(**_: Any) -> None:
        calls.append(anyio.current_time())
        if len(calls) == 1:
            raise ValueError("the first one fails")

    settings = OperatorSettings()
    settings.execution.default_backoff = 0.2  # not the 60 seconds of the default
    async with running(registry, anyop_namespace, settings):
        await create(api, anyop_namespace, "backing-off")
        with anyio.fail_after(DEADLINE):
            while len(calls) < 2:
                await anyio.sleep(0.05)
    assert 0.2 <= calls[1] - calls[0] < 30  # far from the default's 60 seconds
