"""What a test may not leave behind: the process-wide state that the next test would inherit.

:func:`snapshot` takes it before a test (after the wider fixtures' set-up) and :func:`leaks`
says, after the test's own teardown, what differs: a logging handler, level or filter left on a
logger, an environment variable set or removed, a patched or travelling clock, another event
loop policy or a loop left running, a thread still alive. ``tests/conftest.py`` fails the test
that leaked, naming it, so an order-dependent failure is caught where it starts, not where it
shows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
import time
from typing import Any

import time_machine

import anyop.clock
import anyop.threads

__all__ = ["Snapshot", "leaks", "snapshot"]

THREAD_GRACE = 2.0
"""Seconds a thread that a test started may take to finish after the test's teardown."""

POOLED_THREADS = ("Trio thread", "AnyIO worker thread", "asyncio_")
"""Name prefixes of idle pool workers that their library keeps for reuse and ends by itself:
Trio's thread cache (idle 10 s), AnyIO's and asyncio's default executors. anyop's own
process-wide pool (outside any operator) is such a pool too; each operator's pool is not."""

OWN_LOGGERS = ("", "anyop", "kopf")
"""Loggers whose level, filters and ``disabled`` flag are checked (with their children): a
third-party library sets its own levels once, at import or first use, and keeps them."""

PER_TEST_VARIABLES = {"PYTEST_CURRENT_TEST"}
"""Environment variables that pytest itself sets for each test."""


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The process-wide state a test could change (see the module's docstring)."""

    loggers: dict[str, tuple[Any, ...]]
    environ: dict[str, str]
    travellers: int
    loop_clock: Any
    policy: Any
    threads: frozenset[threading.Thread]


def _logger_state(name: str, logger: logging.Logger) -> tuple[Any, ...]:
    handlers = tuple(h for h in logger.handlers if not isinstance(h, logging.NullHandler))
    if name.partition(".")[0] not in OWN_LOGGERS:
        return (handlers,)
    return (handlers, logger.level, tuple(logger.filters), logger.disabled)


def _loggers() -> dict[str, tuple[Any, ...]]:
    manager = logging.Logger.manager
    found = {"": _logger_state("", logging.getLogger())}
    for name, logger in list(manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            found[name] = _logger_state(name, logger)
    return found


def snapshot() -> Snapshot:
    """The state now."""
    return Snapshot(
        loggers=_loggers(),
        environ=dict(os.environ),
        travellers=len(time_machine.traveller_stack),  # type: ignore[attr-defined]
        loop_clock=anyop.clock._loop_clock,
        policy=asyncio.get_event_loop_policy(),
        threads=frozenset(threading.enumerate()),
    )


def _logging_leaks(before: Snapshot, after: dict[str, tuple[Any, ...]]) -> list[str]:
    found = []
    for name, state in after.items():
        was = before.loggers.get(name, ((), logging.NOTSET, (), False)[: len(state)])
        if state != was:
            found.append(f"logger {name or 'root'!r}: {was} -> {state}")
    return found


def _environ_leaks(before: Snapshot) -> list[str]:
    now = dict(os.environ)
    keys = sorted((set(now) | set(before.environ)) - PER_TEST_VARIABLES)
    return [
        f"environment variable {key}: {before.environ.get(key)!r} -> {now.get(key)!r}"
        for key in keys
        if now.get(key) != before.environ.get(key)
    ]


def _new_threads(before: Snapshot) -> list[threading.Thread]:
    deadline = time.monotonic() + THREAD_GRACE
    new = [t for t in threading.enumerate() if t not in before.threads and not _pooled(t)]
    for thread in new:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in new if t.is_alive()]


def _pooled(thread: threading.Thread) -> bool:
    if isinstance(thread, anyop.threads._Worker):
        return thread.pool is anyop.threads._DEFAULT
    return thread.name.startswith(POOLED_THREADS)


def leaks(before: Snapshot) -> list[str]:
    """What differs from ``before``, one line each (empty if nothing leaked)."""
    found = _logging_leaks(before, _loggers()) + _environ_leaks(before)
    if len(time_machine.traveller_stack) != before.travellers:  # type: ignore[attr-defined]
        found.append("time_machine is still travelling: the system clock is patched")
    if anyop.clock._loop_clock is not before.loop_clock:
        found.append("anyop.clock keeps time by another loop clock (use_loop_clock)")
    if asyncio.get_event_loop_policy() is not before.policy:
        found.append(f"the event loop policy is now {asyncio.get_event_loop_policy()!r}")
    if asyncio._get_running_loop() is not None:
        found.append("an asyncio event loop is still running in the main thread")
    found += [f"thread still running: {t!r}" for t in _new_threads(before)]
    return found
