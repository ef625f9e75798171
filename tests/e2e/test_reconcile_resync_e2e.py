"""@anyop.reconcile's ``resync=`` on the real control plane: an object that nobody changes is
reconciled again every ``resync`` seconds (not sooner, and not much later)."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import running
from tests.e2e.test_reconcile_e2e import make

import anyop
from anyop.handlers.registry import OperatorRegistry

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

RESYNC = 2.0


async def test_an_unchanged_object_is_reconciled_again_every_resync_seconds(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, calls = OperatorRegistry(), []

    @anyop.reconcile("kopfexamples", resync=RESYNC, registry=registry)
    async def keep(name: str, **_: Any) -> None:
        calls.append(anyio.current_time())  # no write: nothing but the resync calls it again

    async with running(registry, anyop_namespace):
        await make(api, anyop_namespace, "r", field="one")
        with anyio.fail_after(60):
            while len(calls) < 5:
                await anyio.sleep(0.1)
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert all(gap >= RESYNC * 0.9 for gap in gaps), gaps  # never sooner than asked
    assert all(gap < RESYNC * 3 for gap in gaps), gaps  # and no call skipped


async def test_without_resync_an_unchanged_object_is_not_reconciled_again(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, calls = OperatorRegistry(), []

    @anyop.reconcile("kopfexamples", registry=registry)
    async def keep(name: str, **_: Any) -> None:
        calls.append(anyio.current_time())

    async with running(registry, anyop_namespace):
        await make(api, anyop_namespace, "r", field="one")
        with anyio.fail_after(60):
            while not calls:
                await anyio.sleep(0.1)
        await anyio.sleep(RESYNC * 3)  # as long as three resyncs of the other test
    assert len(calls) == 1
