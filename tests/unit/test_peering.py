"""The pure rules of peering: records, who is dead, who pauses, and what is logged."""

from __future__ import annotations

import datetime
import random

from anyop.peering import (
    ANYOP_CLUSTER_PEERINGS,
    ANYOP_PEERINGS,
    KOPF_CLUSTER_PEERINGS,
    KOPF_PEERINGS,
    Peer,
    Verdict,
    judge,
    keepalive_interval,
    keepalive_patch,
    parse_peers,
    peer_identity,
    peering_resources,
    removal_patch,
    transition_messages,
)

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def ago(seconds: float) -> str:
    return (NOW - datetime.timedelta(seconds=seconds)).isoformat()


def test_records_are_parsed_with_kopfs_defaults_and_naive_times_as_utc() -> None:
    status = {
        "a": {"priority": 5, "lifetime": 30, "lastseen": "2026-01-01T11:59:50"},
        "b": {"lastseen": "2026-01-01T11:59:50Z"},
        "junk": "not a record",
    }
    [a, b] = parse_peers(status)
    assert a == Peer("a", 5, 30.0, NOW - datetime.timedelta(seconds=10))
    assert (b.priority, b.lifetime) == (0, 60.0)


def test_a_record_with_a_broken_time_counts_as_dead() -> None:
    [peer] = parse_peers({"x": {"priority": 1, "lastseen": "yesterday"}})
    assert peer.is_dead(NOW)


def test_a_higher_live_peer_pauses_us_and_lower_ones_do_not() -> None:
    status = {
        "me": {"priority": 10, "lifetime": 60, "lastseen": ago(1)},
        "high": {"priority": 20, "lifetime": 60, "lastseen": ago(1)},
        "low": {"priority": 5, "lifetime": 60, "lastseen": ago(1)},
    }
    verdict = judge(parse_peers(status), identity="me", priority=10, now=NOW)
    assert verdict.paused
    assert verdict.higher == ("high",)
    assert verdict.same == ()


def test_dead_peers_do_not_pause_and_are_to_be_removed() -> None:
    status = {"ghost": {"priority": 99, "lifetime": 10, "lastseen": ago(11)}}
    verdict = judge(parse_peers(status), identity="me", priority=0, now=NOW)
    assert not verdict.paused
    assert verdict.dead == ("ghost",)
    assert verdict.next_expiry is None


def test_the_next_check_is_when_the_earliest_live_record_expires() -> None:
    status = {
        "a": {"priority": 1, "lifetime": 10, "lastseen": ago(5)},
        "b": {"priority": 1, "lifetime": 60, "lastseen": ago(5)},
    }
    verdict = judge(parse_peers(status), identity="me", priority=0, now=NOW)
    assert verdict.next_expiry == NOW + datetime.timedelta(seconds=5)


def test_the_same_priority_pauses_everyone_with_warnings() -> None:
    status = {"other": {"priority": 0, "lifetime": 60, "lastseen": ago(1)}}
    verdict = judge(parse_peers(status), identity="me", priority=0, now=NOW)
    assert verdict.paused
    assert transition_messages(False, verdict) == [
        (True, "Possibly conflicting operators with the same priority: ['other']."),
        (True, "Pausing all operators, including self: ['other']"),
    ]


def test_shared_work_makes_peers_of_the_same_priority_no_conflict_but_a_higher_one_pauses() -> None:
    status = {
        "replica": {"priority": 0, "lifetime": 60, "lastseen": ago(1)},
        "frozen": {"priority": 100, "lifetime": 60, "lastseen": ago(1)},
    }
    verdict = judge(parse_peers(status), identity="me", priority=0, now=NOW, shared=True)
    assert verdict.same == ()
    assert verdict.higher == ("frozen",)  # `anyop freeze` still pauses every replica
    del status["frozen"]
    verdict = judge(parse_peers(status), identity="me", priority=0, now=NOW, shared=True)
    assert not verdict.paused
    assert transition_messages(False, verdict) == []


def test_pausing_and_resuming_are_logged_once_each() -> None:
    higher = Verdict(higher=("boss",))
    assert transition_messages(False, higher) == [
        (False, "Pausing operations in favour of ['boss'].")
    ]
    assert transition_messages(True, higher) == []
    assert transition_messages(True, Verdict()) == [(False, "Resuming operations after the pause.")]
    assert transition_messages(False, Verdict()) == []


