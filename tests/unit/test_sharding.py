"""The pure rules of sharding: ownership, views, members, and the hand-over's invariant."""

from __future__ import annotations

import collections
import datetime
import hashlib
import itertools
import random
import uuid

import pytest

from anyop.kube.shard_ranges import ShardRanges, shard_selector, uid_hash
from anyop.leadership import Observation
from anyop.sharding import (
    ACK_ANNOTATION,
    GROUP_LABEL,
    Member,
    ShardState,
    View,
    lease_name,
    live_members,
    member_body,
    owner,
)

_RANDOM = random.Random(7)
UIDS = [str(uuid.UUID(int=_RANDOM.getrandbits(128), version=4)) for _ in range(10_000)]
"""Uids as the API server makes them (random UUIDs), from a fixed seed."""


def test_every_object_has_exactly_one_owner_among_the_members() -> None:
    view = View.of(["b", "a", "c"])
    assert view.members == ("a", "b", "c")
    assert all(view.owner(uid) in view.members for uid in UIDS[:500])
    assert owner((), "x") is None


def test_shares_are_even_within_a_few_percent() -> None:
    shares = collections.Counter(owner(("r1", "r2", "r3"), uid) for uid in UIDS)
    assert all(3000 <= count <= 3700 for count in shares.values()), shares


def test_a_member_joining_takes_about_a_quarter_and_no_other_object_moves() -> None:
    before, after = ("r1", "r2", "r3"), ("r1", "r2", "r3", "r4")
    moved = [uid for uid in UIDS if owner(before, uid) != owner(after, uid)]
    assert all(owner(after, uid) == "r4" for uid in moved)  # only to the newcomer
    assert 0.22 * len(UIDS) <= len(moved) <= 0.28 * len(UIDS)


def test_a_member_leaving_spreads_only_its_own_objects() -> None:
    before, after = ("r1", "r2", "r3"), ("r1", "r3")
    moved = [uid for uid in UIDS if owner(before, uid) != owner(after, uid)]
    assert all(owner(before, uid) == "r2" for uid in moved)
    assert len(moved) == sum(1 for uid in UIDS if owner(before, uid) == "r2")


def test_the_digest_names_the_members_whatever_their_order() -> None:
    assert View.of(["a", "b"]).digest == View.of(["b", "a", "a"]).digest
    assert View.of(["a", "b"]).digest != View.of(["a", "b", "c"]).digest


def test_lease_names_are_valid_whatever_the_identity() -> None:
    name = lease_name("g" * 80, "host/with:odd chars-123")
    assert len(name) <= 63
    assert name.startswith("g" * 50 + "-")
    assert lease_name("grp", "a") != lease_name("grp", "b")


def test_a_member_is_read_from_its_lease_and_a_holderless_lease_is_none() -> None:
    body = member_body(
        group="grp",
        identity="me",
        namespace="ns",
        duration=15,
        ack="abc",
        now=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        resource_version="7",
    )
    assert body["metadata"]["labels"] == {GROUP_LABEL: "grp"}
    assert body["metadata"]["annotations"] == {ACK_ANNOTATION: "abc"}
    member = Member.from_body(body)
    assert member == Member(lease_name("grp", "me"), "me", 15, "abc", "7")
    assert Member.from_body({"metadata": {"name": "x"}, "spec": {}}) is None


def _member(name: str, version: str, duration: int = 10) -> Member:
    return Member(name, name, duration, None, version)


def test_members_are_live_until_their_lease_is_unchanged_for_its_duration() -> None:
    seen: dict[str, Observation] = {}
    live, seen = live_members([_member("a", "1"), _member("b", "1")], seen, now=100.0)
    assert [m.name for m in live] == ["a", "b"]  # first seen: just changed
    live, seen = live_members([_member("a", "2"), _member("b", "1")], seen, now=109.0)
    assert [m.name for m in live] == ["a", "b"]
    live, seen = live_members([_member("a", "3"), _member("b", "1")], seen, now=110.0)
    assert [m.name for m in live] == ["a"]  # b unchanged for 10 s on our clock
    live, seen = live_members([_member("a", "3")], seen, now=111.0)
    assert set(seen) == {"a"}  # a deleted Lease is forgotten


