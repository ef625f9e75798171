"""Object loggers' Events from threads and from the loop at once: no deadlock.

A sync handler logs in a worker thread: the Event handler hands the record to the event loop and
waits for it. If the loop logs an object's record meanwhile, it must not wait for a lock that the
thread holds (that deadlock froze the whole operator, signals included). Run in a subprocess with a
timeout: a deadlock blocks the loop itself, so no in-process timeout could end it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import logging, sys, threading, time
    import anyio, anyio.lowlevel
    from anyop.engine.operator.event_poster import EventPoster, _LoggingHandler

    class Settings:
        class posting:
            enabled = True
            loggers = True
            level = logging.INFO

    async def main():
        poster = EventPoster.__new__(EventPoster)
        poster._settings = Settings
        poster._send, poster._receive = anyio.create_memory_object_stream(100)
        poster._thread = threading.get_ident()
        poster._token = anyio.lowlevel.current_token()
        handler = _LoggingHandler(poster)
        holding = threading.Event()
        submit = poster.submit

        def slow_submit(*args, **kwargs):
            holding.set()  # the thread is inside the handler now
            time.sleep(0.2)  # and the loop logs meanwhile
            submit(*args, **kwargs)

        poster.submit = slow_submit
        record = logging.LogRecord("anyop.objects", logging.INFO, "x", 1, "hello", None, None)
        record.k8s_ref = {"name": "x", "apiVersion": "v1", "kind": "ConfigMap"}
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, handler.handle, record)
            await anyio.to_thread.run_sync(holding.wait)
            handler.handle(record)
        received = [poster._receive.receive_nowait() for _ in range(2)]
        print(len(received))

    anyio.run(main, backend=sys.argv[1])
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_thread_and_the_loop_logging_object_records_at_once_do_not_deadlock(
    backend: str,
) -> None:
    # Real threads and a real wait: a deadlock would hang for good, the timeout ends it.
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, backend], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"  # both records became Events
