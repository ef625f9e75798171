"""The bench's operator: one async create handler that returns a status (Kopf-compatible code).

With ``ANYOP_BENCH_HANDLED`` set to a directory, each handler run also appends the object's name
to a file of its own process there (one unbuffered write: nothing is lost if the process is
killed), so that a bench can count which objects were handled, by whom, and how often.
"""

import os
from typing import Any

import anyop as kopf

_HANDLED = os.environ.get("ANYOP_BENCH_HANDLED")
_LOG = (
    os.open(f"{_HANDLED}/{os.getpid()}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    if _HANDLED
    else None
)


@kopf.on.create("kopfexamples")
async def create_fn(name: str, **_: Any) -> dict[str, str]:
    if _LOG is not None:
        os.write(_LOG, f"{name}\n".encode())
    return {"message": f"hello {name}"}
