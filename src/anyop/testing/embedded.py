"""Run an operator inside an async test's own task group, on Trio or asyncio.

::

    async def test_my_operator(anyop_namespace):
        async with run_operator(registry, namespaces=[anyop_namespace]):
            ...  # create objects, wait for their status

Unlike :class:`~anyop.testing.OperatorRunner` (the CLI in a thread), the operator shares the
test's event loop, so the test can await the same events and objects the handlers touch.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from typing import Any

import anyio

from anyop.engine.operator.launch import operator, single_error
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

__all__ = ["run_operator"]


@asynccontextmanager
async def run_operator(
    registry: OperatorRegistry | None = None,
    *,
    namespaces: Collection[str] = (),
    clusterwide: bool = False,
    settings: OperatorSettings | None = None,
    memo: Any = None,
    ready_timeout: float = 60.0,
    **options: Any,
) -> AsyncIterator[None]:
    """Run the operator for the duration of the block: ready on entry, stopped gracefully on exit.

    Startup handlers run before the block starts and cleanup handlers after it ends, as with
    ``anyop run``. An error of the operator (e.g. a failed startup) is raised from the block.

    Args:
        registry: The handlers (the default registry if ``None``).
        namespaces: The namespaces (patterns) to serve.
        clusterwide: Serve the whole cluster instead.
        settings: The settings (from the environment if ``None``).
        memo: The operator's memo.
        ready_timeout: Seconds to wait for readiness (every initial listing done).
        options: More keyword arguments of :func:`anyop.operator`, e.g. ``liveness_endpoint``.

    Raises:
        TimeoutError: The operator was not ready within ``ready_timeout``.
    """
    stop, ready = anyio.Event(), anyio.Event()
    running = functools.partial(
        operator,
        registry=registry,
        settings=settings,
        namespaces=namespaces,
        clusterwide=clusterwide,
        memo=memo,
        stop_flag=stop,
        ready_flag=ready,
        **options,
    )
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(running)
            try:
                with anyio.fail_after(ready_timeout):
                    await ready.wait()
                yield
            finally:
                stop.set()
    except BaseExceptionGroup as group:
        raise single_error(group) from None
