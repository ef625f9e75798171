"""Threads for sync code that the operator can always leave behind.

AnyIO's worker threads are not daemon threads: a sync handler or daemon that never returns would
keep the process alive after the operator has exited (one of Kopf's long-standing complaints).
This pool has daemon threads only. Like AnyIO's, it reuses idle threads, grows when all are
busy, and lets idle ones exit after :data:`IDLE_TIMEOUT` seconds; cancelling the awaiting task
abandons the call, which finishes on its own (or with the process).

Each :func:`anyop.serve` has a pool of its own (:data:`current_threads`) and closes it when it
returns: its idle threads exit at once, busy ones when their call returns, so no thread of it
outlives it but a call that never returns. Blocking I/O of the API client (reading a kubeconfig,
loading certificates) runs here too (:func:`run_in_thread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["IDLE_TIMEOUT", "DaemonThreads", "current_threads", "run_in_thread"]

IDLE_TIMEOUT = 10.0
"""Seconds an idle thread waits for more work before it exits."""

Job = Callable[[], Callable[[], None]]
"""Runs a call in a worker thread; returns what tells the awaiting task it is done."""

T = TypeVar("T")

_CLOSE: Any = None
"""The job that tells an idle thread of a closed pool to exit."""


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
            if job is _CLOSE:
                return
            notify = job()
            del job  # drop references to the call's arguments and result while idle
            resting = self.pool._rest(self)  # before notifying: the next call may reuse it
            notify()
            del notify
            if not resting:
                return  # the pool is closed


def _call_soon(token: anyio.lowlevel.EventLoopToken, fn: Callable[[], object]) -> None:
    """Have the token's event loop call ``fn`` soon, without waiting for it: a worker must not
    hang on a loop that idles between two runs (a test's) or has stopped."""
    native = token.native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        native.call_soon_threadsafe(fn)
    else:  # a TrioToken
        native.run_sync_soon(fn)  # type: ignore[attr-defined]


class DaemonThreads:
    """A growing pool of daemon threads; one call per thread at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._closed = False
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
                _call_soon(token, done.set)

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

    def close(self) -> None:
        """Let the idle threads exit now, and busy ones once their call returns.

        A call made after this still runs, in a thread that exits after it.
        """
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.jobs.put(_CLOSE)

    def _rest(self, worker: _Worker) -> bool:
        """Take the worker back for the next call; ``False`` if the pool is closed."""
        with self._lock:
            if self._closed:
                return False
            self._idle.append(worker)
            return True

    def _retire(self, worker: _Worker) -> bool:
        """Whether an idle worker may exit (not if a job was just handed to it)."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


_DEFAULT = DaemonThreads()

current_threads: contextvars.ContextVar[DaemonThreads] = contextvars.ContextVar(
    "anyop_current_threads", default=_DEFAULT
)
"""The running operator's pool (outside of an operator, one for the process)."""


async def run_in_thread(fn: Callable[[], T]) -> T:
    """Call ``fn()`` in a thread of the current pool; return its result or raise its error."""
    result: T = await current_threads.get().run(fn)
    return result
