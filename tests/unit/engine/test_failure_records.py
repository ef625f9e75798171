"""What a handler's progress record says of its failure: Kopf's texts, as Kopf stores them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.engine.test_once import WITH_STATUS, World

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = pytest.mark.anyio


async def stored_message(fn: Any, **options: Any) -> str:
    world = World("status", WITH_STATUS, 5.0)
    registry = world.reconciler.registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="failing", **options)(fn)
    # A second handler still pending keeps the records on the object after the first one.
    pending = on.create("kopfexamples", registry=registry, id="pending")
    pending(lambda **_: (_ for _ in ()).throw(anyop.TemporaryError("later", delay=60)))
    await world.phase(world.server.body(), "ADDED", listed=True)
    return str(world.server.body()["status"]["anyop"]["progress"]["failing"]["message"])


async def test_a_permanent_error_stores_its_own_message() -> None:
    def failing(**_: Any) -> None:
        raise anyop.PermanentError("the error's own message")

    assert await stored_message(failing) == "the error's own message"


async def test_an_arbitrary_error_that_stops_stores_its_own_message() -> None:
    def failing(**_: Any) -> None:
        raise ValueError("the error's own message")

    message = await stored_message(failing, errors=anyop.ErrorsMode.PERMANENT)
    assert message == "the error's own message"


async def test_running_out_of_retries_stores_kopfs_line_as_kopf_does() -> None:
    def failing(**_: Any) -> None:
        raise anyop.TemporaryError("the error's own message", delay=0)

    message = await stored_message(failing, retries=1)
    assert message == (
        "Handler 'failing' failed temporarily but will exceed 1 retries: the error's own message"
    )