def test_nothing_is_handled_before_the_first_view_is_activated() -> None:
    state = ShardState.alone("me")
    assert not any(state.handles(uid) for uid in UIDS[:100])
    assert all(state.gains(uid) for uid in UIDS[:100])
    assert state.may_activate({"me": state.target.digest})
    state.activate()
    assert all(state.handles(uid) for uid in UIDS[:100])


def test_activation_waits_for_every_member_of_the_target_view() -> None:
    state = ShardState.alone("a")
    state.activate()
    assert state.retarget(["b"])
    digest = state.target.digest
    assert not state.may_activate({"a": digest, "b": None})
    assert not state.may_activate({"a": digest, "b": "old"})
    assert not state.may_activate({"b": digest})  # our own acknowledgement is needed too
    assert state.may_activate({"a": digest, "b": digest})
    assert not state.retarget(["b"])  # unchanged


@pytest.mark.parametrize(
    ("before", "after"), [(["b"], ["b", "c"]), (["b", "c"], ["b"])], ids=["join", "leave"]
)
def test_during_a_hand_over_only_what_is_ours_in_both_views_is_handled(
    before: list[str], after: list[str]
) -> None:
    state = ShardState.alone("a")
    state.retarget(before)
    state.activate()
    state.retarget(after)
    gained = 0
    for uid in UIDS[:2000]:
        old, new = View.of(["a", *before]).owner(uid), state.target.owner(uid)
        assert state.handles(uid) == (old == new == "a")
        assert state.gains(uid) == (new == "a" and old != "a")
        gained += state.gains(uid)
    assert (gained > 0) == (len(after) < len(before))  # a leave gives us objects
    state.activate()
    assert all(state.handles(uid) == (state.target.owner(uid) == "a") for uid in UIDS[:2000])


def test_an_acknowledgement_counts_only_for_the_incarnations_it_names() -> None:
    """b acknowledged a view with a's earlier incarnation in it: b may have counted that one out
    since and taken its objects, so it does not count for a, back as a new incarnation."""
    state = ShardState.alone("a", "a2")
    state.retarget({"b": "b1"})
    earlier = View.of({"a": "a1", "b": "b1"})
    assert earlier.members == state.target.members
    assert earlier.owner(UIDS[0]) == state.target.owner(UIDS[0])  # the same split
    assert earlier.digest != state.target.digest
    assert not state.may_activate({"a": state.target.digest, "b": earlier.digest})
    assert state.may_activate({"a": state.target.digest, "b": state.target.digest})


def test_a_new_incarnation_is_named_by_the_target_view_at_once() -> None:
    state = ShardState.alone("a", "a1")
    state.retarget({"b": "b1"})
    before = state.target
    state.reincarnate("a2")
    assert state.target.members == before.members
    assert state.target.incarnation("a") == "a2"
    assert state.target.incarnation("b") == "b1"
    assert not state.retarget({"b": "b1"})  # the next listing changes nothing more


def test_a_target_back_at_the_active_view_in_a_hand_over_is_activated_anew() -> None:
    """a handles all alone; b joins, and is counted out before the hand-over ends: a handles
    what it handled in the hand-over until it activates its own view again (after writing its
    acknowledgement, with a listing of what it gains back)."""
    state = ShardState.alone("a")
    state.activate()
    state.retarget(["b"])
    during = [state.handles(uid) for uid in UIDS[:1000]]
    assert not all(during)
    assert state.retarget([])
    assert state.target == View.of(["a"])
    assert [state.handles(uid) for uid in UIDS[:1000]] == during
    assert not state.settled
    assert not state.may_activate({"a": View.of(["a", "b"]).digest})  # its Lease says so still
    assert state.may_activate({"a": state.target.digest})
    state.activate()
    assert all(state.handles(uid) for uid in UIDS[:1000])


