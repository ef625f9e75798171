"""Peering inside `serve()`: what a pause does to the operator's memory."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig", "peering_crds"),
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


async def test_a_pause_keeps_the_objects_memory_resume_handlers_memos_and_finished_daemons(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Kopf keeps what it knows of an object for the whole process; so does anyop across the
    serving rounds that a pause ends: resume handlers run once per object and process, a memo
    keeps its contents, and a daemon that returned is not spawned again."""
    caplog.set_level(logging.INFO, logger="anyop")
    ns = anyop_namespace
    peerings = PEERINGS.format(ns)
    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    (await api.post(peerings, json=body)).raise_for_status()
    registry = OperatorRegistry()
    resumed: list[str] = []
    daemons: list[str] = []

    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "created")

    @on.resume("kopfexamples", registry=registry, id="resume_fn")
    def resume_fn(name: str, memo: anyop.Memo, **_: Any) -> None:
        resumed.append(name)
        memo["resumed"] = len(resumed)

    @anyop.daemon("kopfexamples", registry=registry, id="once")
    async def once(name: str, memo: anyop.Memo, **_: Any) -> None:
        daemons.append(name)
        memo["daemon"] = "ran"

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(memo: anyop.Memo, **_: Any) -> dict[str, Any]:
        return dict(memo)

    await create(api, ns, "kex-m")
    async with running(registry, ns):  # the first start: a creation, no resume
        await wait_for(api, url(ns, "kex-m"), lambda b: "create_fn" in b.get("status", {}))
    assert (resumed, daemons) == ([], ["kex-m"])
    daemons.clear()
    async with running(registry, ns):  # a restart: the resume handler runs, the daemon again
        with anyio.fail_after(DEADLINE):
            while not (resumed and daemons):
                await anyio.sleep(0.1)
        boss = {"status": {"boss": {"priority": 100, "lifetime": 60, "lastseen": "2999-01-01"}}}
        patch = json.dumps(boss)
        (await api.patch(f"{peerings}/default", content=patch, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Pausing operations in favour of ['boss'].")
        patch = json.dumps({"status": {"boss": None}})
        (await api.patch(f"{peerings}/default", content=patch, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Resuming operations after the pause.")
        spec = json.dumps({"spec": {"field": "changed"}})
        (await api.patch(url(ns, "kex-m"), content=spec, headers=MERGE)).raise_for_status()
        found = await wait_for(api, url(ns, "kex-m"), lambda b: "update_fn" in b.get("status", {}))
    assert resumed == ["kex-m"]  # not again after the pause
    assert daemons == ["kex-m"]  # it returned: finished for good in this process
    assert found["status"]["update_fn"] == {"resumed": 1, "daemon": "ran"}
