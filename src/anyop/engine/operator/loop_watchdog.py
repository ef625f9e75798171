"""The loop-lag watchdog: says, while it lasts, that something blocks the event loop, and what.

An async handler that calls blocking code (``time.sleep()``, ``requests.get()``, a long
computation) stops the whole operator: no watch is read, no other handler runs, the probes do
not answer. Nothing on the loop can notice that, so two parts share the work:

* a heartbeat task on the loop stamps the time (:func:`time.monotonic`) every
  :func:`heartbeat_interval` seconds;
* a daemon thread looks at the stamp just as often and decides (:func:`judge`, pure): when the
  loop has not run for longer than ``settings.execution.loop_lag_threshold``, it logs one
  warning naming the frame the loop is running (:func:`culprit`, from
  :func:`sys._current_frames`), and once the heartbeat comes back, one message with the time
  the block took in all. Never a message per tick.

Blocks are counted in the operator's metrics (``anyop_event_loop_blocks_total`` and
``anyop_event_loop_blocked_seconds_total``) when it serves them.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import sysconfig
import threading
import time
from types import FrameType

import anyio
import anyio.abc

from anyop.metrics import Metrics

__all__ = [
    "Blocked",
    "Lag",
    "Running",
    "Verdict",
    "culprit",
    "heartbeat_interval",
    "judge",
    "recovery_message",
    "warning_message",
    "watch_loop_lag",
]

logger = logging.getLogger("anyop.engine")

MAX_INTERVAL = 0.25
"""The longest time between two heartbeats (and two looks of the thread)."""
JOIN_TIMEOUT = 5.0
"""Seconds to wait for the thread at exit (it wakes at once; this bounds a stuck log handler)."""


# -- the decisions (pure) ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Running:
    """The loop has run within the threshold (or its last block has been reported as over)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Blocked:
    """The loop has not run since the heartbeat stamped ``since``; the warning has been said."""

    since: float


Lag = Running | Blocked
"""What the watchdog knows about the loop."""


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What to say now: a new block (``warn``, seconds so far), or its end (``recovered``, seconds
    in all); both ``None``: nothing."""

    lag: Lag
    warn: float | None = None
    recovered: float | None = None


def heartbeat_interval(threshold: float) -> float:
    """Seconds between two heartbeats: a quarter of the threshold, at most :data:`MAX_INTERVAL`."""
    return min(MAX_INTERVAL, threshold / 4)


def judge(lag: Lag, *, beat: float, now: float, threshold: float) -> Verdict:
    """Decide what to say, given the last heartbeat's stamp and the time now (monotonic).

    Guarantees:
        One warning per block, when the loop has not run for longer than ``threshold``; one
        recovery once the heartbeat has stamped again after that warning; nothing otherwise.
    """
    match lag:
        case Running() if now - beat > threshold:
            return Verdict(Blocked(beat), warn=now - beat)
        case Blocked(since) if beat > since:
            return Verdict(Running(), recovered=beat - since)
        case _:
            return Verdict(lag)


def warning_message(seconds: float, where: str) -> str:
    """The warning about a blocked loop."""
    return (
        f"The event loop has been blocked for {seconds:.1f} s; it is running: {where} "
        f"(a sync call in an async handler? use a sync handler or anyio.to_thread)."
    )


def recovery_message(seconds: float) -> str:
    """The message once a blocked loop runs again."""
    return f"The event loop runs again after it was blocked for {seconds:.1f} s."


def _library_folders() -> tuple[tuple[str, ...], tuple[str, ...]]:
    paths = sysconfig.get_paths()
    stdlib = tuple({paths["stdlib"], paths["platstdlib"]})
    installed = tuple({paths["purelib"], paths["platlib"]})
    return stdlib, installed


_STDLIB, _INSTALLED = _library_folders()


def _in_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen ...>, <string>
        return True
    return filename.startswith(_STDLIB) and not filename.startswith(_INSTALLED)


def culprit(frame: FrameType | None) -> str:
    """Where the loop's thread is, as ``file:line in function``: the innermost frame outside the
    standard library (``time``, ``selectors``, ``socket``...), else the innermost one."""
    innermost = frame
    while frame is not None and _in_stdlib(frame.f_code.co_filename):
        frame = frame.f_back
    frame = frame or innermost
    if frame is None:
        return "an unknown place (the loop's thread has no frame)"
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} in {code.co_qualname}"


# -- the thin shells: a heartbeat on the loop, a thread beside it --------------------------------


class _Heart:
    """The last heartbeat's stamp, written by the loop and read by the thread."""

    def __init__(self) -> None:
        self.beat = time.monotonic()


class _Watcher(threading.Thread):
    """Looks at the heartbeat every ``interval`` seconds and says what :func:`judge` decides."""

    def __init__(self, heart: _Heart, threshold: float, metrics: Metrics | None) -> None:
        super().__init__(name="anyop loop watchdog", daemon=True)
        self.heart, self.threshold, self.metrics = heart, threshold, metrics
        self.loop_thread = threading.get_ident()  # made on the loop's thread
        self.stopped = threading.Event()

    def run(self) -> None:
        lag: Lag = Running()
        interval = heartbeat_interval(self.threshold)
        while not self.stopped.wait(interval):
            now = time.monotonic()
            verdict = judge(lag, beat=self.heart.beat, now=now, threshold=self.threshold)
            lag = verdict.lag
            if verdict.warn is not None:
                where = culprit(sys._current_frames().get(self.loop_thread))
                logger.warning(warning_message(verdict.warn, where))
            if verdict.recovered is not None:
                logger.info(recovery_message(verdict.recovered))
                if self.metrics is not None:
                    self.metrics.loop_blocked(verdict.recovered)


async def watch_loop_lag(
    threshold: float | None,
    metrics: Metrics | None = None,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Beat on the loop and watch the beats from a thread, until cancelled (``threshold`` in
    seconds; ``None``: do nothing).

    Guarantees:
        The thread has stopped (joined) when this returns or is cancelled.
    """
    if threshold is None:
        task_status.started()
        return
    heart = _Heart()
    watcher = _Watcher(heart, threshold, metrics)
    watcher.start()
    try:
        task_status.started()
        interval = heartbeat_interval(threshold)
        while True:
            heart.beat = time.monotonic()
            await anyio.sleep(interval)
    finally:
        watcher.stopped.set()
        watcher.join(JOIN_TIMEOUT)
