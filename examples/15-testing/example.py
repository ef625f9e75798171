"""The operator under test: it greets whoever ``spec.who`` names, and greets again on a change.

Its tests are in ``test_example.py``; run them with ``pytest examples/15-testing``.
"""

from typing import Any

import anyop


@anyop.on.create("kopfexamples")
def greet(spec: anyop.Spec, name: str, logger: anyop.Logger, **_: Any) -> str:
    who = spec.get("who", "world")
    logger.info(f"Greeting {who} on behalf of {name}.")
    return f"Hello, {who}!"  # lands in status.greet


@anyop.on.update("kopfexamples", field="spec.who")
def greet_again(new: Any, **_: Any) -> str:
    return f"Hello again, {new}!"  # lands in status["greet_again/spec.who"]
