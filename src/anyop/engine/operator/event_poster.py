"""Kubernetes Events from handlers and anything else the operator runs: queued, then posted.

``anyop.event/info/warn/exception`` only queue the Event, from the event loop or from a sync
handler's thread, and return at once; one background task of the operator posts them in order.
With ``settings.posting.loggers``, the per-object loggers' records at ``settings.posting.level``
and above become Events too (``Normal``, or ``Warning`` from WARNING up; reason ``Logging``), as
far as the ``anyop.objects`` logger's own level lets them through (``anyop run`` sets it).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel

from anyop.kube.client import KubeClient
from anyop.kube.events import post_event
from anyop.logs import objects_logger
from anyop.models.typed import current_event_sink
from anyop.settings import OperatorSettings

__all__ = ["EventPoster", "event", "exception", "info", "unheeded_posting_level", "warn"]

logger = logging.getLogger("anyop.engine")

QUEUE_SIZE = 10_000
"""Events waiting to be posted; more are dropped with a warning (the API is far behind)."""
DRAIN_TIMEOUT = 2.0
"""Seconds the poster keeps posting queued Events after the operator has stopped."""

current_poster: contextvars.ContextVar[EventPoster | None] = contextvars.ContextVar(
    "anyop.current_poster", default=None
)


@dataclasses.dataclass(frozen=True)
class _Event:
    obj: Mapping[str, Any]
    type: str
    reason: str
    message: str


def _snapshot(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What an Event needs of its object, copied now (bodies given to handlers are live)."""
    meta = obj.get("metadata") or {}
    keys = ("name", "namespace", "uid", "resourceVersion")
    metadata = {key: meta.get(key) for key in keys if meta.get(key)}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": metadata}


