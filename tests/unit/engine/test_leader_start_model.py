"""Leader election's start-up on virtual time, seeded: two or three replicas start at the same
moment (or nearly), with no Lease yet, a Lease of a replica long gone, a released one, or one
that names a starting replica (a restart under the same identity); API calls are slow, fail
before or after they land, and Lease writes meet conflicts. Never do two replicas lead at once
(the gate of each lets handlers run only while it leads), and one of them leads in the end.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import time
from typing import Any

import anyio
import pytest
from tests.shard_model import Client, Schedule, World, seeded_scheduler
from tests.virtual import run_virtual

from anyop.engine.coordination import lease_keeper
from anyop.engine.coordination.lease_keeper import hold_leadership
from anyop.engine.coordination.pause_gate import Gate
from anyop.leadership import LEASES, Action
from anyop.settings import LeadershipSettings

BLOCK = 25
"""Schedules per backend in one run of the suite."""

SETTINGS = dict(lease_name="leader", lease_duration=4, renew_deadline=3, retry_period=1)


@dataclasses.dataclass
class Starter:
    """A replica as the model's client sees it (never stalled; dead once killed)."""

    name: str
    dead: bool = False

    async def pause_point(self) -> None:
        """Never stalls."""


def existing_lease(kind: str, holder: str) -> dict[str, Any] | None:
    """The Lease found at start-up."""
    if kind == "none":
        return None
    spec = {"holderIdentity": None if kind == "released" else holder, "leaseDurationSeconds": 4}
    return {"apiVersion": LEASES.api_version, "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "ns"}, "spec": spec}  # fmt: skip


async def start_up(seed: int) -> tuple[int, int]:
    """Play one start-up; return the most replicas that led at once, and who leads at the end."""
    rng = random.Random(seed)
    count = rng.choice([2, 3])
    names = [f"r{index}" for index in range(count)]
    plan = Schedule(
        seed=seed,
        events=(),
        latency=rng.choice([0.0, 0.05, 0.3]),
        fault_rate=rng.choice([0.0, 0.05, 0.2]),
        conflict_rate=rng.choice([0.0, 0.05, 0.2]),
    )
    world = World(plan)
    lease = existing_lease(rng.choice(["none", "gone", "released", "mine"]), rng.choice(
        ["long-gone", names[0]]))  # fmt: skip
    if lease is not None:
        world.stamp(lease)
    gates = {name: Gate() for name in names}
    most = 0
    started: list[str] = []

    async def replica(name: str) -> None:
        await anyio.sleep(rng.choice([0.0, 0.0, rng.uniform(0, 0.5)]))
        client: Any = Client(world, Starter(name))  # type: ignore[arg-type]
        settings = LeadershipSettings(enabled=True, identity=name, **SETTINGS)
        started.append(name)  # its gate is paused before hold_leadership first waits
        await hold_leadership(client, settings, "ns", gate=gates[name])

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(replica, name)
        for tick in range(800):  # 40 virtual seconds, looked at every 50 ms
            most = max(most, sum(1 for name in started if gates[name].is_open()))
            await anyio.sleep(0.05)
            if tick == 500:  # the API server is well again: someone must lead by the end
                world.plan = dataclasses.replace(plan, fault_rate=0.0, conflict_rate=0.0)
        tg.cancel_scope.cancel()
    leaders = sum(1 for gate in gates.values() if gate.is_open())
    return most, leaders


def chosen_seeds() -> range:
    """``ANYOP_LEADER_SEEDS`` (``7`` or ``0-999``), or this minute's block."""
    chosen = os.environ.get("ANYOP_LEADER_SEEDS", "")
    if chosen:
        first, _, last = chosen.partition("-")
        return range(int(first), int(last or first) + 1)
    start = (int(time.time()) // 60 % 10_000) * BLOCK
    return range(start, start + BLOCK)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_replicas_starting_together_never_both_lead(
    backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="anyop")
    seeds = chosen_seeds()
    print(f"[leader start-up model] {backend}: seeds {seeds.start}-{seeds.stop - 1}")
    for seed in seeds:
        with seeded_scheduler(seed, monkeypatch):
            most, leaders = run_virtual(start_up, seed, backend=backend)
        assert most <= 1, f"seed {seed}: {most} replicas led at once"
        assert leaders == 1, f"seed {seed}: {leaders} replicas lead in the end"


def _impatient(record: Any, *, identity: str, observation: Any, now: float) -> Action:
    """A broken rule: take a Lease held by another replica without waiting for it to expire."""
    if record is None:
        return Action.CREATE
    return Action.RENEW if record.holder == identity else Action.TAKE


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_model_sees_a_replica_that_takes_the_lease_too_early(
    backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="anyop")
    monkeypatch.setattr(lease_keeper, "decide", _impatient)
    worst = 0
    for seed in range(10):
        with seeded_scheduler(seed, monkeypatch):
            most, _ = run_virtual(start_up, seed, backend=backend)
        worst = max(worst, most)
    assert worst > 1
