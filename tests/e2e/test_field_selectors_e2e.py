"""``field_selector=`` of handlers: the watch asks the server for the selected objects only."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watch import Watcher

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The ``fieldSelector`` of every watch of KopfExamples that the operator opens."""
    selectors: list[str | None] = []
    original = Watcher.__init__

    def recording(self: Watcher, client: Any, resource: Any, **options: Any) -> None:
        if resource.plural == "kopfexamples":
            selectors.append(options.get("field_selector"))
        original(self, client, resource, **options)

    monkeypatch.setattr(Watcher, "__init__", recording)
    return selectors


async def test_only_the_selected_objects_are_watched_and_handled(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
    watched: list[str | None],
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()
    seen: list[str] = []

    @anyop.on.event(
        "kopfexamples", registry=registry, id="event_fn", field_selector="metadata.name=wanted"
    )
    def event_fn(name: str, **_: Any) -> None:
        seen.append(name)

    @anyop.on.create(
        "kopfexamples", registry=registry, id="create_fn", field_selector="metadata.name=wanted"
    )
    def create_fn(name: str, **_: Any) -> str:
        return name

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "other")
        await create(api, anyop_namespace, "wanted")
        await wait_for(
            api, url(anyop_namespace, "wanted"), lambda b: "create_fn" in b.get("status", {})
        )
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        other = (await api.get(url(anyop_namespace, "other"))).json()
    assert watched
    assert set(watched) == {"metadata.name=wanted"}
    assert set(seen) == {"wanted"}
    assert "create_fn" not in other.get("status", {})
    assert "finalizers" not in other["metadata"]