class EventPoster:
    """The operator's queue of Events and the task that posts them.

    Args:
        client: The API client.
        settings: The operator's settings (``posting``).

    Guarantees:
        :meth:`submit` never blocks and never raises; Events are posted in the order queued;
        a failed post is logged (by :func:`~anyop.kube.events.post_event`) and skipped.
    """

    def __init__(self, client: KubeClient, settings: OperatorSettings) -> None:
        self._client = client
        self._settings = settings
        self._send, self._receive = anyio.create_memory_object_stream[_Event](QUEUE_SIZE)
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()

    @property
    def posting_level(self) -> int:
        """``settings.posting.level``: the shortcuts below it post nothing."""
        return self._settings.posting.level

    def submit(self, obj: Mapping[str, Any], *, type: str, reason: str, message: str) -> None:
        """Queue an Event about ``obj`` (from any thread)."""
        if not self._settings.posting.enabled:
            return
        item = _Event(_snapshot(obj), type, reason, message)
        if threading.get_ident() == self._thread:
            self._offer(item)
        else:
            with contextlib.suppress(Exception):  # the operator has exited meanwhile
                anyio.from_thread.run_sync(self._offer, item, token=self._token)

    def _offer(self, item: _Event) -> None:
        try:
            self._send.send_nowait(item)
        except anyio.WouldBlock:
            logger.warning("Too many Events are waiting to be posted; dropped: %r", item.message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def close(self) -> None:
        """Drop what is queued and accept nothing more (:meth:`run` closes it by itself)."""
        self._send.close()
        self._receive.close()

    async def run(self, stopping: anyio.Event) -> None:
        """Post queued Events until ``stopping`` is set, then what is left for a short while."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._post_all)
                await stopping.wait()
                self._send.close()
                tg.cancel_scope.deadline = anyio.current_time() + DRAIN_TIMEOUT
        finally:
            self.close()

    async def _post_all(self) -> None:
        async with self._receive:
            async for item in self._receive:
                await post_event(
                    self._client,
                    obj=item.obj,
                    type=item.type,
                    reason=item.reason,
                    message=item.message,
                    settings=self._settings,
                )

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Make this poster the one of ``anyop.event()`` and, if enabled, of object loggers.

        A ``settings.posting.level`` that nothing heeds (log records are not posted) is warned
        about: a Kopf file that sets it expects Events that anyop does not post by default.
        """
        unheeded = unheeded_posting_level(self._settings)
        if unheeded is not None:
            logger.warning(unheeded)
        token = current_poster.set(self)
        sink_token = current_event_sink.set(self.submit)
        handler = _LoggingHandler(self) if self._settings.posting.loggers else None
        if handler is not None:
            handler.setLevel(self._settings.posting.level)
            objects_logger.addHandler(handler)
        try:
            yield
        finally:
            if handler is not None:
                objects_logger.removeHandler(handler)
            current_event_sink.reset(sink_token)
            current_poster.reset(token)


def unheeded_posting_level(settings: OperatorSettings) -> str | None:
    """The warning for a ``posting.level`` that was set while log records are not posted."""
    posting = settings.posting
    if "level" not in posting.model_fields_set or (posting.loggers and posting.enabled):
        return None
    level = logging.getLevelName(posting.level)
    if not posting.enabled:
        return f"settings.posting.level is {level}, but posting is off (settings.posting.enabled)."
    return (
        f"settings.posting.level is {level}, but log records are not posted as Events: "
        "settings.posting.loggers is off (the default, as in Kopf 1.45). "
        "Set settings.posting.loggers = True to post them."
    )


class _LoggingHandler(logging.Handler):
    """Object loggers' records as Events."""

    def __init__(self, poster: EventPoster) -> None:
        super().__init__()
        self.poster = poster

    def handle(self, record: logging.LogRecord) -> bool:
        """Emit without the handler's lock: from a thread, :meth:`EventPoster.submit` waits
        for the event loop, and the loop itself may be logging an object's record meanwhile
        (it would wait for the lock that the thread holds: a deadlock that no signal ends)."""
        passed = self.filter(record)
        if passed:
            self.emit(record)
        return bool(passed)

    def emit(self, record: logging.LogRecord) -> None:
        ref = getattr(record, "k8s_ref", None)
        if not ref or getattr(record, "anyop_no_event", False):
            return
        if record.levelno < getattr(record, "anyop_posting_level", 0):
            return  # below the level of the settings that its logger was made with
        obj = {"apiVersion": ref.get("apiVersion"), "kind": ref.get("kind"), "metadata": ref}
        kind = "Warning" if record.levelno >= logging.WARNING else "Normal"
        try:
            message = record.getMessage()
        except Exception:  # a broken log call must not break the handler
            return
        self.poster.submit(obj, type=kind, reason="Logging", message=message)


# -- the user's API ----------------------------------------------------------------------------


def _objects(objs: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(objs, Mapping):
        return [objs]
    return list(objs)


def shortcut_posts(level: int, posting_level: int) -> bool:
    """Whether ``info``/``warn``/``exception`` (of ``level``: INFO, WARNING, ERROR) post under
    ``settings.posting.level``, as Kopf's do; :func:`event` posts at any level. Pure."""
    return level >= posting_level


def _at_level(level: int) -> bool:
    poster = current_poster.get()
    return poster is None or shortcut_posts(level, poster.posting_level)


def event(
    objs: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    *,
    type: str,
    reason: str,
    message: str = "",
) -> None:
    """Post a Kubernetes Event about one object or each of several (in the background).

    Works in handlers, daemons, timers and activities, sync or async, and in any task the
    operator's tasks started. Outside a running operator the Event is dropped with a warning.

    Args:
        objs: A body (such as the ``body`` kwarg), or several.
        type: ``Normal`` or ``Warning``.
        reason: A short CamelCase reason, e.g. ``Created``.
        message: The text.
    """
    poster = current_poster.get()
    if poster is None:
        logger.warning("No operator is running here: the Event %r is not posted.", reason)
        return
    for obj in _objects(objs):
        poster.submit(obj, type=type, reason=reason, message=message)


def info(
    objs: Mapping[str, Any] | Iterable[Mapping[str, Any]], *, reason: str, message: str = ""
) -> None:
    """Post a ``Normal`` Event (see :func:`event`), unless ``settings.posting.level`` is above
    INFO."""
    if _at_level(logging.INFO):
        event(objs, type="Normal", reason=reason, message=message)


def warn(
    objs: Mapping[str, Any] | Iterable[Mapping[str, Any]], *, reason: str, message: str = ""
) -> None:
    """Post a ``Warning`` Event (see :func:`event`), unless ``settings.posting.level`` is above
    WARNING."""
    if _at_level(logging.WARNING):
        event(objs, type="Warning", reason=reason, message=message)


def exception(
    objs: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    *,
    reason: str = "",
    message: str = "",
    exc: BaseException | None = None,
) -> None:
    """Post a ``Warning`` Event about an exception (by default, the one being handled).

    The reason defaults to the exception's class name; its text is appended to the message.
    Nothing is posted if ``settings.posting.level`` is above ERROR.
    """
    if not _at_level(logging.ERROR):
        return
    if exc is None:
        exc = sys.exc_info()[1]
    reason = reason or (type(exc).__name__ if exc is not None else "Exception")
    text = " ".join(part for part in (message, str(exc) if exc is not None else "") if part)
    event(objs, type="Warning", reason=reason, message=text)
