"""The objects' own task groups: one per object with work, none for an idle object."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from anyop.engine.object_groups import ObjectHosts

pytestmark = pytest.mark.anyio

DEADLINE = 5


async def test_an_objects_jobs_share_one_group_that_closes_with_the_last_one() -> None:
    ran: list[str] = []
    tasks_at: list[int] = []
    release = anyio.Event()

    async def job(name: str) -> None:
        ran.append(name)
        await release.wait()

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            hosts = ObjectHosts(tg)
            before = len(anyio.get_running_tasks())
            hosts.start("a", job, "cycle", name="cycle")
            hosts.start("a", job, "daemon", name="daemon")  # before the group is open
            await anyio.wait_all_tasks_blocked()
            hosts.start("a", job, "timer", name="timer")  # into the open group
            await anyio.wait_all_tasks_blocked()
            tasks_at.append(len(anyio.get_running_tasks()) - before)
            assert ran == ["cycle", "daemon", "timer"]
            assert "a" in hosts
            release.set()
            await anyio.wait_all_tasks_blocked()
            assert "a" not in hosts
            assert len(hosts) == 0
            while len(anyio.get_running_tasks()) > before:  # the host task is returning
                await anyio.lowlevel.checkpoint()
            tasks_at.append(len(anyio.get_running_tasks()) - before)
    assert tasks_at == [3, 0]  # the host task runs the first job itself


async def test_cancelling_an_object_stops_all_of_its_jobs_and_no_others_and_new_jobs_run() -> None:
    cancelled: list[str] = []
    stop_b = anyio.Event()

    async def job(name: str) -> None:
        try:
            await anyio.sleep_forever() if name != "b" else await stop_b.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(name)
            raise

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            hosts = ObjectHosts(tg)
            hosts.start("a", job, "a-cycle", name="x")
            hosts.start("a", job, "a-daemon", name="x")
            hosts.start("b", job, "b", name="x")
            await anyio.wait_all_tasks_blocked()
            hosts.cancel("a")
            await anyio.wait_all_tasks_blocked()
            assert sorted(cancelled) == ["a-cycle", "a-daemon"]
            assert "a" not in hosts
            assert "b" in hosts
            done = anyio.Event()

            async def after() -> None:
                done.set()

            hosts.start("a", after, name="after")  # a new group: not the cancelled one
            await done.wait()
            stop_b.set()
    assert sorted(cancelled) == ["a-cycle", "a-daemon"]


async def test_a_cancel_before_the_group_opens_runs_nothing() -> None:
    ran: list[str] = []

    async def job() -> None:
        ran.append("ran")

    async with anyio.create_task_group() as tg:
        hosts = ObjectHosts(tg)
        hosts.start("a", job, name="x")
        hosts.cancel("a")
    assert ran == []
    assert len(hosts) == 0


async def test_a_failing_job_fails_the_resources_group() -> None:
    async def boom() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(BaseExceptionGroup) as caught:
        async with anyio.create_task_group() as tg:
            ObjectHosts(tg).start("a", boom, name="x")
    assert caught.group_contains(RuntimeError, match="a bug", depth=2)


async def test_a_worker_runs_in_the_open_group_or_beside_it_never_opening_one() -> None:
    cancelled: list[str] = []

    async def job(name: str) -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(name)
            raise

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            hosts = ObjectHosts(tg)
            before = len(anyio.get_running_tasks())
            hosts.start_worker("a", job, "a-worker", name="w")
            await anyio.wait_all_tasks_blocked()
            assert len(anyio.get_running_tasks()) - before == 1  # one task, no group
            assert "a" not in hosts
            hosts.start("b", job, "b-daemon", name="d")
            await anyio.wait_all_tasks_blocked()
            hosts.start_worker("b", job, "b-worker", name="w")  # into b's open group
            await anyio.wait_all_tasks_blocked()
            hosts.cancel("b")  # the group, and so the worker in it
            await anyio.wait_all_tasks_blocked()
            assert sorted(cancelled) == ["b-daemon", "b-worker"]
            tg.cancel_scope.cancel()
    assert sorted(cancelled) == ["a-worker", "b-daemon", "b-worker"]
