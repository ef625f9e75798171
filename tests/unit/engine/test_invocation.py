"""Calling user code: the kwargs, the ambient body, and what a running function keeps alive."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio
import pytest

from anyop.engine.invocation import current_body, invoke

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

        async def call() -> None:
            assert await invoke(daemon, kwargs(), body=BODY) == "kex-3 ['extra']"

        tg.start_soon(call)
        await started.wait()
        gc.collect()
        assert refs[0]() is None
        release.set()
