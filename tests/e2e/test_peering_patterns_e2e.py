"""Peering with namespace patterns (``-n 'app-*'``): as in Kopf, in each namespace served.

Two operators that serve the same namespaces by a glob peer in each of them: the one of the
lower priority pauses, so only one serves.
"""

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
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "peering_crds", "anyop_kubeconfig"),
]

PAUSING = "Pausing operations in favour of ['high']."


def serving(peering: dict[str, Any]) -> dict[str, bool]:
    """Who says that it serves, in a peering object's records."""
    return {who: record.get("serving") for who, record in (peering.get("status") or {}).items()}


def operator_of(name: str, priority: int, seen: list[str]) -> tuple[Any, Any]:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> str:
        seen.append(name)
        return name

    settings = anyop.OperatorSettings()
    settings.peering.priority = priority
    settings.peering.identity = name
    return registry, settings


async def test_two_operators_on_one_glob_do_not_both_serve(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    ns = anyop_namespace
    peering = {
        "apiVersion": "anyop.dev/v1",
        "kind": "AnyopPeering",
        "metadata": {"name": "default"},
    }
    (
        await api.post(f"/apis/anyop.dev/v1/namespaces/{ns}/anyoppeerings", json=peering)
    ).raise_for_status()
    seen: list[str] = []
    glob = {"namespaces": [f"{ns}*"], "clusterwide": False}
    low, high = operator_of("low", 10, seen), operator_of("high", 100, seen)
    async with running(low[0], None, low[1], **glob), running(high[0], None, high[1], **glob):
        await wait_for_log(caplog, PAUSING)
        # The high one serves once the low one says it stopped: an object created before may
        # still reach the low one's workers while its watch stops (handled there, once).
        path = f"/apis/anyop.dev/v1/namespaces/{ns}/anyoppeerings/default"
        handed_over = {"low": False, "high": True}
        await wait_for(api, path, lambda b: serving(b) == handed_over)
        await create(api, ns, "globbed")
        found = await wait_for(
            api, url(ns, "globbed"), lambda b: "create_fn" in b.get("status", {})
        )
        peers = (await api.get(f"/apis/anyop.dev/v1/namespaces/{ns}/anyoppeerings/default")).json()
    assert found["status"]["create_fn"] == "high"
    assert seen == ["high"]
    assert set(peers["status"]) == {"low", "high"}
    with anyio.fail_after(DEADLINE):
        while (
            (await api.get(f"/apis/anyop.dev/v1/namespaces/{ns}/anyoppeerings/default"))
            .json()
            .get("status")
        ):
            await anyio.sleep(0.1)
