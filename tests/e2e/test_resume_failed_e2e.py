"""``@on.resume(failed_only=True)``: on restart, resume only the objects whose handling failed."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log

import anyop
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


def operator(repaired: list[str], seen: list[str]) -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(name: str, **_: Any) -> str:
        if name == "broken":
            raise anyop.PermanentError("cannot create it")
        return "created"

    @anyop.on.resume("kopfexamples", registry=registry, id="repair_fn", failed_only=True)
    def repair_fn(name: str, **_: Any) -> None:
        repaired.append(name)

    @anyop.on.resume("kopfexamples", registry=registry, id="seen_fn")
    def seen_fn(name: str, **_: Any) -> None:
        seen.append(name)

    return registry


async def resumed_both(seen: list[str]) -> None:
    with anyio.fail_after(DEADLINE):
        while sorted(seen) != ["broken", "healthy"]:
            await anyio.sleep(0.05)


async def test_only_the_objects_whose_handlers_failed_are_resumed_until_they_succeed(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    ns, repaired, seen = anyop_namespace, [], []
    async with running(operator(repaired, seen), ns):
        await create(api, ns, "healthy")
        await create(api, ns, "broken")
        await wait_for(api, url(ns, "healthy"), lambda b: "create_fn" in b.get("status", {}))
        await wait_for_log(caplog, "Creation is processed: 0 succeeded; 1 failed.")
    assert repaired == []

    seen.clear()
    async with running(operator(repaired, seen), ns):
        await resumed_both(seen)
    assert repaired == ["broken"]  # its resumption succeeded: its note of the failure is gone

    seen.clear()
    async with running(operator(repaired, seen), ns):
        await resumed_both(seen)
    assert repaired == ["broken"]
