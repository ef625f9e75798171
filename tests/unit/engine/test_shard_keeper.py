"""The shard keeper on fake time, with Leases in memory: views are activated only once all
members acknowledge them, and a replica cut off from the API server stops before the others may
take its objects (the fence)."""

from __future__ import annotations

import copy
import functools
import math
from typing import Any

import anyio
import pytest

from anyop.clock import utcnow
from anyop.engine.coordination.pause_gate import Gate
from anyop.engine.coordination.shard_keeper import ShardKeeper, hold_shard
from anyop.engine.coordination.shards import Shard
from anyop.errors import ConflictError, NotFoundError, TransportError
from anyop.settings import ShardingSettings
from anyop.sharding import INCARNATION_ANNOTATION, ShardState, View, member_body

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]


class Leases:
    """Lease objects in memory, with resourceVersions and conditional writes."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = 0

    def _stamp(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.version)
        self.objects[body["metadata"]["name"]] = body
        return copy.deepcopy(body)


class Client:
    """The few calls the keeper makes, on :class:`Leases`; ``cut`` makes every call fail."""

    def __init__(self, leases: Leases) -> None:
        self.leases = leases
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise TransportError("the API server is unreachable")

    async def list(self, resource: Any, **_: Any) -> Any:
        self._check()
        items = [copy.deepcopy(body) for body in self.leases.objects.values()]
        return type("Listed", (), {"items": items})()

    async def create(self, resource: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self._check()
        if body["metadata"]["name"] in self.leases.objects:
            raise ConflictError("exists", status=409)
        return self.leases._stamp(body)

    async def replace(self, resource: Any, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        current = self.leases.objects.get(body["metadata"]["name"])
        if current is None:
            raise NotFoundError("gone", status=404)
        if current["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise ConflictError("stale", status=409)
        return self.leases._stamp(body)

    async def get(self, resource: Any, *, name: str, **_: Any) -> dict[str, Any]:
        self._check()
        if name not in self.leases.objects:
            raise NotFoundError("none", status=404)
        return copy.deepcopy(self.leases.objects[name])

    async def delete(self, resource: Any, *, name: str, **_: Any) -> dict[str, Any]:
        self._check()
        if self.leases.objects.pop(name, None) is None:
            raise NotFoundError("none", status=404)
        return {}


SETTINGS = ShardingSettings(enabled=True, lease_duration=4, renew_deadline=3, retry_period=1)


async def test_a_replica_cut_off_stops_before_the_other_takes_its_objects() -> None:
    leases = Leases()
    clients = {who: Client(leases) for who in ("a", "b")}
    gates = {who: Gate() for who in ("a", "b")}
    shards = {who: Shard(ShardState.alone(who)) for who in ("a", "b")}
    activated: dict[str, list[tuple[float, tuple[str, ...]]]] = {"a": [], "b": []}
    for who, shard in shards.items():
        original = shard.activate

        def noting(who: str = who, original: Any = original) -> None:
            original()
            view = shards[who].state.target.members
            activated[who].append((anyio.current_time(), view))

        shard.activate = noting  # type: ignore[method-assign]
    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            for who in ("a", "b"):
                hold = functools.partial(
                    hold_shard, clients[who], SETTINGS, "ns", gate=gates[who], shard=shards[who]
                )
                await tg.start(hold)
            while not all(views and views[-1][1] == ("a", "b") for views in activated.values()):
                await anyio.sleep(0.1)
            assert gates["a"].leading()
            assert gates["b"].leading()

            clients["a"].cut = True  # a can no longer renew: its fence passes, then b takes all
            cut_at = anyio.current_time()
            while not (activated["b"] and activated["b"][-1][1] == ("b",)):
                await anyio.sleep(0.1)
            b_took_all_at = activated["b"][-1][0]
            tg.cancel_scope.cancel()
    a_fence = gates["a"].fence
    assert a_fence <= cut_at + SETTINGS.renew_deadline  # a stopped serving by then
    assert a_fence < b_took_all_at  # before b handled a's objects
    assert shards["a"].state.active is None  # a waits for a new view before it handles again
    assert b_took_all_at - cut_at <= SETTINGS.lease_duration + 2 * SETTINGS.retry_period


async def test_a_graceful_exit_deletes_the_lease_and_the_other_takes_over_at_its_next_step() -> (
    None
):
    leases = Leases()
    gates = {who: Gate() for who in ("a", "b")}
    shards = {who: Shard(ShardState.alone(who)) for who in ("a", "b")}
    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            scopes = {}
            for who in ("a", "b"):
                scopes[who] = anyio.CancelScope()

                async def member(who: str = who, *, task_status: Any) -> None:
                    with scopes[who]:
                        await hold_shard(
                            Client(leases),
                            SETTINGS,
                            "ns",
                            gate=gates[who],
                            shard=shards[who],
                            task_status=task_status,
                        )

                await tg.start(member)
            while not all(
                s.state.settled and len(s.state.target.members) == 2 for s in shards.values()
            ):
                await anyio.sleep(0.1)
            scopes["a"].cancel()
            left_at = anyio.current_time()
            while shards["b"].state.active is None or shards["b"].state.active.members != ("b",):
                await anyio.sleep(0.1)
            taken_in = anyio.current_time() - left_at
            tg.cancel_scope.cancel()
    assert len(leases.objects) == 0  # b's own is deleted at its exit too
    assert taken_in <= 2 * SETTINGS.retry_period  # no Lease duration to wait out
    assert math.isfinite(taken_in)


async def test_a_joining_replica_counts_only_acknowledgements_written_after_its_listing() -> None:
    """b and c acknowledge a view with a in it, but from before a's join: they may not have seen
    this a (a restart under the same identity), or may have counted it out meanwhile."""
    leases = Leases()
    view = View.of(["a", "b", "c"])
    for who in ("b", "c"):
        body = member_body(group=SETTINGS.group, identity=who, namespace="ns", duration=60,
                           ack=view.digest, now=utcnow())  # fmt: skip
        leases._stamp(body)
    shard = Shard(ShardState.alone("a"))
    keeper = ShardKeeper(Client(leases), SETTINGS, "ns", gate=Gate(), shard=shard)
    for _ in range(4):  # its write, its first listing after it, and more
        await keeper.step()
        assert shard.state.active is None
        assert shard.state.target == view
    for name, body in list(leases.objects.items()):
        if body["spec"]["holderIdentity"] != "a":
            leases._stamp(leases.objects[name])  # b and c renew: written after a's listing
    await keeper.step()
    assert shard.state.active == view


async def test_a_replica_whose_fence_passed_comes_back_as_a_new_incarnation() -> None:
    """The others may have counted it out meanwhile: their acknowledgements of views with its
    earlier incarnation in them do not count for it any more."""
    leases = Leases()
    client, gate, shard = Client(leases), Gate(), Shard(ShardState.alone("a"))

    def written() -> str:
        (body,) = leases.objects.values()
        return str(body["metadata"]["annotations"][INCARNATION_ANNOTATION])

    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            await tg.start(functools.partial(hold_shard, client, SETTINGS, "ns", gate=gate,
                                             shard=shard))  # fmt: skip
            while shard.state.active is None:
                await anyio.sleep(0.1)
            first = written()
            assert first == shard.state.incarnation == shard.state.target.incarnation("a")
            client.cut = True
            await anyio.sleep(SETTINGS.renew_deadline + 1)  # its fence passes
            assert shard.state.active is None
            client.cut = False
            while shard.state.active is None:
                await anyio.sleep(0.1)
            assert written() == shard.state.incarnation
            tg.cancel_scope.cancel()
    second = shard.state.incarnation
    assert second != first
    assert shard.state.active is not None
    assert shard.state.active.incarnation("a") == second
