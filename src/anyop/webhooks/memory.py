"""Giving the memory of large request bodies back to the system (glibc's ``malloc_trim``).

A 2 MB review or an 8 MiB body that is refused is freed at once in Python, but glibc keeps the
pages it got for them, scattered among live objects, for the next allocations: the process's
RSS grows by tens of MiB under such requests and stays there (docs/benchmarks.md, "The webhook
server under garbage"). After a request whose body was large, the webhook app asks glibc to
return its free pages (:func:`release_freed_memory`). Elsewhere (musl, macOS, Windows) this does
nothing.
"""

from __future__ import annotations

import functools
import logging
import platform
from collections.abc import Callable

__all__ = ["TRIM_AFTER", "release_freed_memory", "trims_after"]

logger = logging.getLogger("anyop.webhooks")

TRIM_AFTER = 1024 * 1024
"""Bytes of a request body (read, or read and dropped) from which freed memory is given back."""


def trims_after(
    received: int, *, armed: bool = False, threshold: int = TRIM_AFTER
) -> tuple[bool, bool]:
    """Whether to trim after a request that received this many body bytes, and whether to trim
    after the next one too (``armed``: the previous request said so). Pure.

    A large request is worth a trim, and so is the one after it: the client of a large request
    (in the same process, as in tests and benchmarks, or a proxy's buffers) frees its side only
    once it has the answer, after the first trim. Small requests alone are not: a trim walks the
    whole heap (about a millisecond per 100 MiB), and what they leave is reused anyway.
    """
    large = received >= threshold
    return large or armed, large


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where there is none (found once per process)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    import ctypes  # only here: most operators never get a large request

    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_freed_memory() -> bool:
    """Ask glibc to return the free pages of all its arenas to the system.

    Returns:
        Whether anything was returned (``False`` also where there is no glibc).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    released = bool(trim(0))
    logger.debug("Freed memory given back to the system after a large request: %s.", released)
    return released
