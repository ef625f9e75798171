"""A whole operator whose system clock steps an hour forward or back while it runs
(RELIABILITY.md §5 row 41): timers keep their interval, a delayed retry runs when it was due,
and nothing is clamped. FakeCluster on virtual time; the system's wall clock is stepped with
``time_machine`` (``datetime.now`` and ``time.time``; the monotonic clocks are left alone, as
by a real step of the clock)."""

from __future__ import annotations

import datetime
import itertools
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
import time_machine

import anyop
from anyop.clock import system_now
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, RunningOperator

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
TICKS: list[float] = []
ATTEMPTS: list[float] = []
INTERVAL = 60.0
DELAY = 60.0


@pytest.fixture
def fake_cluster(kex_cluster: FakeCluster) -> FakeCluster:
    return kex_cluster  # with the KopfExample CRD (tests/unit/conftest.py)


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    registry = OperatorRegistry()
    TICKS.clear()
    ATTEMPTS.clear()

    @anyop.timer("kopfexamples", registry=registry, id="tick", interval=INTERVAL)
    async def tick(**_: Any) -> None:
        TICKS.append(anyio.current_time())

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(retry: int, **_: Any) -> str:
        ATTEMPTS.append(anyio.current_time())
        if retry == 0:
            raise anyop.TemporaryError("later", delay=DELAY)
        return "done"

    return registry


@pytest.mark.parametrize("hours", [1, -1], ids=["forward", "back"])
async def test_a_step_of_the_wall_clock_moves_no_timer_and_no_retry(
    fake_operator: RunningOperator, caplog: pytest.LogCaptureFixture, hours: int
) -> None:
    caplog.set_level(logging.WARNING, logger="anyop")
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {}})
    with anyio.fail_after(3600):
        while not ATTEMPTS:
            await anyio.sleep(1)
    start = anyio.current_time()
    with time_machine.travel(system_now() + datetime.timedelta(hours=hours)):  # the step
        await anyio.sleep(10 * INTERVAL)
        body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["create_fn"])
    assert body["status"]["create_fn"] == "done"
    assert len(ATTEMPTS) == 2
    assert DELAY <= ATTEMPTS[1] - ATTEMPTS[0] <= DELAY + 2  # due as written, not an hour off
    fired = [moment for moment in TICKS if moment >= start]
    gaps = [later - earlier for earlier, later in itertools.pairwise(fired)]
    assert 9 <= len(fired) <= 11  # ten intervals: ten firings, give or take one
    assert all(INTERVAL - 1 <= gap <= INTERVAL + 2 for gap in gaps), gaps
    assert not [r for r in caplog.records if "ahead of this clock" in r.getMessage()]
