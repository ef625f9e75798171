"""Entry points around :func:`~anyop.engine.operator.serve.serve`: Kopf's ``operator()`` and
``run()``.

``serve()`` is the structured-concurrency core. ``operator()`` accepts Kopf's keyword names and
flags (threading, asyncio or AnyIO events, or futures). ``run()`` blocks, owns the event loop of
the chosen backend, and turns SIGINT/SIGTERM into a graceful stop (a second signal stops at once).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import importlib
import importlib.util
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from anyop.engine.operator.serve import clusterwide_unless_namespaced, relay, serve, single_error
from anyop.errors import ConfigError
from anyop.settings import settings_from_environ

__all__ = ["load_sources", "operator", "run", "single_error"]

logger = logging.getLogger("anyop.engine")

thread_flags = threading.local()
"""``stop_flag``/``ready_flag`` for :func:`run` in this thread (set by the test runner)."""


def load_sources(paths: Sequence[str | Path] = (), modules: Sequence[str] = ()) -> None:
    """Import the operator's code: files by path, modules by name (``anyop run app.py -m pkg``).

    Raises:
        ConfigError: A file does not exist, a module cannot be imported (named in the message),
            or the code has a syntax error (``file:line: SyntaxError: message``).
    """
    for path in map(Path, paths):
        if not path.is_file():
            raise ConfigError(f"The operator file does not exist: {path}")
        name = _module_name(path)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"Cannot import the operator file: {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        folder = str(path.parent.resolve())
        if folder not in sys.path:  # for its sibling modules, after (never shadowing) the rest
            sys.path.append(folder)
        try:
            spec.loader.exec_module(module)
        except SyntaxError as e:
            raise ConfigError(syntax_error_line(e)) from None
    for name in modules:
        try:
            importlib.import_module(name)
        except SyntaxError as e:
            raise ConfigError(syntax_error_line(e)) from None
        except ImportError as e:
            raise ConfigError(f"Cannot import the operator module {name!r}: {e}") from e


def syntax_error_line(error: SyntaxError) -> str:
    """One line for a syntax error, as compilers print them: ``file:line: SyntaxError: msg``."""
    where = ":".join(str(part) for part in (error.filename, error.lineno) if part is not None)
    kind = type(error).__name__  # IndentationError and TabError are SyntaxErrors too
    return f"{where}: {kind}: {error.msg}" if where else f"{kind}: {error.msg}"


def _module_name(path: Path) -> str:
    """The file's module name, unless it would replace a module (``operator.py`` vs stdlib's)."""
    stem = path.stem if path.stem.isidentifier() else "operator"
    name, count = stem, 0
    while name in sys.modules or name in sys.stdlib_module_names:
        count += 1
        name = f"anyop_operator_{stem}_{count}"
    return name


FLAG_POLL_INTERVAL = 0.1
"""Seconds between looks at a flag with nothing to await here (a thread's, another loop's)."""


async def _wait_flag(flag: Any) -> None:
    """Wait until a Kopf-style flag is set.

    Kopf's flag types: an asyncio future or event, a ``concurrent.futures.Future``, a
    ``threading.Event``; and AnyIO's (or Trio's) events. What belongs to the running asyncio
    loop is awaited; what belongs to another thread or loop (or is asyncio's on Trio) is looked
    at every :data:`FLAG_POLL_INTERVAL` seconds.

    Raises:
        ConfigError: The flag is of none of these types.
    """
    if _awaitable_here(flag):
        if isinstance(flag, asyncio.Future):
            await asyncio.wait([flag])  # a cancelled future is set too, as in Kopf
        else:
            await flag.wait()
        return
    is_set = _flag_state(flag)
    while not is_set():  # noqa: ASYNC110  (nothing to await: another thread's or loop's flag)
        await anyio.sleep(FLAG_POLL_INTERVAL)


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # on Trio, or in no loop at all
        return None


def _flag_loop(flag: Any) -> asyncio.AbstractEventLoop | None:
    """The asyncio loop that an asyncio future or event belongs to (``None``: not bound yet)."""
    if isinstance(flag, asyncio.Future):
        return flag.get_loop()
    loop: asyncio.AbstractEventLoop | None = getattr(flag, "_loop", None)  # bound at first wait
    return loop


def _awaitable_here(flag: Any) -> bool:
    """Whether waiting for the flag can be awaited in the running task (not only polled)."""
    if isinstance(flag, asyncio.Future | asyncio.Event):
        running = _running_asyncio_loop()
        return running is not None and _flag_loop(flag) in (None, running)
    if isinstance(flag, threading.Event | concurrent.futures.Future):
        return False
    return callable(getattr(flag, "wait", None))  # AnyIO's or Trio's events


def _flag_state(flag: Any) -> Callable[[], bool]:
    if isinstance(flag, threading.Event | asyncio.Event):
        return flag.is_set
    if isinstance(flag, concurrent.futures.Future | asyncio.Future):
        return flag.done
    raise _unknown_flag(flag)


def _unknown_flag(flag: Any) -> ConfigError:
    return ConfigError(
        f"A stop or ready flag must be an asyncio future or event, a concurrent.futures.Future, "
        f"a threading.Event, or an AnyIO event; got {type(flag).__name__}."
    )


def _set_flag(flag: Any) -> None:
    """Set a Kopf-style flag from the operator's task, safely for another thread's loop."""
    if isinstance(flag, asyncio.Future | asyncio.Event):
        loop = _flag_loop(flag)
        if loop is not None and loop.is_running() and loop is not _running_asyncio_loop():
            loop.call_soon_threadsafe(_set_now, flag)
            return
    _set_now(flag)


def _set_now(flag: Any) -> None:
    if isinstance(flag, asyncio.Future | concurrent.futures.Future):
        if not flag.done():
            flag.set_result(None)
    elif callable(getattr(flag, "set", None)):
        flag.set()
    else:
        raise _unknown_flag(flag)


async def operator(
    *,
    registry: Any = None,
    settings: Any = None,
    namespaces: Collection[str] = (),
    namespace: str | None = None,
    clusterwide: bool = False,
    memo: Any = None,
    stop_flag: Any = None,
    ready_flag: Any = None,
    vault: Any = None,
    liveness_endpoint: str | None = None,
    metrics_endpoint: str | None = None,
    standalone: bool | None = None,
    priority: int | None = None,
    peering_name: str | None = None,
    leader_election: bool | None = None,
    lifecycle: Any = None,
    identity: str | None = None,
    indexers: Any = None,
    memories: Any = None,
    insights: Any = None,
    _command: Any = None,
) -> None:
    """Run the operator until ``stop_flag`` is set or the caller cancels it (Kopf's signature).

    Kopf's flags and options around :func:`anyop.serve`, which runs the whole operator (see
    there): ``stop_flag`` and ``ready_flag`` may be AnyIO/asyncio/threading events or futures;
    ``namespace`` adds one namespace; ``standalone``, ``priority`` and ``peering_name`` (which
    makes peering mandatory) override ``settings.peering``, and ``leader_election`` overrides
    ``settings.leadership.enabled``, before the startup handlers run (so they may change them
    again); ``identity`` is this operator's name among its peers (``settings.peering.identity``).
    Without namespaces and without ``clusterwide``, it serves the whole cluster after a
    ``FutureWarning``, as Kopf does.

    Raises:
        ConfigError: ``indexers``, ``memories``, ``insights`` or ``_command`` is given: these are
            Kopf's internal state, which anyop keeps in its own task tree (the message says what
            to use instead).
    """
    _refuse_internals(indexers=indexers, memories=memories, insights=insights, _command=_command)
    names = [*namespaces, *([namespace] if namespace else [])]
    clusterwide = clusterwide_unless_namespaced(names, clusterwide)
    settings = settings if settings is not None else settings_from_environ()
    _override(
        settings,
        standalone=standalone,
        priority=priority,
        peering_name=peering_name,
        leader_election=leader_election,
    )
    if identity is not None:
        settings.peering.identity = identity
    settings.peering.clusterwide = clusterwide
    stop_event, ready_event = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as flags:
        if stop_flag is not None:
            flags.start_soon(relay, functools.partial(_wait_flag, stop_flag), stop_event.set)
        if ready_flag is not None:
            flags.start_soon(relay, ready_event.wait, functools.partial(_set_flag, ready_flag))
        await serve(
            registry=registry,
            settings=settings,
            namespaces=names,
            clusterwide=clusterwide,
            memo=memo,
            stop_event=stop_event,
            ready_event=ready_event,
            vault=vault,
            liveness_endpoint=liveness_endpoint,
            metrics_endpoint=metrics_endpoint,
            lifecycle=lifecycle,
        )
        flags.cancel_scope.cancel()


_INSTEAD = {
    "indexers": "the indexes are built from @anyop.index handlers; handlers get them as kwargs",
    "memories": "each object's memory lives in its worker; pass memo= for the objects' memo",
    "insights": "the watched resources and namespaces are discovered by the operator itself",
    "_command": "run your own coroutine beside anyop.serve() in your own task group",
}


def _refuse_internals(**given: Any) -> None:
    """Kopf's internal containers have no meaning here: say so, and what to use instead."""
    for name, value in given.items():
        if value is not None:
            raise ConfigError(f"operator({name}=...) is Kopf's internal state: {_INSTEAD[name]}.")


