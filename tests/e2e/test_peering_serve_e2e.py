"""Peering inside `serve()`: what a pause does to the operator's memory."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig", "peering_crds"),
]

PEERINGS = "/apis/anyop.dev/v1/namespaces/{}/anyoppeerings"
MERGE = {"Content-Type": "application/merge-patch+json"}


def counted(body: dict[str, Any]) -> bool:
    return "count" in body.get("status", {})


async def test_objects_deleted_during_a_pause_leave_the_indexes_at_resume(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    peerings = PEERINGS.format(anyop_namespace)
    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    (await api.post(peerings, json=body)).raise_for_status()
    registry = OperatorRegistry()

    @on.index("kopfexamples", registry=registry, id="names")
    def names(name: str, **_: Any) -> str:
        return name

    @on.create("kopfexamples", registry=registry, id="count")
    def count(names: anyop.Index, **_: Any) -> list[str]:
        return sorted(value for values in names.values() for value in values)

    async with running(registry, anyop_namespace):
        for name in ("kex-a", "kex-b"):
            await create(api, anyop_namespace, name)
            await wait_for(
                api, url(anyop_namespace, name), lambda b: "count" in b.get("status", {})
            )
        boss = {"status": {"boss": {"priority": 100, "lifetime": 60, "lastseen": "2999-01-01"}}}
        patch = json.dumps(boss)
        (await api.patch(f"{peerings}/default", content=patch, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Pausing operations in favour of ['boss'].")
        (await api.delete(url(anyop_namespace, "kex-b"))).raise_for_status()
        patch = json.dumps({"status": {"boss": None}})
        (await api.patch(f"{peerings}/default", content=patch, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Resuming operations after the pause.")
        await create(api, anyop_namespace, "kex-c")
        found = await wait_for(api, url(anyop_namespace, "kex-c"), counted)
    assert found["status"]["count"] == ["kex-a", "kex-c"]
