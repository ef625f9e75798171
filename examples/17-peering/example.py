"""Peering: several operators on the same objects, of which only the highest priority works.

Run one copy with ``--priority 10`` and another with ``--dev`` (priority 666): the first pauses
(its daemon is stopped with ``OPERATOR_PAUSING``) while the second lives, and resumes with a
fresh listing when it exits. ``anyop freeze`` pauses them all for a while.
"""

import os
from typing import Any

import anyop


@anyop.on.create("kopfexamples")
def create_fn(logger: anyop.Logger, **_: Any) -> dict[str, int]:
    """Record which process handled the object."""
    logger.info(f"Handled by process {os.getpid()}.")
    return {"pid": os.getpid()}


@anyop.daemon("kopfexamples", cancellation_backoff=1.0)
async def keeper(name: str, stopped: anyop.DaemonStopped, logger: anyop.Logger, **_: Any) -> None:
    """Runs only in the working operator: a pause stops it, a resume starts it again."""
    logger.info(f"Keeping {name} in process {os.getpid()}.")
    await stopped.wait()
    logger.info(f"Stopped keeping {name}: {stopped.reason!r}.")
