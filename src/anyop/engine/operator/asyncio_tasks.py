"""Kopf's manual orchestration of the operator's tasks, for asyncio programs.

``tasks = await anyop.spawn_tasks(...)`` then ``await anyop.run_tasks(tasks)`` is what
``await anyop.operator(...)`` does, split in two, as Kopf has it. anyop's operator is one task tree
(everything it starts, it also ends), so its root task is the operator itself. Only asyncio has
free-standing tasks to hand over: on Trio, run :func:`anyop.operator` (or :func:`anyop.serve`) in
a nursery instead.
"""

from __future__ import annotations

import asyncio
import weakref
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
    existing = weakref.WeakSet(asyncio.all_tasks())
    task = asyncio.get_running_loop().create_task(operator(**kwargs), name="anyop operator")
    _EXISTING[task] = existing
    return [task]


_EXISTING: weakref.WeakKeyDictionary[asyncio.Task[Any], weakref.WeakSet[asyncio.Task[Any]]] = (
    weakref.WeakKeyDictionary()
)
"""The tasks that existed when each root task was spawned: never the operator's (Kopf's rule)."""


HUNG_TASKS_TIMEOUT = 5.0
"""Seconds that the loop's other tasks get to finish on their own once the root tasks have ended."""


async def run_tasks(
    root_tasks: Collection[asyncio.Task[Any]], *, ignored: Collection[asyncio.Task[Any]] = ()
) -> None:
    """Wait until one of the root tasks exits, then end the others; re-raise what they raised.

    As Kopf's: once the root tasks have ended, every other task of the loop started since
    :func:`spawn_tasks` (but the ``ignored`` ones and the caller's) is taken as the operator's
    own, and gets :data:`HUNG_TASKS_TIMEOUT` seconds to finish before it is cancelled. A program
    that starts tasks of its own beside the operator passes them as ``ignored``.

    Args:
        root_tasks: What :func:`spawn_tasks` returned (or tasks of your own beside them).
        ignored: The tasks to leave alone.

    Raises:
        ConfigError: Not on asyncio.
        TypeError: ``ignored`` holds something that is not an asyncio task.
    """
    _asyncio_only("run_tasks")
    if not all(isinstance(task, asyncio.Task) for task in ignored):
        raise TypeError("run_tasks(ignored=...) takes asyncio tasks.")
    if not root_tasks:
        return
    try:
        done, pending = await asyncio.wait(root_tasks, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _end(set(root_tasks) | _hung(root_tasks, ignored), grace=0)
        raise
    await _end(pending, grace=0)
    await _end(_hung(root_tasks, ignored), grace=HUNG_TASKS_TIMEOUT)
    for task in done:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error


def _hung(
    root_tasks: Collection[asyncio.Task[Any]], ignored: Collection[asyncio.Task[Any]]
) -> set[asyncio.Task[Any]]:
    """The loop's tasks started since the root tasks were spawned: not them, not ignored, not
    the caller (those that were there before, such as the program's main task, are left alone)."""
    before = {task for root in root_tasks for task in _EXISTING.get(root, ())}
    others = set(root_tasks) | set(ignored) | before | {asyncio.current_task()}
    return {task for task in asyncio.all_tasks() if task not in others}


async def _end(tasks: set[asyncio.Task[Any]], *, grace: float) -> None:
    """Give the tasks ``grace`` seconds to finish, then cancel them and wait until they end."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=grace) if grace else (set(), tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
