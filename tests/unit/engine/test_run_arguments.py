"""Kopf's arguments of run()/operator(): every flag type Kopf allows, and ``run(loop=...)``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
import sniffio

import anyop
from anyop.engine.operator.launch import _set_flag, _wait_flag
from anyop.errors import ConfigError

pytestmark = pytest.mark.anyio

KINDS = ["concurrent-future", "threading-event", "asyncio-future", "asyncio-event", "anyio-event"]


@pytest.fixture
def foreign_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An asyncio loop that is not running (asyncio's flags on Trio belong to one)."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make_flag(kind: str, foreign: asyncio.AbstractEventLoop) -> tuple[Any, Callable[[], bool]]:
    """A flag of that kind, and how to see that it is set."""
    on_asyncio = sniffio.current_async_library() == "asyncio"
    flag: Any
    match kind:
        case "concurrent-future":
            flag = concurrent.futures.Future()
        case "threading-event":
            flag = threading.Event()
        case "asyncio-future":
            flag = (asyncio.get_running_loop() if on_asyncio else foreign).create_future()
        case "asyncio-event":
            flag = asyncio.Event()
        case _:
            flag = anyio.Event()
    done = getattr(flag, "done", None) or flag.is_set
    return flag, done


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stop_flag_of_every_kopf_type_is_waited_for(
    kind: str, foreign_loop: asyncio.AbstractEventLoop
) -> None:
    flag, _ = make_flag(kind, foreign_loop)
    waited = anyio.Event()

    async def wait() -> None:
        await _wait_flag(flag)
        waited.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.sleep(0.2)
        assert not waited.is_set()
        _set_flag(flag)
        with anyio.fail_after(10):
            await waited.wait()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_ready_flag_of_every_kopf_type_is_set(
    kind: str, foreign_loop: asyncio.AbstractEventLoop
) -> None:
    flag, done = make_flag(kind, foreign_loop)
    _set_flag(flag)
    _set_flag(flag)  # twice: a future's result is set once
    assert done()


async def test_a_concurrent_future_set_in_another_thread_stops_the_wait() -> None:
    flag: concurrent.futures.Future[None] = concurrent.futures.Future()
    timer = threading.Timer(0.1, flag.set_result, (None,))
    timer.start()
    try:
        with anyio.fail_after(10):
            await _wait_flag(flag)
    finally:
        timer.join()


async def test_a_flag_of_another_type_is_refused_with_the_types_allowed() -> None:
    with pytest.raises(ConfigError, match=r"concurrent\.futures\.Future, a threading\.Event"):
        await _wait_flag(object())
    with pytest.raises(ConfigError, match="got object"):
        _set_flag(object())


def test_run_with_a_loop_and_the_trio_backend_is_refused(
    foreign_loop: asyncio.AbstractEventLoop,
) -> None:
    with pytest.raises(ConfigError, match=r"run\(loop=...\) runs the operator on that asyncio"):
        anyop.run(loop=foreign_loop, backend="trio", clusterwide=True)


def test_run_tasks_ends_the_tasks_started_since_but_leaves_the_ignored_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from anyop.engine.operator import asyncio_tasks

    monkeypatch.setattr(asyncio_tasks, "HUNG_TASKS_TIMEOUT", 0.5)

    async def main() -> tuple[bool, bool, bool]:
        own = asyncio.create_task(asyncio.sleep(3600), name="the program's own")
        ignored = asyncio.all_tasks()
        root = asyncio.create_task(asyncio.sleep(0.05), name="root")
        hung = asyncio.create_task(asyncio.sleep(3600), name="left behind")
        finishing = asyncio.create_task(asyncio.sleep(0.1), name="finishing")
        await anyop.run_tasks([root], ignored=ignored)
        result = hung.cancelled(), finishing.done() and not finishing.cancelled(), own.done()
        own.cancel()
        await asyncio.gather(own, return_exceptions=True)
        return result

    assert asyncio.run(main()) == (True, True, False)
