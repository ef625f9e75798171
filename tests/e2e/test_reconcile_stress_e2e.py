"""``@anyop.reconcile`` under random schedules on the real control plane: a shorter run of the
generator of ``tests/unit/engine/test_reconcile_stress.py`` (``tests/reconcile_model.py``),
with real time, the real watch (events made late by the same seeded delays) and restarts.

Opt-in: ``ANYOP_STRESS_E2E_COUNT=N`` schedules per backend (``nox -s stress`` runs thousands on
FakeCluster in the test command's stead) from a base seed drawn per run (or
``ANYOP_STRESS_SEED``), printed; a failing seed names itself in the assertion. Seed 889540568
on Trio (2026-11-28) reported a duplicate child, not yet explained; until it is, this run is
kept out of the test command, which must not fail by chance.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import running
from tests.reconcile_model import MAX_DELAY, DelayedWatcher, Model, schedule

from anyop.engine.reconciling import controller as controller_module
from anyop.engine.resource import serve_resource
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]


async def test_every_parent_converges_under_random_schedules(
    api: httpx.AsyncClient, anyop_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controller_module, "Watcher", DelayedWatcher)
    monkeypatch.setattr(serve_resource, "Watcher", DelayedWatcher)
    count = int(os.environ.get("ANYOP_STRESS_E2E_COUNT", "0"))
    if count <= 0:
        pytest.skip("opt-in: ANYOP_STRESS_E2E_COUNT=N runs N real-time schedules per backend")
    base = int(os.environ.get("ANYOP_STRESS_SEED", str(random.SystemRandom().randrange(10**9))))
    settings = OperatorSettings()
    settings.reconciling.backoff_cap = 2
    print(f"seeds {base}..{base + count - 1} ({count} schedules)")
    for seed in range(base, base + count):
        namespace = f"{anyop_namespace}-{seed - base}"
        (
            await api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
        ).raise_for_status()

        @contextlib.asynccontextmanager
        async def operate(
            registry: OperatorRegistry, namespace: str = namespace
        ) -> AsyncIterator[Any]:
            async with running(registry, namespace, settings):
                yield

        try:
            model = Model(api, namespace, operate, seed, settle=MAX_DELAY + 3)
            await model.run(schedule(seed, steps=10))
        finally:
            await api.delete(f"/api/v1/namespaces/{namespace}")
        assert not model.violations, f"seed {seed}: {model.violations}"
