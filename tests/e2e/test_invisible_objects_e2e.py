"""Objects that no handler's filters want are left alone: no state, no patch (Kopf's F8)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_daemons_e2e import merge
from tests.e2e.test_engine_e2e import create, running, url, wait_for

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


async def test_an_object_that_no_handler_wants_gets_no_state_until_it_matches(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    seen: list[str] = []

    @on.create("kopfexamples", registry=registry, id="annotated", annotations={"wanted": "yes"})
    async def annotated(name: str, **_: Any) -> str:
        seen.append(name)
        return "handled"

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "unwanted")
        await create(api, anyop_namespace, "wanted")
        await merge(
            api, url(anyop_namespace, "wanted"), {"metadata": {"annotations": {"wanted": "yes"}}}
        )
        await wait_for(
            api, url(anyop_namespace, "wanted"), lambda b: "annotated" in b.get("status", {})
        )
        await anyio.sleep(1)  # the unwanted one was listed or seen by now: it stays untouched
        unwanted = (await api.get(url(anyop_namespace, "unwanted"))).json()
        await merge(
            api, url(anyop_namespace, "unwanted"), {"metadata": {"annotations": {"wanted": "yes"}}}
        )
        later = await wait_for(
            api, url(anyop_namespace, "unwanted"), lambda b: "annotated" in b.get("status", {})
        )
    assert "status" not in unwanted
    assert not [key for key in unwanted["metadata"].get("annotations", {}) if "anyop" in key]
    assert later["status"]["annotated"] == "handled"  # annotated later: created in our eyes then
    assert sorted(seen) == ["unwanted", "wanted"]
