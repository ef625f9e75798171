"""Seeded schedules of sharded replicas (``tests/shard_model.py``) on virtual time: joins at
once and one after another, leaves, kills, stalls, Lease write conflicts and API faults, with
objects created throughout. No object's handler runs in two replicas at once, none is handled
twice, and every one is handled.

Each run of the suite plays a different block of seeds (it moves every minute) and prints it; a
failure names its seed, and ``ANYOP_SHARD_SEEDS=<seed>`` (or ``<first>-<last>``) replays exactly
those (``nox -s stress-sharding`` plays ten thousand).
"""

from __future__ import annotations

import logging
import os
import time

import pytest
from tests.shard_model import Event, Schedule, Violation, run_model, schedule, seeded_scheduler
from tests.virtual import run_virtual

from anyop.engine.coordination import shard_keeper

BLOCK = 100
"""Schedules per backend in one run of the suite."""

PROGRESS = 500
"""A line every this many schedules (the stress session's thousands)."""

BACKENDS = ["asyncio", "trio"]


def chosen_seeds() -> range:
    """``ANYOP_SHARD_SEEDS`` (``7`` or ``0-9999``), or this minute's block of :data:`BLOCK`."""
    chosen = os.environ.get("ANYOP_SHARD_SEEDS", "")
    if chosen:
        first, _, last = chosen.partition("-")
        return range(int(first), int(last or first) + 1)
    start = (int(time.time()) // 60 % 10_000) * BLOCK
    return range(start, start + BLOCK)


def play(plan: Schedule, backend: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One schedule on its own virtual-time loop; its trace."""
    with seeded_scheduler(plan.seed, monkeypatch):
        world = run_virtual(run_model, plan, backend=backend)
    return list(world.trace)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_object_is_handled_twice_or_never_whatever_the_schedule(
    backend: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="anyop")  # thousands of schedules' warnings
    seeds = chosen_seeds()
    with capsys.disabled():
        print(f"\n[shard model] {backend}: seeds {seeds.start}-{seeds.stop - 1}", flush=True)
    objects = 0
    for seed in seeds:
        plan = schedule(seed)
        try:
            play(plan, backend, monkeypatch)
        except (Violation, TimeoutError) as e:
            replay = f"ANYOP_SHARD_SEEDS={seed} pytest {__file__} -k {backend}"
            pytest.fail(f"seed {seed} failed ({replay}): {e!r}\n{plan.describe()}")
        objects += plan.objects
        if (seed - seeds.start + 1) % PROGRESS == 0:
            with capsys.disabled():
                print(f"[shard model] {backend}: seeds {seeds.start}-{seed} held", flush=True)
    with capsys.disabled():
        print(f"[shard model] {backend}: {len(seeds)} schedules, {objects} objects, "
              f"each handled once", flush=True)  # fmt: skip


REGRESSIONS = {
    443691: "b, stalled past its fence, is counted out by a, which takes its objects back at "
    "once; b comes back and counts a's acknowledgement written before (rewritten meanwhile by "
    "another writer, so renewed since b's listing)",
}
"""Seeds that once failed, played by every run (on top of the minute's block)."""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", sorted(REGRESSIONS))
def test_a_schedule_that_once_failed_holds(
    seed: int, backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="anyop")
    trace = play(schedule(seed), backend, monkeypatch)
    assert any(" completes " in line for line in trace)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_seed_replays_exactly(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = schedule(11)
    first, second = play(plan, backend, monkeypatch), play(plan, backend, monkeypatch)
    assert first == second
    assert any(" begins " in line for line in first)


COLD_START = Schedule(
    seed=1,
    events=(
        Event(0.0, "create", value=60),
        Event(0.0, "start", "r1"),
        Event(0.0, "start", "r2"),
        Event(0.0, "start", "r3"),
    ),
    latency=0.05,
    fault_rate=0.0,
    conflict_rate=0.0,
)
"""Three replicas start together over a backlog (a Deployment's rollout)."""


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_replicas_started_together_share_a_backlog(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = play(COLD_START, backend, monkeypatch)
    handlers = {line.split()[1] for line in trace if " completes " in line}
    assert handlers == {"r1", "r2", "r3"}


def _never(self: shard_keeper.ShardKeeper) -> None:
    return None


MUTANTS = {
    "a-lapsed-fence-keeps-the-view": ("_lapsed", _never, 100035),
}
"""Rules of the keeper broken on purpose, each with a seed whose schedule then fails (the rule
on acknowledgements written after a join is tested directly in ``test_shard_keeper.py``)."""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_the_model_fails_a_keeper_without_each_rule(
    mutant: str, backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="anyop")
    name, broken, seed = MUTANTS[mutant]
    monkeypatch.setattr(shard_keeper.ShardKeeper, name, broken)
    with pytest.raises(Violation):
        play(schedule(seed), backend, monkeypatch)
    monkeypatch.undo()
    play(schedule(seed), backend, monkeypatch)  # the rule intact: it holds
