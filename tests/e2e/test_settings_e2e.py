"""Kopf's execution settings do what they say, on the real control plane."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, delete_and_wait, running

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient
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


@pytest.mark.parametrize(
    ("background", "lingering", "writes"),
    [
        ({}, 0.0, 1),  # ten turns of the loop are enough for a daemon that exits at once
        ({"instant_exit_zero_time_cycles": 0}, 0.0, 2),
        ({"instant_exit_timeout": 5.0}, 0.3, 1),
        ({}, 0.3, 2),  # too slow for an instant: the release is left to the next cycle
    ],
    ids=["instant", "no-instant", "timeout", "slow"],
)
async def test_a_daemon_that_exits_in_an_instant_costs_the_deletion_no_second_write(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    background: dict[str, Any],
    lingering: float,
    writes: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    deletions: list[str] = []
    started = anyio.Event()

    @on.daemon("kopfexamples", registry=registry, id="daemon_fn", cancellation_backoff=5)
    async def daemon_fn(stopped: Any, **_: Any) -> None:
        started.set()
        await stopped.wait()
        await anyio.sleep(lingering)

    @on.delete("kopfexamples", registry=registry, id="delete_fn")
    async def delete_fn(name: str, **_: Any) -> None:
        deletions.append(name)

    sent: list[Any] = []
    original = KubeClient.patch

    async def counting(self: KubeClient, *args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("subresource"))
        return await original(self, *args, **kwargs)

    caplog.set_level(logging.DEBUG, logger="anyop")
    settings = OperatorSettings.model_validate({"background": background})
    async with running(registry, anyop_namespace, settings):
        await create(api, anyop_namespace, "instant")
        with anyio.fail_after(DEADLINE):
            await started.wait()
            await anyio.sleep(0.5)  # the finalizer is in place
        monkeypatch.setattr(KubeClient, "patch", counting)
        await delete_and_wait(api, anyop_namespace, "instant")
    assert deletions == ["instant"]
    assert len(sent) == writes
