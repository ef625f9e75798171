"""The bench's operator: one async create handler that returns a status (Kopf-compatible code)."""

from typing import Any

import anyop as kopf


@kopf.on.create("kopfexamples")
async def create_fn(name: str, **_: Any) -> dict[str, str]:
    return {"message": f"hello {name}"}
