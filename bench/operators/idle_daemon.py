"""One idle async daemon per object; the same file runs under anyop and under Kopf.

Under anyop, ``anyop`` is importable and stands in for ``kopf``; in the Kopf venv of
``bench/kopf_env.py`` only Kopf is.
"""

from typing import Any

try:
    import anyop as kopf
except ImportError:  # the Kopf venv
    import kopf  # type: ignore[no-redef]


@kopf.daemon("kopfexamples")
async def idle(stopped: Any, logger: Any, **_: Any) -> None:
    logger.info("idle daemon started")
    await stopped.wait()
    logger.info("idle daemon stopped")
