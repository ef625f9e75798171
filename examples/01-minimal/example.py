"""The smallest operator: greet every new KopfExample and report back in its status."""

from typing import Any

import anyop


@anyop.on.create("kopfexamples")
def create_fn(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> dict[str, str]:
    logger.info(f"And here we are! Creating: {dict(spec)}")
    return {"message": "hello world"}  # will be the new status.create_fn
