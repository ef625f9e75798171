"""Sync handlers that wait for a free thread are reported: a throttled warning and a gauge."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import anyop
from anyop.engine import executor
from anyop.engine.executor import Throttle, run_sync
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster
from anyop.testing.handle import open_operator

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"


def test_the_first_warning_is_due_at_once_then_one_per_interval() -> None:
    throttle = Throttle(60.0)
    assert [throttle.due(t) for t in (5.0, 6.0, 64.0, 65.0, 200.0)] == [
        True, False, False, True, True,
    ]  # fmt: skip


def waiting_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "wait for a free thread" in r.getMessage()]


async def hold_the_only_thread(
    limiter: anyio.CapacityLimiter, waiters: int, release: threading.Event
) -> Callable[[], Any]:
    """Start one call that holds the limiter's only thread, then ``waiters`` more calls."""
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    async def run_all() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_sync(hold, limiter=limiter))
            await anyio.to_thread.run_sync(started.wait, 10)
            for _ in range(waiters):
                tg.start_soon(lambda: run_sync(lambda: None, limiter=limiter))
                await anyio.wait_all_tasks_blocked()

    return run_all


@pytest.mark.anyio
async def test_a_call_that_finds_every_thread_busy_warns_with_the_waiting_count(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "WAIT_WARNING_INTERVAL", 0.0)  # every wait warns
    limiter, release = anyio.CapacityLimiter(1), threading.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(await hold_the_only_thread(limiter, 3, release))
            while limiter.statistics().tasks_waiting < 3:
                await anyio.sleep(0.01)
            release.set()
    assert [m.split(" sync")[0] for m in waiting_warnings(caplog)] == ["1", "2", "3"]
    assert "all 1 are busy" in waiting_warnings(caplog)[0]


@pytest.mark.anyio
async def test_the_warning_is_throttled(caplog: pytest.LogCaptureFixture) -> None:
    limiter, release = anyio.CapacityLimiter(1), threading.Event()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(await hold_the_only_thread(limiter, 5, release))
            while limiter.statistics().tasks_waiting < 5:
                await anyio.sleep(0.01)
            release.set()
    assert len(waiting_warnings(caplog)) == 1


@pytest.mark.anyio
async def test_a_call_with_a_free_thread_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    limiter = anyio.CapacityLimiter(2)
    assert await run_sync(lambda: 42, limiter=limiter) == 42
    assert waiting_warnings(caplog) == []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gauge(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not in /metrics:\n{text}")


@pytest.mark.anyio
async def test_an_operator_warns_and_exposes_its_sync_handlers_waiting_for_a_thread() -> None:
    registry, release = OperatorRegistry(), threading.Event()

    @anyop.on.create("kopfexamples", id="slow", registry=registry)
    def slow(**_: Any) -> str:
        release.wait(30)
        return "done"

    settings = anyop.OperatorSettings()
    settings.execution.max_workers = 1
    port = free_port()
    settings.server.metrics_endpoint = f"http://127.0.0.1:{port}/metrics"
    settings.server.metrics_insecure = True  # plain HTTP: the scrape here has no token
    fake = FakeCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    vault = await fake.vault()
    try:
        with fake.routed():
            async with (
                fake.client(timeout=30) as api,
                open_operator(
                    registry, namespace="ns", api=api, vault=vault, settings=settings
                ) as operator,
                httpx.AsyncClient() as scraper,
            ):
                for i in range(4):
                    await operator.create(KEX, {"metadata": {"name": f"kex-{i}"}, "spec": {}})
                line = await operator.wait_for_log("wait for a free thread")
                with anyio.fail_after(30):
                    while True:
                        text = (await scraper.get(f"http://127.0.0.1:{port}/metrics")).text
                        if gauge(text, "anyop_sync_calls_waiting") == 3:
                            break
                        await anyio.sleep(0.05)
                assert gauge(text, "anyop_sync_threads_busy") == 1
                assert gauge(text, "anyop_sync_threads_limit") == 1
                release.set()
                for i in range(4):
                    await operator.wait_for(
                        KEX, f"kex-{i}", lambda o: o["status"]["slow"] == "done"
                    )
                text = (await scraper.get(f"http://127.0.0.1:{port}/metrics")).text
                assert gauge(text, "anyop_sync_calls_waiting") == 0
    finally:
        release.set()
    assert "sync call(s) wait for a free thread: all 1 are busy" in line