def test_keepalive_and_removal_patches() -> None:
    patch = keepalive_patch("me", priority=3, lifetime=60, now=NOW)
    assert patch == {"status": {"me": {"priority": 3, "lifetime": 60, "lastseen": NOW.isoformat()}}}
    assert removal_patch(["a", "b"]) == {"status": {"a": None, "b": None}}


def test_keepalives_come_5_to_10_seconds_early_or_halfway_for_short_lifetimes() -> None:
    rand = random.Random(1)
    assert all(50 <= keepalive_interval(60, rand) <= 55 for _ in range(100))
    assert keepalive_interval(4, rand) == 2


def test_the_identity_is_the_pod_id_or_user_at_host_with_a_start_time() -> None:
    assert peer_identity({"POD_ID": "pod-1"}) == "pod-1"
    identity = peer_identity({}, now=NOW, rand=random.Random(0))
    user_host, stamp, suffix = identity.split("/")
    assert "@" in user_host
    assert stamp == "20260101120000"
    assert len(suffix) == 3


def test_anyops_kinds_come_before_kopfs() -> None:
    cluster = peering_resources(clusterwide=True)
    namespaced = peering_resources(clusterwide=False)
    assert cluster[:2] == (ANYOP_CLUSTER_PEERINGS, KOPF_CLUSTER_PEERINGS)
    assert namespaced[:2] == (ANYOP_PEERINGS, KOPF_PEERINGS)
    assert [resource.group for resource in namespaced] == [
        "anyop.dev",
        "kopf.dev",
        "zalando.org",  # Kopf before 1.29: kopfpeerings.zalando.org
    ]
    assert [f"{r.plural}.{r.group}" for r in cluster][2] == "clusterkopfpeerings.zalando.org"
    assert all(not resource.namespaced for resource in cluster)


def test_a_higher_priority_comes_before_a_same_priority_conflict() -> None:
    # As in Kopf: with a higher peer, the operator pauses in its favour, and says nothing of
    # the peers of its own priority.
    both = Verdict(higher=("boss",), same=("twin",))
    assert transition_messages(False, both) == [
        (False, "Pausing operations in favour of ['boss'].")
    ]
    assert transition_messages(True, both) == []
    twin = Verdict(same=("twin",))
    assert transition_messages(True, twin) == [
        (True, "Possibly conflicting operators with the same priority: ['twin'].")
    ]


def test_records_say_whether_their_peer_serves_and_kopfs_say_nothing() -> None:
    status = {
        "anyop-on": {"priority": 1, "lastseen": ago(1), "serving": True},
        "anyop-off": {"priority": 1, "lastseen": ago(1), "serving": False},
        "kopf": {"priority": 1, "lastseen": ago(1)},
        "odd": {"priority": 1, "lastseen": ago(1), "serving": "yes"},
    }
    assert [peer.serving for peer in parse_peers(status)] == [True, False, None, None]
    serving = keepalive_patch("me", priority=3, lifetime=60, now=NOW, serving=True)
    assert serving["status"]["me"]["serving"] is True
    assert "serving" not in keepalive_patch("me", priority=3, lifetime=60, now=NOW)["status"]["me"]


def test_we_may_not_serve_while_a_live_lower_peer_says_it_serves() -> None:
    status = {
        "low-serving": {"priority": 1, "lifetime": 60, "lastseen": ago(1), "serving": True},
        "low-paused": {"priority": 2, "lifetime": 60, "lastseen": ago(1), "serving": False},
        "kopf": {"priority": 3, "lifetime": 60, "lastseen": ago(1)},
        "dead-serving": {"priority": 1, "lifetime": 60, "lastseen": ago(61), "serving": True},
        "me": {"priority": 10, "lifetime": 60, "lastseen": ago(1), "serving": False},
    }
    verdict = judge(parse_peers(status), identity="me", priority=10, now=NOW)
    assert not verdict.paused
    assert verdict.serving_lower == ("low-serving",)  # not Kopf's, not the dead one's
    assert not verdict.may_serve
    status["low-serving"]["serving"] = False
    assert judge(parse_peers(status), identity="me", priority=10, now=NOW).may_serve


def test_replicas_that_share_the_work_do_not_wait_for_each_other() -> None:
    status = {"twin": {"priority": 10, "lifetime": 60, "lastseen": ago(1), "serving": True}}
    shared = judge(parse_peers(status), identity="me", priority=10, now=NOW, shared=True)
    assert shared.may_serve
    assert not judge(parse_peers(status), identity="me", priority=10, now=NOW).may_serve
