"""Which discovered resources are served, and Kopf's warnings about the others."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import anyop.on as on
from anyop.engine import served
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource

pytestmark = pytest.mark.anyio

ALL_VERBS = frozenset({"list", "watch", "patch", "get"})


def resource(group: str, plural: str, verbs: frozenset[str] = ALL_VERBS) -> Resource:
    return Resource(group, "v1", plural, kind=plural.title(), namespaced=True, verbs=verbs)


DISCOVERED = [
    resource("kopf.dev", "kopfexamples"),
    resource("a.dev", "twins"),
    resource("b.dev", "twins"),
    resource("kopf.dev", "readonlies", frozenset({"list", "watch", "get"})),
    resource("kopf.dev", "watchedonlies", frozenset({"list", "watch", "get"})),
    resource("kopf.dev", "unlistables", frozenset({"get", "create"})),
]


async def test_what_cannot_be_served_is_named_and_left_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def discover(client: Any) -> list[Resource]:
        return DISCOVERED

    monkeypatch.setattr(served, "discover", discover)
    registry = OperatorRegistry()
    for name in ("kopfexamples", "twins", "readonlies", "unlistables", "missings"):
        on.create(name, registry=registry, id=f"create_{name}")(lambda **_: None)
    on.event("watchedonlies", registry=registry, id="events")(lambda **_: None)
    with caplog.at_level(logging.WARNING, logger="anyop"):
        resources = await served.served_resources(None, registry)  # type: ignore[arg-type]
    assert [r.plural for r in resources] == ["kopfexamples", "watchedonlies"]
    warnings = caplog.messages
    assert any(w.startswith("Unresolved resources cannot be served") for w in warnings)
    assert any(
        w.startswith("Ambiguous resources will not be served (try specifying API groups): ")
        and "twins" in w
        for w in warnings
    )
    assert any(w.startswith("Non-watchable resources will not be served: ") for w in warnings)
    nonpatchable = [w for w in warnings if w.startswith("Non-patchable resources")]
    assert len(nonpatchable) == 1
    assert "readonlies" in nonpatchable[0]
    assert "watchedonlies" not in nonpatchable[0]