def _simulate(seed: int) -> None:
    """Replicas join and leave in random order, each stepping at random: at every moment, no
    object is handled by two replicas (each steps by the keeper's rules: retarget, release
    what is not ours, acknowledge once clean, activate once all acknowledge)."""
    rng = random.Random(seed)
    uids = UIDS[:300]
    names = ["r1", "r2", "r3", "r4", "r5"]
    alive: set[str] = {"r1", "r2"}
    states = {name: ShardState.alone(name) for name in names}
    acks: dict[str, str | None] = dict.fromkeys(names)
    handled: dict[str, set[str]] = {name: set() for name in names}
    for _ in range(400):
        if rng.random() < 0.1:  # membership changes
            name = rng.choice(names)
            if name in alive and len(alive) > 1:
                alive.discard(name)
                handled[name].clear()  # it died: it handles nothing (its fence)
                states[name], acks[name] = ShardState.alone(name), None
            else:
                alive.add(name)
        name = rng.choice(sorted(alive))
        state = states[name]
        state.retarget(alive - {name})
        handled[name] = {uid for uid in handled[name] if state.handles(uid)}  # released
        acks[name] = state.target.digest
        if state.may_activate({m: acks[m] for m in state.target.members}):
            state.activate()
        handled[name] |= {uid for uid in uids if state.handles(uid)}
        for one, other in itertools.combinations(sorted(alive), 2):
            assert not handled[one] & handled[other], (one, other)


@pytest.mark.parametrize("seed", range(20))
def test_no_object_is_ever_handled_by_two_replicas(seed: int) -> None:
    _simulate(seed)


def test_a_replica_whose_lease_lapsed_waits_for_acknowledgements_again() -> None:
    state = ShardState.alone("a")
    state.retarget(["b"])
    state.activate()
    state.deactivate()  # its fence passed: the others may have taken its objects
    assert not any(state.handles(uid) for uid in UIDS[:200])
    assert not state.may_activate({"a": state.target.digest, "b": "another view"})
    assert state.may_activate({"a": state.target.digest, "b": state.target.digest})


@pytest.mark.parametrize(
    ("text", "hashed"),
    [("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("foobar", 0x85944171F73967E8)],
)
def test_the_uid_hash_is_fnv_1a_as_the_api_server_s_shard_range(text: str, hashed: int) -> None:
    assert uid_hash(text) == hashed


def test_the_members_ranges_tile_the_hash_space_and_hold_their_objects() -> None:
    view = View.of(["r1", "r2", "r3"])
    ranges = sorted(r for member in view.members for r in view.ranges(member))
    assert ranges[0][0] == 0
    assert ranges[-1][1] == 1 << 64
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # no gap, no overlap
    for uid in UIDS[:2000]:
        mine = view.ranges(view.owner(uid) or "")
        assert any(start <= uid_hash(uid) < end for start, end in mine)
    assert all(len(view.ranges(member)) <= 1024 // 4 for member in view.members)


def test_a_member_alone_has_the_whole_space_in_one_range() -> None:
    assert View.of(["a"]).ranges("a") == ((0, 1 << 64),)
    assert View.of(["a"]).ranges("b") == ()


def test_a_shard_selector_is_written_as_the_api_server_parses_it() -> None:
    text = shard_selector([(0, 1 << 63), (0xC000000000000000, 1 << 64)])
    assert text == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    )


def test_replicas_that_split_objects_differently_never_agree_on_a_view() -> None:
    assert View.of(["a", "b"]).digest != hashlib.blake2b(b"a\nb", digest_size=10).hexdigest()


def test_a_share_holds_the_objects_in_its_ranges() -> None:
    view = View.of(["r1", "r2", "r3"])
    share = view.share("r2")
    assert share == ShardRanges(view.ranges("r2"))
    assert share.selector == shard_selector(view.ranges("r2"))
    assert all(share.holds(uid) == (view.owner(uid) == "r2") for uid in UIDS[:2000])
