"""A whole operator against FakeCluster, twice with the same seed, gives the same trace: every
request, fault, answer and change in the same order, with the same bodies (issue: FakeCluster's
determinism). Virtual time; faults drawn from the seed; the operator's retry jitter seeded."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
from tests.virtual import run_virtual

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault
from anyop.testing.handle import open_operator

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"
NAMESPACE = "determinism"
NAMES = [f"kex-{index}" for index in range(8)]


def registry_of(ledger: Counter[tuple[str, str]]) -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, spec: anyop.Spec, **_: Any) -> dict[str, Any]:
        ledger["create_fn", name] += 1
        return {"field": spec.get("field")}

    @anyop.on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(name: str, **_: Any) -> None:
        ledger["update_fn", name] += 1

    @anyop.timer("kopfexamples", registry=registry, id="tick", interval=30)
    async def tick(patch: anyop.Patch, **_: Any) -> None:
        patch.status["ticked"] = True

    return registry


async def run(seed: int) -> tuple[str, Counter[tuple[str, str]]]:
    """Create, change and delete objects under seeded faults; the trace's digest at the end."""
    random.seed(seed)  # the operator's retry jitter
    ledger: Counter[tuple[str, str]] = Counter()
    fake = FakeCluster(seed=seed)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    # No latency: two answers due at the same virtual moment wake in an order Trio takes from
    # memory addresses. Retries wait Retry-After plus a jitter drawn from the seeded `random`.
    faults = [Fault.throttle(), Fault.server_error(503)]
    fake.faults.inject(seed=seed, rate=0.2, faults=faults, watch=False)
    vault = await fake.vault()
    with fake.routed():
        return await operate(fake, vault, ledger)


async def operate(
    fake: FakeCluster, vault: Any, ledger: Counter[tuple[str, str]]
) -> tuple[str, Counter[tuple[str, str]]]:
    async with (
        fake.client(faults=False, timeout=30) as api,
        open_operator(registry_of(ledger), namespace=NAMESPACE, api=api, vault=vault) as op,
    ):
        for name in NAMES:
            await op.create(KEX, {"metadata": {"name": name}, "spec": {"field": "one"}})
            await anyio.sleep(1)
        for name in NAMES:
            await op.wait_for(KEX, name, lambda obj: obj["status"].get("ticked"))
        for name in NAMES[:4]:
            await op.patch(KEX, name, {"spec": {"field": "two"}})
        await anyio.sleep(120)  # the changes handled, the timers ticking
    return fake.trace.digest(), ledger


def run_on(backend: str, seed: int) -> tuple[str, Counter[tuple[str, str]]]:
    """:func:`run` in an event loop of its own, on an autojumping fake clock from 0."""
    if backend == "trio":
        trio._core._run._r.seed(seed)
    result: tuple[str, Counter[tuple[str, str]]] = run_virtual(run, seed, backend=backend)
    return result


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_same_seed_gives_the_same_trace_of_a_whole_operator(backend: str) -> None:
    first, ledger = run_on(backend, 7)
    again, ledger_again = run_on(backend, 7)
    other, _ = run_on(backend, 8)
    assert ledger == ledger_again
    assert set(ledger.values()) == {1}  # each handler once per object, through the faults
    assert len(ledger) == len(NAMES) + 4
    assert first == again
    assert first != other
