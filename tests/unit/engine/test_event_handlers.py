"""``@on.event`` handlers: the ``type`` kwarg and the raw ``event``, as in Kopf."""

from __future__ import annotations

from typing import Any

import pytest

import anyop.on as on
from anyop.engine.cycle.object_slots import ObjectSlot
from anyop.engine.cycle.reconciler import Observed, Reconciler
from anyop.engine.resource.serve_resource import persistence_for
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)


def kex(rv: str) -> dict[str, Any]:
    metadata = {"name": "k", "namespace": "ns", "uid": "u1", "resourceVersion": rv}
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata}


async def test_a_listed_object_has_no_event_type_in_the_kwarg_nor_in_the_raw_event() -> None:
    registry = OperatorRegistry()
    seen: list[tuple[Any, Any]] = []

    @on.event("kopfexamples", registry=registry, id="events")
    def events(type: str | None, event: dict[str, Any], **_: Any) -> None:
        seen.append((type, event["type"]))

    settings = OperatorSettings()
    reconciler = Reconciler(
        None,  # type: ignore[arg-type]  # event handlers write nothing
        KEX, registry, settings, persistence_for(KEX, settings),
    )  # fmt: skip
    slot = ObjectSlot(uid="u1")
    await reconciler(slot, Observed(kex("1"), type="ADDED", listed=True))
    await reconciler(slot, Observed(kex("2"), type="MODIFIED"))
    assert seen == [(None, None), ("MODIFIED", "MODIFIED")]