def _override(
    settings: Any,
    *,
    standalone: bool | None,
    priority: int | None,
    peering_name: str | None,
    leader_election: bool | None = None,
) -> None:
    """Apply the command line's (or the caller's) peering and leadership options."""
    if standalone is not None:
        settings.peering.standalone = standalone
    if priority is not None:
        settings.peering.priority = priority
    if peering_name is not None:
        settings.peering.name = peering_name
        settings.peering.mandatory = True
    if leader_election is not None:
        settings.leadership.enabled = leader_election


async def _serve_until_signalled(kwargs: dict[str, Any]) -> None:
    stop_flag = anyio.Event()
    outer_stop = kwargs.pop("stop_flag", None) or getattr(thread_flags, "stop_flag", None)
    kwargs.setdefault("ready_flag", getattr(thread_flags, "ready_flag", None))
    if kwargs.get("registry") is None:  # a test runner's registry (KopfRunner(registry=...))
        kwargs["registry"] = getattr(thread_flags, "registry", None)
    if kwargs.get("settings") is None:
        kwargs["settings"] = settings_from_environ()
    ultimate = kwargs["settings"].process.ultimate_exiting_timeout
    with _Watchdog(ultimate) as watchdog:
        async with anyio.create_task_group() as tg:
            if threading.current_thread() is threading.main_thread():
                # Before anything else: a signal must never meet the default handler (exit 143).
                await tg.start(_watch_signals, stop_flag, tg.cancel_scope, watchdog)
            if outer_stop is not None:
                tg.start_soon(relay, functools.partial(_wait_flag, outer_stop), stop_flag.set)
            await operator(stop_flag=stop_flag, **kwargs)
            tg.cancel_scope.cancel()


