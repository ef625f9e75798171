"""A flood of changes to one object: RELIABILITY.md §5 row 39.

While a handler runs, every further change to its object is coalesced into one pending state: at
most one running and one pending cycle, and the last state is the one handled. Both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, MERGE, create, running, url, wait_for

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

CHANGES = 200
RESULT = "update_fn/spec.seq"  # a field handler's id names its field, as in Kopf


async def test_row39_a_flood_of_changes_to_one_object_is_handled_as_its_latest_state(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    ns = anyop_namespace
    registry = OperatorRegistry()
    seen: list[int] = []
    busy, flooded = anyio.Event(), anyio.Event()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> str:
        return "created"

    @on.update("kopfexamples", registry=registry, id="update_fn", field="spec.seq")
    async def update_fn(new: Any, **_: Any) -> int:
        seen.append(int(new))
        busy.set()
        await flooded.wait()  # the first update runs through the whole flood
        return int(new)

    async with running(registry, ns):
        await create(api, ns, "flooded")
        await wait_for(api, url(ns, "flooded"), lambda b: "create_fn" in b.get("status", {}))
        for seq in range(CHANGES):
            patch = {"spec": {"seq": seq}}
            (await api.patch(url(ns, "flooded"), json=patch, headers=MERGE)).raise_for_status()
            if seq == 0:
                with anyio.fail_after(DEADLINE):
                    await busy.wait()
        flooded.set()
        last = CHANGES - 1
        body = await wait_for(
            api, url(ns, "flooded"), lambda b: b.get("status", {}).get(RESULT) == last
        )
    assert body["status"][RESULT] == last  # the last state is the one handled
    assert seen[0] == 0
    assert seen[-1] == last
    assert len(seen) <= 3, seen  # 200 changes: the running cycle, then the latest (a spare one)
