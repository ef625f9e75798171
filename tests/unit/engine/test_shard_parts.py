"""A served resource's share of a sharded operator: what reaches the workers, what is kept for
later, what is handed over (its running cycle finishes, no other starts), and when it is clean."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from anyop.engine.coordination.shards import Shard
from anyop.engine.cycle.object_slots import CycleResult, ObjectSlot
from anyop.engine.cycle.reconciler import Observed
from anyop.engine.resource.shard_parts import ResourceShard
from anyop.engine.resource.workers import ObjectWorkers
from anyop.sharding import ShardState, View

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

DEADLINE = 5


def observed(uid: str, version: int, kind: str = "MODIFIED") -> Observed:
    return Observed({"metadata": {"uid": uid, "resourceVersion": str(version)}}, type=kind)  # type: ignore[arg-type]


def uids_owned_by(view: View, member: str, count: int) -> list[str]:
    uids = [str(uuid.UUID(int=random.Random(i).getrandbits(128), version=4)) for i in range(200)]
    found = [uid for uid in uids if view.owner(uid) == member]
    return found[:count]


class Cycles:
    """Records the cycles; the first one of ``held`` waits until released."""

    def __init__(self, held: str | None = None) -> None:
        self.seen: list[tuple[str, str]] = []
        self.held = held
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, slot: ObjectSlot, body: Mapping[str, Any]) -> CycleResult:
        self.seen.append((slot.uid, body["metadata"]["resourceVersion"]))
        if slot.uid == self.held:
            self.held = None
            self.entered.set()
            await self.release.wait()
        return CycleResult(delay=0.5)  # as a cycle that will want to run again


async def test_objects_go_to_their_owner_are_kept_until_gained_and_are_handed_over() -> None:
    shard = Shard(ShardState.alone("a"))
    shard.retarget(["b"])
    shard.activate()  # a and b share the objects
    two = View.of(["a", "b"])
    ours, theirs = uids_owned_by(two, "a", 2), uids_owned_by(two, "b", 2)
    relists: list[int] = []
    listings = [1]  # the watch's first listing has started
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            cycles = Cycles(held=ours[0])
            workers = ObjectWorkers(cycles, tg, idle_timeout=0)
            part = ResourceShard(
                shard,
                workers,
                workers.dispatch,
                spawner=None,
                hosts=workers.hosts,
                relist=lambda: relists.append(1),
                exit_timeout=10,
                listings=lambda: listings[0],
            )
            with shard.joined(part):
                for uid in [*ours, *theirs]:
                    part.dispatch(observed(uid, 1))
                await cycles.entered.wait()
                assert set(workers.slots) == set(ours)  # theirs: dropped at once
                assert part.size == 2
                assert shard.size == 2

                # b leaves: we gain its objects once the view is activated, from a new listing.
                assert shard.retarget([])
                for uid in theirs:
                    part.dispatch(observed(uid, 2))
                assert set(workers.slots) == set(ours)  # not yet
                assert shard.sweep()  # nothing of ours is outside the new view
                shard.activate()
                assert relists == [1]  # the bodies seen so far may predate b's last writes
                for uid in theirs:
                    part.dispatch(observed(uid, 3))  # still from before the new listing
                assert set(workers.slots) == set(ours)
                listings[0] += 1  # the new listing starts
                for uid in theirs:
                    part.dispatch(observed(uid, 4, "ADDED"))
                assert set(workers.slots) == {*ours, *theirs}
                assert not any(seen[1] in ("2", "3") for seen in cycles.seen)

                # c joins: what becomes c's is handed over; its running cycle finishes first.
                shard.retarget(["c"])
                three = View.of(["a", "c"])
                lost = [uid for uid in [*ours, *theirs] if three.owner(uid) == "c"]
                kept = [uid for uid in [*ours, *theirs] if three.owner(uid) == "a"]
                assert relists == [1]  # a member joined: nothing to gain, no listing
                for uid in lost:
                    part.dispatch(observed(uid, 5))  # dropped, not handled
                assert lost
                assert not shard.sweep()  # their workers are still on their way out
                cycles.release.set()
                while not shard.sweep():
                    await anyio.sleep(0.01)
                assert set(workers.slots) == set(kept)
                assert not any(seen == (uid, "5") for uid in lost for seen in cycles.seen)
            workers.close()


async def test_a_handed_over_object_starts_no_new_cycle_and_leaves_its_slot() -> None:
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            cycles = Cycles(held="x")
            workers = ObjectWorkers(cycles, tg, idle_timeout=100)
            workers.dispatch(observed("x", 1))
            workers.dispatch(observed("y", 1))
            await cycles.entered.wait()
            workers.dispatch(observed("x", 2))  # pending behind the running cycle
            workers.release("x")
            workers.release("y")  # a worker waiting for its delay: it exits at once
            assert "x" in workers.slots  # its cycle still runs
            cycles.release.set()
            while workers.slots:
                await anyio.sleep(0.01)
            workers.close()
    assert sorted(cycles.seen) == [("x", "1"), ("y", "1")]  # x's pending body: never handled


class Reconcilers:
    """What a resource's reconcilers hold, and what they were asked to hand over."""

    def __init__(self, held: set[str]) -> None:
        self.known = held
        self.released: list[str] = []

    def held(self) -> set[str]:
        return set(self.known)

    def holds(self, uid: str) -> bool:
        return uid in self.known

    def release(self, uid: str, deadline: float = 0.0) -> None:
        self.released.append(uid)
        self.known.discard(uid)


