"""Threads for sync user code that the operator can always leave behind.

AnyIO's worker threads are not daemon threads: a sync handler or daemon that never returns would
keep the process alive after the operator has exited (one of Kopf's long-standing complaints).
This pool has daemon threads only. Like AnyIO's, it reuses idle threads, grows when all are
busy, and lets idle ones exit after :data:`IDLE_TIMEOUT` seconds; cancelling the awaiting task
abandons the call, which finishes on its own (or with the process).
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["IDLE_TIMEOUT", "DaemonThreads", "current_execution", "run_sync"]

IDLE_TIMEOUT = 10.0
"""Seconds an idle thread waits for more work before it exits."""

Job = Callable[[], Callable[[], None]]
"""Runs a call in a worker thread; returns what tells the awaiting task it is done."""

current_execution: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "anyop_current_execution", default=None
)
"""The running operator's ``settings.execution``: its ``executor``, when set, runs sync code.

Read at each call, so that an executor set by a startup handler is used from then on; a call
already running stays where it started.
"""


class _Worker(threading.Thread):
    def __init__(self, pool: DaemonThreads) -> None:
        super().__init__(name="anyop sync worker", daemon=True)
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self.pool = pool

    def run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_TIMEOUT)
            except queue.Empty:
                if self.pool._retire(self):
                    return
                continue  # a job was handed over just now
            notify = job()
            del job  # drop references to the call's arguments and result while idle
            self.pool._rest(self)  # before notifying: the next call may reuse this thread
            notify()
            del notify


class DaemonThreads:
    """A growing pool of daemon threads; one call per thread at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self.started = 0
        """How many threads it has started (for tests and metrics)."""

    async def run(
        self,
        fn: Callable[[], Any],
        *,
        limiter: anyio.CapacityLimiter | None = None,
        executor: Executor | None = None,
    ) -> Any:
        """Call ``fn()`` in a thread of the pool; return its result or raise its error.

        Args:
            fn: The call, with its arguments bound; the caller's context variables are copied.
            limiter: Bounds how many calls of this kind run at once (the sync handlers');
                ``None`` for calls that must never wait for others (daemons).
            executor: Where to run it instead of this pool (``settings.execution.executor``).
        """
        if limiter is None:
            return await self._run(fn, executor)
        async with limiter:
            return await self._run(fn, executor)

    async def _run(self, fn: Callable[[], Any], executor: Executor | None) -> Any:
        done = anyio.Event()
        token = anyio.lowlevel.current_token()
        context = contextvars.copy_context()
        outcome: list[tuple[bool, Any]] = []

        def notify() -> None:
            with contextlib.suppress(Exception):  # the loop is gone: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

        def job() -> Callable[[], None]:
            try:
                outcome.append((True, context.run(fn)))
            except BaseException as error:  # handed over to the awaiting task
                outcome.append((False, error))
            return notify

        if executor is None:
            self._submit(job)
        else:
            executor.submit(lambda: job()())
        await done.wait()
        ok, value = outcome[0]
        if ok:
            return value
        raise value

    def _submit(self, job: Job) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                self.started += 1
        if worker is None:
            worker = _Worker(self)
            worker.start()
        worker.jobs.put(job)

    def _rest(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _retire(self, worker: _Worker) -> bool:
        """Whether an idle worker may exit (not if a job was just handed to it)."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


_POOL = DaemonThreads()


async def run_sync(fn: Callable[[], Any], *, limiter: anyio.CapacityLimiter | None = None) -> Any:
    """Call ``fn()`` in the operator's executor if its settings have one, else in anyop's pool
    of daemon threads (see :class:`DaemonThreads`)."""
    execution = current_execution.get()
    executor = execution.executor if execution is not None else None
    return await _POOL.run(fn, limiter=limiter, executor=executor)
