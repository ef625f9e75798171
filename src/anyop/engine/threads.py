"""Sync daemons in threads of their own, which the operator can leave behind.

AnyIO's worker threads are shared with the sync handlers and are not daemon threads: a sync daemon
that never checks its ``stopped`` flag would hold one of them forever and keep the process alive
at exit. A thread of its own (a daemon thread) costs the same, never takes a token of the handlers'
limiter, and can be abandoned.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from anyop.engine.invocation import use_context

__all__ = ["run_in_own_thread"]


async def run_in_own_thread(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    *,
    name: str,
    body: Mapping[str, Any] | None = None,
) -> Any:
    """Call ``fn(**kwargs)`` in a new daemon thread and return its result or raise its error.

    Args:
        fn: A sync callable.
        kwargs: Its kwargs.
        name: The thread's name (shown in thread dumps).
        body: The object the call is about, made ambient as :func:`~anyop.engine.invoke` does.

    Caveats:
        Cancelling the caller does not stop the thread: it is abandoned and finishes on its own
        (or with the process). Context variables are copied into it.
    """
    done = anyio.Event()
    token = anyio.lowlevel.current_token()
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(fn(**kwargs))
        except BaseException as error:  # handed over to the awaiting task
            failure.append(error)
        finally:
            with contextlib.suppress(Exception):  # the loop is gone: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

    with use_context(body, kwargs):
        context = contextvars.copy_context()
    thread = threading.Thread(target=functools.partial(context.run, target), name=name)
    thread.daemon = True
    thread.start()
    await done.wait()
    if failure:
        raise failure[0]
    return outcome[0]
