"""Calling user code: async functions in the caller's task, sync ones in worker threads.

Every handler, daemon, timer, filter callback and activity goes through :func:`invoke`. Sync
functions run in anyop's daemon threads (:mod:`anyop.engine.executor`) under a capacity
limiter, with the caller's context variables copied, so one blocking handler never blocks the event
loop or other objects, and never keeps the process alive after the operator has exited.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import traceback
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import sniffio

from anyop.engine.executor import run_sync
from anyop.errors import PermanentError
from anyop.handlers.context import current_body
from anyop.kube.inflight import unclaimed

__all__ = [
    "DEFAULT_MAX_WORKERS",
    "AsyncioOnTrioError",
    "asyncio_on_trio",
    "calling",
    "current_body",
    "invoke",
    "is_async",
    "use_context",
]


DEFAULT_MAX_WORKERS = 40
"""How many sync handlers run at once unless ``settings.execution.max_workers`` says otherwise."""


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns an awaitable (also for partials and callable objects)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 (a callable object's async __call__)
    return call is not None and inspect.iscoroutinefunction(call)


class use_context:  # lower case: used as a function, like contextlib.suppress
    """Make the object of a running handler ambient for helpers it calls (``adopt``).

    A context manager (a class: a generator-based one costs several times more per handler call).
    """

    __slots__ = ("_body", "_token")

    def __init__(self, body: Mapping[str, Any] | None) -> None:
        self._body = body

    def __enter__(self) -> None:
        self._token = current_body.set(self._body)

    def __exit__(self, *exc_info: object) -> None:
        current_body.reset(self._token)


async def invoke(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    *,
    limiter: anyio.CapacityLimiter | None = None,
    body: Mapping[str, Any] | None = None,
) -> Any:
    """Call ``fn(**kwargs)`` and return its result.

    Args:
        fn: An async or sync callable.
        kwargs: All the kwargs; user functions accept them with ``**kwargs``.
        limiter: Bounds how many sync functions run in threads at once; ``None``: no bound
            (sync daemons, which must never wait for each other).
        body: The object the call is about, made ambient for ``adopt``.

    Caveats:
        A sync function cannot be interrupted: when the caller is cancelled, its thread is
        abandoned and finishes on its own.
    """
    with use_context(body), unclaimed():  # no place in flight is held while the user's code runs
        try:
            return await calling(fn, kwargs, limiter=limiter)
        except RuntimeError as error:
            if (problem := asyncio_on_trio(fn, error)) is None:
                raise
            raise problem from None


_ASYNCIO = str(Path(asyncio.__file__).parent)


class AsyncioOnTrioError(PermanentError):
    """A function uses asyncio while the operator runs on Trio: no retry can help it."""


def asyncio_on_trio(fn: Callable[..., Any], error: BaseException) -> AsyncioOnTrioError | None:
    """What to report instead of ``error``, if it is asyncio failing under Trio (else ``None``).

    An async function that calls ``asyncio.sleep()`` (or anything that needs asyncio's running
    loop) fails on Trio with ``RuntimeError: no running event loop`` from inside asyncio. That is
    final for this function, and its traceback says nothing useful: the message names the
    function and says what runs it.
    """
    if not isinstance(error, RuntimeError) or not _on_trio():
        return None
    frames = traceback.extract_tb(error.__traceback__)
    if not any(frame.filename.startswith(_ASYNCIO) for frame in frames):
        return None
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return AsyncioOnTrioError(
        f"{name}() uses asyncio ({error}), but the operator runs on Trio (--backend trio). "
        f"Run the operator with --backend asyncio (the default), or use AnyIO's functions "
        f"(anyio.sleep(), anyio.to_thread.run_sync(), ...), which run on both."
    )


def _on_trio() -> bool:
    try:
        return sniffio.current_async_library() == "trio"
    except sniffio.AsyncLibraryNotFoundError:
        return False


def calling(
    fn: Callable[..., Any], kwargs: Mapping[str, Any], *, limiter: anyio.CapacityLimiter | None
) -> Awaitable[Any]:
    """What to await for ``fn(**kwargs)``: an async function's own coroutine, or a sync one's
    run in a worker thread (see :func:`invoke`, which also makes the body ambient).

    A daemon awaits its function for the object's whole life: this is not a coroutine, so no
    frame of it, and no reference to ``kwargs`` (the function has its own dict of them), stays
    alive meanwhile.
    """
    if is_async(fn):
        return cast(Awaitable[Any], fn(**kwargs))
    return run_sync(functools.partial(fn, **kwargs), limiter=limiter)