class _Watchdog:
    """Kills the process if a signalled graceful exit takes longer than the ultimate timeout.

    Hung sync handlers and daemons run in threads that nothing can cancel; this is the last
    resort (``settings.process.ultimate_exiting_timeout``; ``None`` disables it).
    """

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._timer: threading.Timer | None = None

    def __enter__(self) -> _Watchdog:
        return self

    def __exit__(self, *_: object) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def arm(self) -> None:
        """Start counting (at the first signal)."""
        if self.timeout is not None and self._timer is None:
            self._timer = threading.Timer(self.timeout, self._kill)
            self._timer.daemon = True
            self._timer.start()

    def _kill(self) -> None:
        logger.error(
            "The operator did not exit within %s seconds (process.ultimate_exiting_timeout). "
            "Killing the process.",
            self.timeout,
        )
        os.kill(os.getpid(), signal.SIGKILL)


async def _watch_signals(
    stop: anyio.Event,
    scope: anyio.CancelScope,
    watchdog: _Watchdog,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            if stop.is_set():
                logger.warning("Signal %s received again: stopping at once.", signum.name)
                scope.cancel()
                return
            logger.info("Signal %s received. Operator is stopping.", signum.name)
            # The process ends soon: a full collection of the cyclic garbage collector (it scans
            # every live body and worker) would only delay the exit. run() re-enables it.
            gc.disable()
            watchdog.arm()
            stop.set()


def run(
    *, backend: str | None = None, loop: asyncio.AbstractEventLoop | None = None, **kwargs: Any
) -> None:
    """Run the operator in a new event loop of ``backend`` until SIGINT or SIGTERM (or a flag).

    Accepts the keyword arguments of :func:`operator`. Signal handlers are installed only when
    called from the main thread. Without ``backend``, ``settings.server.backend`` says which
    (``asyncio`` unless ``ANYOP_SERVER__BACKEND`` says otherwise). With ``loop`` (Kopf's, e.g.
    ``uvloop.EventLoopPolicy().new_event_loop()``), the operator runs on asyncio in that loop,
    which stays open afterwards.

    Raises:
        ConfigError: ``loop`` is given with ``backend="trio"``.

    As it owns the process, it tunes the cyclic garbage collector for an operator's heap:

    * everything made so far (modules, handlers) goes into the collector's permanent generation
      (:func:`gc.freeze`), so the collector never scans those objects again;
    * unless the program changed them already, the collection thresholds are
      :data:`OPERATOR_GC_THRESHOLDS` (see :func:`gc_thresholds`), and Python's defaults again
      once it returns;
    * once SIGINT or SIGTERM arrives, the collector is off until the operator has exited (its
      full collections only delay the exit).

    :func:`operator` and :func:`~anyop.serve`, which run inside someone else's program, leave
    the collector alone. Several runs at once in one process (e.g. test runners in threads)
    share the tuning: the first to start makes it, the last to return undoes it.
    """
    if kwargs.get("settings") is None:
        kwargs["settings"] = settings_from_environ()
    if loop is not None and backend not in (None, "asyncio"):
        raise ConfigError(
            f"run(loop=...) runs the operator on that asyncio loop, not on {backend}: pass "
            f"either the loop or backend={backend!r}."
        )
    backend = "asyncio" if loop is not None else backend or kwargs["settings"].server.backend
    gc.freeze()
    with _COLLECTOR:
        try:
            if loop is not None:
                loop.run_until_complete(_serve_until_signalled(kwargs))
            else:
                anyio.run(_serve_until_signalled, kwargs, backend=backend)
        except BaseExceptionGroup as group:
            raise single_error(group) from None


class _CollectorTuning:
    """The collector's state before the first of the process's running :func:`run` calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs = 0
        self._saved: tuple[tuple[int, ...], bool] = ((), True)

    def __enter__(self) -> None:
        with self._lock:
            if self._runs == 0:
                thresholds = gc.get_threshold()
                self._saved = (thresholds, gc.isenabled())
                gc.set_threshold(*gc_thresholds(thresholds))
            self._runs += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._runs -= 1
            if self._runs == 0:
                thresholds, collecting = self._saved
                gc.set_threshold(*thresholds)
                if collecting:
                    gc.enable()


_COLLECTOR = _CollectorTuning()


PYTHON_GC_THRESHOLDS = (700, 10, 10)
"""CPython's default thresholds of the cyclic garbage collector (:func:`gc.get_threshold`)."""

OPERATOR_GC_THRESHOLDS = (10_000, 20, 10)
"""The thresholds :func:`run` uses: a young collection per 10,000 new containers, not 700.

With Python's defaults, an operator handling thousands of new objects spends a large share of
its CPU in the collector (each full collection scans every live body and worker; the figures are
in docs/benchmarks.md). Handling makes few reference
cycles (bodies and results are trees, freed by reference counting), so collecting them less
often holds little more memory.
"""


def gc_thresholds(current: tuple[int, ...]) -> tuple[int, ...]:
    """The collector thresholds :func:`run` sets: the operator's, unless the program set its own."""
    return OPERATOR_GC_THRESHOLDS if tuple(current) == PYTHON_GC_THRESHOLDS else tuple(current)
