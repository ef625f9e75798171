"""Calling user code: the kwargs, the ambient body, and what a running function keeps alive."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import anyio
import pytest

from anyop.engine.invocation import calling, current_body, invoke, use_context

pytestmark = pytest.mark.anyio

BODY = {"metadata": {"name": "kex-1", "uid": "uid-1"}}


class Kwargs(dict[str, Any]):
    """A dict that a weak reference can follow."""


async def test_an_async_function_gets_its_kwargs_and_the_ambient_body() -> None:
    async def fn(name: str, **_: Any) -> tuple[str, Any]:
        return name, current_body.get()

    assert await invoke(fn, {"name": "kex-1", "extra": 1}, body=BODY) == ("kex-1", BODY)
    assert current_body.get() is None  # reset after the call


async def test_a_sync_function_runs_in_a_thread_with_the_ambient_body() -> None:
    def fn(name: str, **_: Any) -> tuple[str, Any]:
        return name, current_body.get()

    assert await invoke(fn, {"name": "kex-2"}, body=BODY) == ("kex-2", BODY)


async def test_a_running_async_function_holds_the_only_copy_of_its_kwargs() -> None:
    # A daemon runs for as long as its object lives: the caller's dict must not live with it.
    started = anyio.Event()
    release = anyio.Event()
    refs: list[weakref.ref[Kwargs]] = []

    def kwargs() -> Kwargs:
        made = Kwargs(name="kex-3", extra=1)
        refs.append(weakref.ref(made))
        return made

    async def daemon(name: str, **rest: Any) -> str:
        started.set()
        await release.wait()
        return f"{name} {sorted(rest)}"

    async with anyio.create_task_group() as tg:

        async def call() -> None:  # as a daemon's attempt calls its function
            with use_context(BODY):
                assert await calling(daemon, kwargs(), limiter=None) == "kex-3 ['extra']"

        tg.start_soon(call)
        await started.wait()
        gc.collect()
        assert refs[0]() is None
        release.set()


async def test_calling_a_sync_function_runs_it_in_a_thread() -> None:
    def fn(name: str, **_: Any) -> tuple[str, bool]:
        return name, threading.current_thread() is threading.main_thread()

    assert await calling(fn, {"name": "kex-4"}, limiter=None) == ("kex-4", False)