async def test_others_objects_are_handed_over_by_reconcilers_only_if_they_hold_them() -> None:
    shard = Shard(ShardState.alone("a"))
    shard.retarget(["b"])
    shard.activate()
    theirs = uids_owned_by(View.of(["a", "b"]), "b", 3)
    reconcilers = Reconcilers(held={theirs[0]})  # one of theirs was ours before
    async with anyio.create_task_group() as tg:
        workers = ObjectWorkers(Cycles(), tg, idle_timeout=0)
        part = ResourceShard(
            shard,
            workers,
            workers.dispatch,
            spawner=None,
            hosts=workers.hosts,
            relist=lambda: None,
            exit_timeout=10,
            controllers=reconcilers,  # type: ignore[arg-type]
        )
        with shard.joined(part):
            for version in (1, 2):
                for uid in theirs:
                    part.dispatch(observed(uid, version))
    assert reconcilers.released == [theirs[0]]  # the others' events cost nothing
    assert workers.slots == {}


async def test_a_clean_sweep_is_not_repeated_until_the_views_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shard keeper sweeps every second: under views that did not change since a clean
    sweep, held objects are not looked at again (at 100,000 objects that took most of a
    replica's CPU); once the views change, they are, and what is no longer ours goes."""
    shard = Shard(ShardState.alone("a"))
    shard.retarget(["b"])
    shard.activate()
    ours = uids_owned_by(View.of(["a", "b"]), "a", 6)
    asked: list[str] = []
    handles = shard.handles
    monkeypatch.setattr(shard, "handles", lambda uid: asked.append(uid) or handles(uid))
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            workers = ObjectWorkers(Cycles(), tg, idle_timeout=100)
            part = ResourceShard(
                shard, workers, workers.dispatch, spawner=None, hosts=workers.hosts,
                relist=lambda: None, exit_timeout=10,
            )  # fmt: skip
            with shard.joined(part):
                for uid in ours:
                    part.dispatch(observed(uid, 1))
                await anyio.sleep(0.1)
                assert set(workers.slots) == set(ours)
                assert shard.sweep()
                asked.clear()
                for _ in range(3):
                    assert shard.sweep()
                assert asked == []

                shard.retarget(["b", "c"])
                lost = [uid for uid in ours if View.of(["a", "b", "c"]).owner(uid) != "a"]
                assert lost
                while not shard.sweep():
                    await anyio.sleep(0.01)
                assert set(asked) >= set(ours)  # every held object looked at again
                assert set(workers.slots) == set(ours) - set(lost)
            workers.close()
