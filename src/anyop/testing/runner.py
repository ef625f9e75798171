"""Run the ``anyop`` CLI in a thread for a test, as Kopf's ``KopfRunner`` does.

::

    with OperatorRunner(["run", "-A", "--verbose", "examples/01-minimal/example.py"]) as runner:
        ...  # create objects, wait for their status
    assert runner.exit_code == 0
    assert "Handler 'create_fn' succeeded." in runner.output

The operator runs in its own thread with its own event loop (asyncio unless ``--backend trio`` is
among the arguments). Leaving the block asks it to stop gracefully and waits for it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

from anyop.engine.operator.launch import thread_flags

__all__ = ["KopfRunner", "OperatorRunner"]


class OperatorRunner:
    """The ``anyop`` CLI in a background thread, for the duration of a ``with`` block.

    Args:
        args: What Click's ``CliRunner.invoke()`` takes after the app: the CLI arguments first,
            e.g. ``["run", "-n", "ns", "app.py"]``.
        reraise: Re-raise the operator's exception when the block exits.
        timeout: Seconds to wait for readiness on entry and for the exit on leaving.
        registry: The registry of the operator's handlers instead of the default one (handlers
            declared in the test itself, with ``registry=``).
        settings: The operator's settings instead of those from the environment.
        kwargs: The rest of ``CliRunner.invoke()``'s keyword arguments (``env=``, ``input=``...).

    Attributes:
        output: What the CLI wrote to stdout and stderr (after the block).
        exit_code: The CLI's exit code (after the block).
        exception: The exception the CLI raised, if any (after the block).
        exc_info: That exception's ``(type, value, traceback)`` (after the block).
        future: The CLI's ``click.testing.Result`` once it has exited (a
            ``concurrent.futures.Future``).
    """

    def __init__(
        self,
        *args: Any,
        reraise: bool = True,
        timeout: float | None = None,
        registry: Any = None,
        settings: Any = None,
        **kwargs: Any,
    ) -> None:
        self.args = args
        self.kwargs = kwargs
        self.reraise = reraise
        self.timeout = timeout
        self.registry = registry
        self.settings = settings
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._invoke, name="anyop-runner", daemon=True)
        self._result: Any = None

    def _invoke(self) -> None:
        from typer.testing import CliRunner

        from anyop.cli import app

        thread_flags.stop_flag, thread_flags.ready_flag = self._stop, self._ready
        thread_flags.registry, thread_flags.settings = self.registry, self.settings
        try:
            with _logging_restored():
                self._result = CliRunner().invoke(app, *self.args, **self.kwargs)
        except BaseException as error:  # a broken invocation: the test sees it
            self.future.set_exception(error)
            raise
        else:
            self.future.set_result(self._result)
        finally:
            self._ready.set()  # unblock the entry even if it failed early

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(self.timeout)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(self.timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"The operator did not exit within {self.timeout} seconds.")
        if self.reraise and self.exception is not None and exc is None:
            raise self.exception

    @property
    def output(self) -> str:
        """Everything the CLI printed and logged."""
        return "" if self._result is None else str(self._result.output)

    @property
    def stdout(self) -> str:
        """What the CLI wrote to stdout."""
        return "" if self._result is None else str(self._result.stdout)

    @property
    def stderr(self) -> str:
        """What the CLI wrote to stderr."""
        return "" if self._result is None else str(self._result.stderr)

    @property
    def exit_code(self) -> int | None:
        """The CLI's exit code, once it has exited."""
        return None if self._result is None else int(self._result.exit_code)

    @property
    def exc_info(self) -> Any:
        """``(type, value, traceback)`` of the exception that ended the CLI, if any."""
        return None if self._result is None else self._result.exc_info

    @property
    def exception(self) -> BaseException | None:
        """The exception that ended the CLI, except a normal ``SystemExit``."""
        if self._result is None or isinstance(self._result.exception, SystemExit):
            return None
        error = self._result.exception
        return error if isinstance(error, BaseException) else None


@contextlib.contextmanager
def _logging_restored() -> Iterator[None]:
    """Put the logging configuration back as it was after the CLI configured its own (its
    handler writes to the runner's capture, which is closed when the CLI exits)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
        for name, was in levels.items():
            logging.getLogger(name).setLevel(was)


KopfRunner = OperatorRunner
"""Kopf's name for :class:`OperatorRunner`."""
