"""A conflict between an object's writers is routine: retried at once, quietly.

A fast timer writes its results to the status while the object's cycles add and release the
finalizer with JSON patches guarded by the ``resourceVersion``: the timer's writes land between
a cycle's read and its write, and the guard fails with 422. That is no error: the patch is applied
again to the fresh object, and nothing is logged above DEBUG.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import (
    DEADLINE,
    MERGE,
    create,
    delete_and_wait,
    running,
    url,
    wait_for,
)

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient, PatchType

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]

OBJECTS = 50


def loud(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Errors, and the objects' warnings (the operator's own, e.g. on peering, are expected)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.ERROR
        or (record.levelno >= logging.WARNING and record.name == "anyop.objects")
    ]


async def test_a_fast_timer_beside_the_finalizers_writes_logs_no_error(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")
    registry = OperatorRegistry()
    ticks: Counter[str] = Counter()
    deletions: Counter[str] = Counter()

    @on.timer("kopfexamples", registry=registry, id="tick", interval=0.01)
    async def tick(name: str, **_: Any) -> int:
        ticks[name] += 1
        return ticks[name]  # a status write on every run

    @on.delete("kopfexamples", registry=registry, id="delete")
    async def delete(name: str, **_: Any) -> None:
        deletions[name] += 1

    names = [f"conflict-{index}" for index in range(OBJECTS)]
    async with running(registry, anyop_namespace):
        for name in names:
            await create(api, anyop_namespace, name)
            with anyio.fail_after(DEADLINE):
                while ticks[name] < 3:
                    await anyio.sleep(0.01)
            await delete_and_wait(api, anyop_namespace, name)
    assert deletions == Counter(dict.fromkeys(names, 1))
    assert loud(caplog) == []
    retried = sum("changed meanwhile" in message for message in caplog.messages)
    print(f"{retried} JSON patches met another write and were applied again")


async def test_the_functions_of_a_patch_land_after_a_concurrent_write(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another client writes between our merge-patch and our JSON patch: its test fails."""
    caplog.set_level(logging.DEBUG, logger="anyop")
    original = KubeClient.patch
    meddled: list[str] = []

    async def meddling(self: KubeClient, resource: Any, payload: Any, **kwargs: Any) -> Any:
        if kwargs.get("patch_type") is PatchType.JSON and not meddled:
            meddled.append(kwargs["name"])
            change = {"metadata": {"labels": {"other": "client"}}}
            path = url(anyop_namespace, kwargs["name"])
            (await api.patch(path, json=change, headers=MERGE)).raise_for_status()
        return await original(self, resource, payload, **kwargs)

    monkeypatch.setattr(KubeClient, "patch", meddling)
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(patch: Any, **_: Any) -> str:
        patch.spec["merged"] = True
        patch.fns.append(lambda body: body["spec"].setdefault("items", []).append("added"))
        return "done"

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "fns")
        found = await wait_for(
            api, url(anyop_namespace, "fns"), lambda b: "items" in b.get("spec", {})
        )
    assert meddled == ["fns"]
    assert found["spec"] == {"field": "value", "merged": True, "items": ["added"]}
    assert found["metadata"]["labels"] == {"other": "client"}
    assert any("changed meanwhile" in message for message in caplog.messages)
    assert loud(caplog) == []
