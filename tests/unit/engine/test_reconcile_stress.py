"""``@anyop.reconcile`` under random schedules on FakeCluster with virtual time (see
``tests/reconcile_model.py``): spec changes (during its own status write too, which often
changes nothing), children deleted and edited (right after their creation too), late watch
events, other clients' status writes, requeues and restarts; then every parent converged.

The suite runs ``ANYOP_STRESS_COUNT`` schedules per backend (default 20) from a base seed drawn
per run (or ``ANYOP_STRESS_SEED``), printed; ``nox -s stress`` runs thousands. A failing seed
reruns alone: ``ANYOP_STRESS_SEED=<seed> ANYOP_STRESS_COUNT=1 pytest <this file>``.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.reconcile_model import DelayedWatcher, Model, schedule
from tests.virtual import run_virtual

from anyop.engine.reconciling import controller as controller_module
from anyop.engine.resource import serve_resource
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing import FakeCluster
from anyop.testing.handle import open_operator

CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
NAMESPACE = "stress"


def seeds() -> list[int]:
    count = int(os.environ.get("ANYOP_STRESS_COUNT", "20"))
    base = int(os.environ.get("ANYOP_STRESS_SEED", str(random.SystemRandom().randrange(10**9))))
    return [base + index for index in range(count)]


async def run(seed: int) -> list[str]:
    """One schedule on a fresh FakeCluster; the violations of the invariants."""
    random.seed(seed)  # the backoff's jitter
    fake = FakeCluster(seed=seed)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    vault = await fake.vault()
    settings = OperatorSettings()
    settings.reconciling.backoff_cap = 2  # our own failures (a child deleted under a patch)

    @contextlib.asynccontextmanager
    async def operate(registry: OperatorRegistry) -> AsyncIterator[Any]:
        async with open_operator(
            registry, namespace=NAMESPACE, api=api, vault=vault, settings=settings
        ) as handle:
            yield handle

    with fake.routed():
        async with fake.client(faults=False, timeout=30) as api:
            model = Model(api, NAMESPACE, operate, seed)
            await model.run(schedule(seed))
    return model.violations


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_parent_converges_under_random_schedules(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controller_module, "Watcher", DelayedWatcher)
    monkeypatch.setattr(serve_resource, "Watcher", DelayedWatcher)
    tried = seeds()
    started = time.monotonic()
    print(f"{backend}: seeds {tried[0]}..{tried[-1]} ({len(tried)} schedules)")
    for seed in tried:
        violations = run_virtual(run, seed, backend=backend)
        assert not violations, f"seed {seed} on {backend}: {violations}"
    print(f"{backend}: {len(tried)} schedules passed in {time.monotonic() - started:.1f}s")
