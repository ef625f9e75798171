"""Kopf's manual orchestration of the operator's tasks, for asyncio programs.

``tasks = await anyop.spawn_tasks(...)`` then ``await anyop.run_tasks(tasks)`` is what
``await anyop.operator(...)`` does, split in two, as Kopf has it. anyop's operator is one task tree
(everything it starts, it also ends), so its root task is the operator itself. Only asyncio has
free-standing tasks to hand over: on Trio, run :func:`anyop.operator` (or :func:`anyop.serve`) in
a nursery instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

import sniffio

from anyop.engine.operator.launch import operator
from anyop.errors import ConfigError

__all__ = ["run_tasks", "spawn_tasks"]


def _asyncio_only(name: str) -> None:
    library = sniffio.current_async_library()
    if library != "asyncio":
        raise ConfigError(
            f"{name}() hands over asyncio tasks; on {library}, run anyop.operator() or "
            f"anyop.serve() in a nursery (task group) of your own instead."
        )


async def spawn_tasks(**kwargs: Any) -> list[asyncio.Task[None]]:
    """Start the operator as a task of the running asyncio loop; return the root tasks.

    Takes the keyword arguments of :func:`anyop.operator`. The tasks run on their own once the
    loop runs; pass them to :func:`run_tasks` to wait for them and end them gracefully.

    Raises:
        ConfigError: Not on asyncio (see the module's docs).
    """
    _asyncio_only("spawn_tasks")
    task = asyncio.get_running_loop().create_task(operator(**kwargs), name="anyop operator")
    return [task]


async def run_tasks(
    root_tasks: Collection[asyncio.Task[Any]], *, ignored: Collection[asyncio.Task[Any]] = ()
) -> None:
    """Wait until one of the root tasks exits, then end the others; re-raise what they raised.

    Args:
        root_tasks: What :func:`spawn_tasks` returned (or tasks of your own beside them).
        ignored: Kopf's tasks that existed before the operator started and are left alone;
            anyop never reaches beyond its own tasks, so these are only checked to be tasks.

    Raises:
        ConfigError: Not on asyncio.
    """
    _asyncio_only("run_tasks")
    if not all(isinstance(task, asyncio.Task) for task in ignored):
        raise TypeError("run_tasks(ignored=...) takes asyncio tasks.")
    if not root_tasks:
        return
    done, pending = await asyncio.wait(root_tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
