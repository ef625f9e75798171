"""The pause gate: holders pause and resume it; the leadership fence cancels fenced work."""

from __future__ import annotations

import anyio
import pytest

from anyop.engine.coordination.pause_gate import Gate

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

DEADLINE = 60  # fake seconds; only reached when something is broken


async def test_the_gate_is_open_until_a_holder_pauses_it_and_until_all_resume() -> None:
    gate = Gate()
    assert gate.is_open()
    gate.pause("peering", "a higher peer")
    gate.pause("leadership", "standing by")
    gate.resume("peering")
    assert not gate.is_open()
    assert gate.reasons == {"leadership": "standing by"}
    gate.resume("leadership")
    assert gate.is_open()


async def test_wait_open_returns_when_the_last_holder_resumes() -> None:
    gate = Gate()
    gate.pause("peering", "why")
    gate.pause("leadership", "why")
    returned: list[bool] = []

    async def wait_open() -> None:
        await gate.wait_open()
        returned.append(gate.is_open())

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_open)
            await anyio.wait_all_tasks_blocked()
            gate.resume("peering")
            await anyio.wait_all_tasks_blocked()
            assert returned == []  # still paused by the other holder
            gate.resume("leadership")
    assert returned == [True]


async def test_the_fence_cancels_fenced_work_at_its_deadline_and_moves_with_renewals() -> None:
    gate = Gate()
    gate.fence_until(anyio.current_time() + 0.05)
    with gate.fenced() as scope:
        gate.fence_until(anyio.current_time() + 0.2)  # a renewal moves the running scope too
        await anyio.sleep(0.1)  # fake time: past the first deadline, before the renewed one
        assert not scope.cancel_called
        await anyio.sleep(1)
    assert scope.cancelled_caught
    assert not gate.is_open()


async def test_a_past_fence_waits_for_a_renewal() -> None:
    gate = Gate()
    gate.fence_until(anyio.current_time() - 1)
    with anyio.move_on_after(0.05) as waited:
        await gate.wait_open()
    assert waited.cancelled_caught
    async with anyio.create_task_group() as tg:
        tg.start_soon(gate.wait_open)
        gate.fence_until(anyio.current_time() + 10)
    assert gate.is_open()


async def test_wait_paused_returns_when_a_holder_pauses() -> None:
    gate = Gate()
    returned: list[dict[str, str]] = []

    async def wait_paused() -> None:
        await gate.wait_paused()
        returned.append(gate.reasons)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_paused)
            await anyio.wait_all_tasks_blocked()
            assert returned == []  # nobody pauses yet: it waits
            gate.pause("peering", "why")
    assert returned == [{"peering": "why"}]
