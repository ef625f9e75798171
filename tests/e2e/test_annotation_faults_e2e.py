"""The annotation budget already spent by others: RELIABILITY.md §5 row 34.

An object arrives with 250 KiB of someone else's annotations (the API server takes 256 KiB for
all of them together). anyop's essence in annotations cannot fit: the handler runs once, a
warning says why and what to do, no write is retried in a loop, and a digest of the essence is
kept instead, so that a later change -- also one made while the operator is down -- is still
handled as an update (never as a creation). Both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_big_objects_e2e import annotations_storage
from tests.e2e.test_engine_e2e import DEADLINE, MERGE, running, url, wait_for

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

FILLER = "x" * (250 * 1024)


DIGEST = "anyop.dev/last-handled-digest"


def counting_registry(calls: list[str], diffs: list[Any] | None = None) -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> str:
        calls.append("create")
        return "created"

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(diff: Any, **_: Any) -> str:
        calls.append("update")
        if diffs is not None:
            diffs.append(diff)
        return "updated"

    return registry


async def create_full(api: httpx.AsyncClient, namespace: str) -> None:
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "full", "annotations": {"example.com/filler": FILLER}},
        "spec": {"field": "value"},
    }
    (await api.post(url(namespace), json=body)).raise_for_status()


async def test_row34_a_full_annotation_budget_is_said_clearly_with_no_rerun_and_no_write_loop(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ns = anyop_namespace
    writes: list[str | None] = []
    original = KubeClient.patch

    async def counting(self: KubeClient, *args: Any, **kwargs: Any) -> Any:
        writes.append(kwargs.get("subresource"))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(KubeClient, "patch", counting)
    calls: list[str] = []
    await create_full(api, ns)
    async with running(counting_registry(calls), ns, annotations_storage()):
        body = await wait_for(api, url(ns, "full"), lambda b: "create_fn" in b.get("status", {}))
        with anyio.fail_after(DEADLINE):  # the error says why, and what to do instead
            while not any("Keep the state in the status" in m for m in caplog.messages):
                await anyio.sleep(0.05)
    assert calls == ["create"]
    assert body["metadata"]["annotations"]["example.com/filler"] == FILLER
    assert len(writes) <= 3, writes  # no loop of refused writes
    stored = body["metadata"]["annotations"]
    assert "anyop.dev/last-handled-configuration" not in stored  # refused before the write
    assert DIGEST in stored  # the fallback, in the same write
    said = [m for m in caplog.messages if "Only a digest of the handled state is kept" in m]
    assert len(said) == 1, said  # warned once


async def test_row34_a_change_after_the_budget_was_full_is_still_handled(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    ns = anyop_namespace
    calls: list[str] = []
    diffs: list[Any] = []
    await create_full(api, ns)
    async with running(counting_registry(calls, diffs), ns, annotations_storage()):
        await wait_for(api, url(ns, "full"), lambda b: "create_fn" in b.get("status", {}))
        change = {"spec": {"field": "changed"}}
        (await api.patch(url(ns, "full"), json=change, headers=MERGE)).raise_for_status()
        with anyio.move_on_after(10):
            await wait_for(api, url(ns, "full"), lambda b: "update_fn" in b.get("status", {}))
    assert calls == ["create", "update"]
    # The old spec is unknown (only its digest was kept): the diff says it is new, as a whole.
    assert [tuple(item) for item in diffs[0]] == [("add", ("spec",), None, {"field": "changed"})]


async def test_row34_the_digest_survives_a_restart_and_a_change_made_meanwhile_is_handled(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    ns = anyop_namespace
    calls: list[str] = []
    await create_full(api, ns)
    async with running(counting_registry(calls), ns, annotations_storage()):
        await wait_for(api, url(ns, "full"), lambda b: DIGEST in b["metadata"]["annotations"])
    assert calls == ["create"]
    change = {"spec": {"field": "changed while down"}}
    (await api.patch(url(ns, "full"), json=change, headers=MERGE)).raise_for_status()
    async with running(counting_registry(calls), ns, annotations_storage()):
        body = await wait_for(api, url(ns, "full"), lambda b: "update_fn" in b.get("status", {}))
    assert calls == ["create", "update"]  # an update, not a second creation
    assert DIGEST in body["metadata"]["annotations"]
