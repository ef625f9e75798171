"""Timers on the real control plane: intervals, sharpness, idling, one-shots, errors, stopping.

Timings are tenths of seconds; the assertions on time leave wide margins and compare schedules
with each other rather than with exact numbers.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_daemons_e2e import FINALIZER, finalizers, merge, until
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for
from tests.virtual import now

import anyop
from anyop.errors import TemporaryError
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


async def seconds_to_delete(api: httpx.AsyncClient, path: str) -> float:
    """Delete the object and wait until it is gone; how long that took."""
    t0 = now()
    (await api.delete(path)).raise_for_status()
    await wait_for(api, path, lambda b: b == {})
    return now() - t0


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def test_an_interval_timer_repeats_and_delivers_results_and_patches(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    ticks: list[float] = []
    now()  # the sync ticker reads this loop's clock from its thread

    @anyop.timer("kopfexamples", registry=registry, interval=0.2, id="ticker")
    def ticker(patch: anyop.Patch, stopped: anyop.DaemonStopped, **_: Any) -> int:
        assert isinstance(stopped, anyop.SyncDaemonStopped)
        ticks.append(now())
        patch.status["ticks"] = len(ticks)
        return len(ticks)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ticker")
        path = url(anyop_namespace, "ticker")
        body = await wait_for(api, path, lambda b: b.get("status", {}).get("ticker", 0) >= 4)
    assert body["status"]["ticks"] >= 4
    assert all(gap >= 0.19 for gap in gaps(ticks))


async def test_a_sharp_timer_keeps_its_grid_despite_a_slow_handler(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    sharp: list[float] = []
    loose: list[float] = []

    @anyop.timer("kopfexamples", registry=registry, interval=0.8, sharp=True, id="sharp")
    async def sharp_fn(**_: Any) -> None:
        sharp.append(now())
        await anyio.sleep(0.5)

    @anyop.timer("kopfexamples", registry=registry, interval=0.8, id="loose")
    async def loose_fn(**_: Any) -> None:
        loose.append(now())
        await anyio.sleep(0.5)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "sharp")
        await until(lambda: len(sharp) >= 4 and len(loose) >= 3)
    sharp_gaps, loose_gaps = gaps(sharp[:4]), gaps(loose[:3])
    assert all(0.75 <= gap < 1.1 for gap in sharp_gaps), sharp_gaps  # the grid: 0.8
    assert all(gap >= 1.25 for gap in loose_gaps), loose_gaps  # 0.5 of work + 0.8 of pause


async def test_the_idle_clock_is_reset_by_spec_changes_but_not_by_status_changes(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    fired: list[float] = []

    @anyop.timer("kopfexamples", registry=registry, idle=1.0, id="quiet")
    async def quiet(**_: Any) -> None:
        fired.append(now())

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "quiet")
        path = url(anyop_namespace, "quiet")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        for i in range(6):  # spec changes every 0.3 s: never 1.0 s of quiet
            await merge(api, path, {"spec": {"field": f"v{i}"}})
            await anyio.sleep(0.3)
        assert fired == []
        last_spec_change = now() - 0.3
        for i in range(6):  # status changes only: the clock keeps running
            await merge(api, path + "/status", {"status": {"noise": i}})
            await anyio.sleep(0.3)
        await until(lambda: len(fired) == 1)
        assert fired[0] - last_spec_change >= 0.95
        assert fired[0] - last_spec_change < 1.0 + 0.9  # not held back by the status noise
        await anyio.sleep(1.3)
        assert len(fired) == 1, "idle-only: once per quiet period"
        await merge(api, path, {"spec": {"field": "again"}})
        await until(lambda: len(fired) == 2)


async def test_idle_plus_interval_repeats_while_quiet(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    fired: list[float] = []

    @anyop.timer("kopfexamples", registry=registry, idle=0.6, interval=0.2, id="idling")
    async def idling(**_: Any) -> None:
        fired.append(now())

    async with running(registry, anyop_namespace):
        t0 = now()
        await create(api, anyop_namespace, "idling")
        await until(lambda: len(fired) >= 3)
    assert fired[0] - t0 >= 0.55  # creation is a change: the first run waits the idle time
    assert all(gap < 0.5 for gap in gaps(fired[:3]))  # then the interval, not the idle time


async def test_a_timer_without_interval_and_idle_runs_once(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    @anyop.timer("kopfexamples", registry=registry, initial_delay=0.2, id="once")
    async def once(name: str, **_: Any) -> None:
        calls.append(name)

    async with running(registry, anyop_namespace):
        t0 = now()
        await create(api, anyop_namespace, "once")
        path = url(anyop_namespace, "once")
        await until(lambda: calls == ["once"])
        assert now() - t0 >= 0.2  # the initial delay
        await merge(api, path, {"spec": {"field": "changed"}})
        await anyio.sleep(0.5)
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
    assert calls == ["once"]


async def test_timer_errors_override_the_schedule_and_retries_reset_on_success(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    retries: list[int] = []

    @anyop.timer("kopfexamples", registry=registry, interval=0.3, backoff=0.05, id="erring")
    async def erring(retry: int, **_: Any) -> None:
        retries.append(retry)
        if len(retries) in (1, 2):
            raise TemporaryError("soon", delay=0.05)
        if len(retries) == 4:
            raise ValueError("arbitrary")

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "erring")
        await until(lambda: len(retries) >= 6)
    assert retries[:6] == [0, 1, 2, 0, 1, 0]


async def test_deleting_the_object_stops_a_running_timer_within_a_tick(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    calls: list[float] = []

    @anyop.timer("kopfexamples", registry=registry, interval=DEADLINE, id="rare")
    async def rare(**_: Any) -> None:
        calls.append(now())

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "rare")
        path = url(anyop_namespace, "rare")
        await until(lambda: len(calls) == 1)
        assert await seconds_to_delete(api, path) < 2.0  # not held for the interval


async def test_sleeping_timers_hold_their_objects_but_no_tasks(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    names = [f"sleeper-{i}" for i in range(5)]
    ran: set[str] = set()

    @anyop.timer("kopfexamples", registry=registry, interval=3600, id="hourly")
    async def hourly(name: str, **_: Any) -> None:
        ran.add(name)

    def timer_tasks() -> list[str]:  # a timer's task is named after its object or its handler
        return [task.name for task in anyio.get_running_tasks()
                if task.name.startswith(("anyop object ", "anyop Timer "))]  # fmt: skip

    async with running(registry, anyop_namespace):
        for name in names:
            await create(api, anyop_namespace, name)
        await until(lambda: ran == set(names))
        for name in names:
            await wait_for(api, url(anyop_namespace, name), lambda b: FINALIZER in finalizers(b))
        await until(lambda: not timer_tasks())  # each run's task ends with the run
        await anyio.sleep(0.2)
        assert timer_tasks() == []
        gone = await seconds_to_delete(api, url(anyop_namespace, names[0]))
        assert gone < 2.0  # a sleeping timer ends at once
    assert ran == set(names)


async def test_a_callable_initial_delay_sees_the_body_and_a_deletion_meanwhile_ends_the_timer(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    asked: list[str] = []
    ran: dict[str, float] = {}

    def delay_of(name: str, body: anyop.Body, **_: Any) -> float:
        asked.append(body["metadata"]["name"])
        return 0.5 if name == "soon" else DEADLINE * 10

    @anyop.timer("kopfexamples", registry=registry, interval=3600, initial_delay=delay_of, id="t")
    async def timer(name: str, **_: Any) -> None:
        ran[name] = now()

    async with running(registry, anyop_namespace):
        t0 = now()
        await create(api, anyop_namespace, "soon")
        await create(api, anyop_namespace, "never")
        late = url(anyop_namespace, "never")
        await wait_for(api, late, lambda b: FINALIZER in finalizers(b))
        await until(lambda: "soon" in ran)
        assert ran["soon"] - t0 >= 0.5
        assert sorted(asked) == ["never", "soon"]  # called once each, with the body
        assert await seconds_to_delete(api, late) < 2.0  # not held for its initial delay
    assert "never" not in ran


async def test_a_timeout_counts_from_the_first_attempt_not_the_delay_or_the_pause(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    runs: list[float] = []

    @anyop.timer("kopfexamples", registry=registry, initial_delay=0.4, interval=0.4,
                 timeout=0.25, id="brief")  # fmt: skip
    async def brief(runtime: Any, **_: Any) -> None:
        runs.append(runtime.total_seconds())

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "brief")
        await until(lambda: len(runs) >= 3)  # neither the delay nor the pause timed it out
    assert all(runtime < 0.25 for runtime in runs)


async def test_a_delay_that_is_not_a_number_runs_the_timer_now_with_a_warning(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    ran: list[str] = []

    @anyop.timer("kopfexamples", registry=registry, interval=3600,
                 initial_delay=lambda **_: float("nan"), id="nan")  # fmt: skip
    async def nan(name: str, **_: Any) -> None:
        ran.append(name)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "nan")
        await until(lambda: ran == ["nan"])
        await create(api, anyop_namespace, "nan-2")  # the resource's timers still work
        await until(lambda: sorted(ran) == ["nan", "nan-2"])
    assert "Timer 'nan' got a delay that is not a number: it runs now." in caplog.messages
