"""Why a daemon or timer is stopped: the reasons its ``stopped`` flag carries (pure).

The flag itself, which the engine sets and handlers wait on, is
:mod:`anyop.engine.daemons.stop_flags`.
"""

from __future__ import annotations

import enum

__all__ = ["DaemonStoppingReason"]


class DaemonStoppingReason(enum.Flag):
    """Why a daemon or timer is asked to stop (several reasons can add up).

    Attributes:
        NONE: It is not stopped.
        DONE: It exited on its own (returned or failed for good).
        FILTERS_MISMATCH: The object no longer matches its filters.
        RESOURCE_DELETED: The object is being deleted.
        OPERATOR_PAUSING: The operator pauses (another operator has priority).
        OPERATOR_EXITING: The operator exits.
        DAEMON_SIGNALLED: The stop flag was set (always, with one of the above).
        DAEMON_CANCELLED: The cancellation backoff passed and it was cancelled.
        DAEMON_ABANDONED: The cancellation timeout passed and it was left orphaned.
    """

    NONE = 0
    DONE = enum.auto()
    FILTERS_MISMATCH = enum.auto()
    RESOURCE_DELETED = enum.auto()
    OPERATOR_PAUSING = enum.auto()
    OPERATOR_EXITING = enum.auto()
    DAEMON_SIGNALLED = enum.auto()
    DAEMON_CANCELLED = enum.auto()
    DAEMON_ABANDONED = enum.auto()
