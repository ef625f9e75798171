"""Active-active sharding across replicas, the pure part: who is a member, who owns an object,
and when a replica may take on what it gains.

Each replica of a sharded operator keeps a ``coordination.k8s.io/v1`` Lease of its own, labelled
with the shard group, and renews it every ``retry_period``. Every replica lists the group's Leases
at each renewal; a Lease counts as a live member until it has been seen unchanged for its
``leaseDurationSeconds`` (timed on the reader's monotonic clock, as leader election does: clocks
of different machines are never compared). The live members, sorted, are a :class:`View`.

Ownership is rendezvous hashing over the view's members, of the bucket of the object's uid: the
64-bit FNV-1a hash of the uid (the hash of kube-apiserver's ``shardRange()``) falls in one of
:data:`BUCKETS` equal ranges, each member scores ``hash(member, bucket)``, and the highest score
owns the bucket and its objects. A member that joins takes about ``1/N`` of the buckets, each
from whichever member held it; a member that leaves spreads its buckets over the others; no other
object moves. The uid is the key because it never changes for an object's life, it comes with
every event (a relisting's synthetic ``DELETED`` included), and a re-created object is a new
object anyway. A member's share is a union of hash ranges, so the API server can send each
replica only its own objects (``shardSelector``, :mod:`anyop.kube.shard_ranges`); where it does
not, a replica drops the others' objects at the first step, keeping only the watch's uid, name
and resourceVersion of them.

Hand-over without overlap (an object is handled by at most one replica at any moment):

* A replica handles an object only if it owns it under its *target* view (the live members it
  sees now) and under its *active* view (the last view that every member acknowledged).
* When its target view changes, it stops what it does not own there any more (cycles finish,
  daemons and timers stop with their normal termination), and only then writes the target view's
  digest into its Lease as its acknowledgement.
* It activates the target view (and starts what it gains) once every member of that view
  acknowledges the same digest. A member's acknowledgement means that it handles nothing outside
  its share of that view, and it only grows its handling by the same rule; so two replicas never
  handle the same object.
* A replica that cannot renew its Lease stops all its work ``renew_deadline`` seconds after the
  start of its last successful renewal, before the others may count it out (``lease_duration``
  seconds after they saw that renewal): this fence is the same as the leader's.

Nothing here does I/O: :mod:`anyop.engine.coordination.shard_keeper` reads and writes the Leases.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from anyop import leadership
from anyop.kube.shard_ranges import ShardRanges, uid_hash
from anyop.leadership import Observation, micro_time

__all__ = [
    "ACK_ANNOTATION",
    "BUCKETS",
    "GROUP_LABEL",
    "INCARNATION_ANNOTATION",
    "LEASES",
    "Member",
    "ShardState",
    "View",
    "bucket",
    "lease_name",
    "live_members",
    "member_body",
    "owner",
    "renewed_since",
]

GROUP_LABEL = "anyop.dev/shard-group"
"""The label of a shard group's Leases; its value is the group's name."""

LEASES = dataclasses.replace(
    leadership.LEASES, verbs=frozenset({"get", "list", "create", "update", "delete"})
)
"""The members' Leases (listed by the group's label; a member's own is deleted at its exit)."""

ACK_ANNOTATION = "anyop.dev/shard-view"
"""The digest of the view a member has acknowledged (it handles nothing outside its share)."""

INCARNATION_ANNOTATION = "anyop.dev/shard-incarnation"
"""A token that a member draws anew whenever it may have been counted out (at its start, and
when its fence passed): a view names each member with it, so an acknowledgement counts only for
the incarnation it was decided about (see :class:`View`)."""


BUCKETS = 1024
"""The hash space's equal parts that members own (a power of two). More would share the objects
more evenly (a member's share deviates by about ``sqrt((N-1)/BUCKETS)``, 4.4 % with three) but
make longer shard selectors (up to ``BUCKETS/4`` ranges). Every replica of a group must agree."""

_BUCKET_BITS = BUCKETS.bit_length() - 1
_HASH_BITS = 64
_SCHEME = f"rendezvous of {BUCKETS} FNV-1a buckets"
"""Part of every view's digest: replicas that split objects differently never agree on a view."""


def bucket(uid: str) -> int:
    """The bucket of the object with this uid: the top bits of its hash."""
    return uid_hash(uid) >> (_HASH_BITS - _BUCKET_BITS)


def _score(member: str, part: int) -> int:
    digest = hashlib.blake2b(f"{member}\0{part}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@functools.lru_cache(maxsize=256)
def _scores(member: str) -> tuple[int, ...]:
    """The member's score for every bucket (computed once per identity)."""
    return tuple(_score(member, part) for part in range(BUCKETS))


@functools.lru_cache(maxsize=64)
def _owners(members: tuple[str, ...]) -> tuple[str | None, ...]:
    """The owner of every bucket among these members: the highest score (then the name)."""
    if not members:
        return (None,) * BUCKETS
    scored = [(_scores(member), member) for member in members]
    return tuple(
        max((scores[part], member) for scores, member in scored)[1] for part in range(BUCKETS)
    )


def owner(members: tuple[str, ...], uid: str) -> str | None:
    """The member that owns ``uid`` (rendezvous hashing of its bucket); ``None`` if there are no
    members."""
    return _owners(tuple(sorted(set(members))))[bucket(uid)]


@dataclasses.dataclass(frozen=True)
class View:
    """The members of a shard group as one replica sees them.

    Objects are split by the identities alone; the incarnations only name the view. A member
    that may have been counted out (a stalled replica, a restarted pod with the same identity)
    comes back with a new incarnation, so an acknowledgement written before anyone saw it back
    (by a member that may since have taken its objects) is not one of the view it is in now.

    Attributes:
        members: The members' identities, sorted.
        incarnations: Each member's incarnation, in the same order (``""`` where not known).
    """

    members: tuple[str, ...]
    incarnations: tuple[str, ...] = ()

    @classmethod
    def of(cls, members: Iterable[str] | Mapping[str, str]) -> View:
        """The view of these members (in any order, duplicates ignored); a mapping gives each
        member's incarnation."""
        names = tuple(sorted(set(members)))
        given = members if isinstance(members, Mapping) else {}
        return cls(names, tuple(given.get(name, "") for name in names))

    def incarnation(self, member: str) -> str:
        """The member's incarnation in this view (``""`` if not known)."""
        return dict(zip(self.members, self.incarnations, strict=False)).get(member, "")

    @property
    def digest(self) -> str:
        """A short digest naming this view (its members' incarnations, and how it splits
        objects) in acknowledgements."""
        named = [f"{member}\0{self.incarnation(member)}" for member in self.members]
        text = "\n".join([_SCHEME, *named]).encode()
        return hashlib.blake2b(text, digest_size=10).hexdigest()

    def owner(self, uid: str) -> str | None:
        """The member that owns the object with this uid."""
        return _owners(self.members)[bucket(uid)]

    def bucket_owner(self, part: int) -> str | None:
        """The member that owns the bucket ``part`` (see :func:`bucket`)."""
        return _owners(self.members)[part]

    def share(self, member: str) -> ShardRanges:
        """The member's share as hash ranges (see :meth:`ranges`)."""
        return ShardRanges(self.ranges(member))

    def ranges(self, member: str) -> tuple[tuple[int, int], ...]:
        """The member's share of the hash space: ranges ``[start, end)``, merged and sorted."""
        width = 1 << (_HASH_BITS - _BUCKET_BITS)
        ranges: list[tuple[int, int]] = []
        for part, holder in enumerate(_owners(self.members)):
            if holder != member:
                continue
            start = part * width
            if ranges and ranges[-1][1] == start:
                ranges[-1] = (ranges[-1][0], start + width)
            else:
                ranges.append((start, start + width))
        return tuple(ranges)


def lease_name(group: str, identity: str) -> str:
    """The name of a member's Lease: the group and a digest of the identity (a valid name of
    at most 63 characters whatever the identity)."""
    digest = hashlib.blake2b(identity.encode(), digest_size=6).hexdigest()
    return f"{group[:50].rstrip('-.')}-{digest}"


@dataclasses.dataclass(frozen=True)
class Member:
    """What matters of a member's Lease.

    Attributes:
        name: The Lease's name.
        identity: ``spec.holderIdentity``: the replica.
        duration: ``spec.leaseDurationSeconds``.
        ack: The view digest it has acknowledged, if any.
        resource_version: Changes with every renewal.
        incarnation: See :data:`INCARNATION_ANNOTATION` (``""`` if the Lease names none).
    """

    name: str
    identity: str
    duration: int
    ack: str | None
    resource_version: str
    incarnation: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Member | None:
        """A member from its Lease; ``None`` for a Lease that names no holder (a bad one)."""
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        identity = spec.get("holderIdentity")
        if not isinstance(identity, str) or not identity:
            return None
        annotations = meta.get("annotations") or {}
        return cls(
            name=str(meta.get("name") or ""),
            identity=identity,
            duration=int(spec.get("leaseDurationSeconds") or 0),
            ack=annotations.get(ACK_ANNOTATION) or None,
            resource_version=str(meta.get("resourceVersion") or ""),
            incarnation=str(annotations.get(INCARNATION_ANNOTATION) or ""),
        )


def live_members(
    members: Iterable[Member],
    seen: Mapping[str, Observation],
    *,
    now: float,
    returned: float | None = None,
) -> tuple[list[Member], dict[str, Observation]]:
    """The members whose Leases have changed within their durations, and the updated sightings.

    Args:
        members: The group's Leases as just listed.
        seen: When each Lease (by name) was last seen to change, on this replica's monotonic
            clock; a Lease seen for the first time counts as just changed.
        now: This replica's monotonic time when the listing was sent (the listing shows
            every write that landed before).
        returned: When the listing returned (``now`` if not given): a change is timed from
            then, as it may have landed at any moment before.

    Returns:
        The live members, and the sightings to keep (of the listed Leases only).
    """
    sightings: dict[str, Observation] = {}
    live: list[Member] = []
    for member in members:
        sighting = seen.get(member.name)
        if sighting is None or sighting.version != member.resource_version:
            sighting = Observation(member.resource_version, now if returned is None else returned)
        sightings[member.name] = sighting
        if now < sighting.since + max(member.duration, 1):
            live.append(member)
    return live, sightings


def renewed_since(live: Iterable[Member], baseline: Mapping[str, str], *, me: str) -> bool:
    """Whether every other live member has written its Lease since ``baseline`` was listed.

    Args:
        live: The live members as just listed.
        baseline: The resourceVersion of each Lease (by name) in this replica's first listing
            after its own Lease was written (a Lease absent there was created since).
        me: This replica's identity (its own Lease is not asked about).

    A member's acknowledgement counts for a replica that has just joined (or joined again) only
    if it was written after that listing: an older one may come from a step that had not seen
    the joiner yet, or that had counted it out and is about to take its objects.
    """
    return all(m.identity == me or baseline.get(m.name) != m.resource_version for m in live)


def member_body(
    *,
    group: str,
    identity: str,
    namespace: str,
    duration: int,
    ack: str | None,
    now: datetime.datetime,
    resource_version: str | None = None,
    incarnation: str = "",
) -> dict[str, Any]:
    """A member's Lease as written at each renewal (a PUT with the resourceVersion read, or a
    creation when there is none)."""
    annotations = {ACK_ANNOTATION: ack} if ack else {}
    if incarnation:
        annotations[INCARNATION_ANNOTATION] = incarnation
    metadata: dict[str, Any] = {
        "name": lease_name(group, identity),
        "namespace": namespace,
        "labels": {GROUP_LABEL: group[:63]},
        "annotations": annotations,
    }
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return {
        "apiVersion": LEASES.api_version,
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": duration,
            "renewTime": micro_time(now),
        },
    }


@dataclasses.dataclass
class ShardState:
    """One replica's share: its target view, its active view, and what it handles.

    Attributes:
        me: This replica's identity.
        target: The live members as last seen (this replica always among them).
        active: The last view that every member acknowledged; ``None`` before the first. (When
            the target view comes back to it in the middle of a hand-over, the target just left
            takes its place until the view is activated again: see :meth:`retarget`.)
        incarnation: This replica's incarnation (see :data:`INCARNATION_ANNOTATION`).
    """

    me: str
    target: View
    active: View | None = None
    incarnation: str = ""

    @classmethod
    def alone(cls, me: str, incarnation: str = "") -> ShardState:
        """A replica that has seen no other member yet (and has activated nothing)."""
        return cls(me, View.of({me: incarnation}), incarnation=incarnation)

    def reincarnate(self, incarnation: str) -> None:
        """Come back as a new incarnation (this replica may have been counted out): the target
        view names it at once (nobody's share changes), and so does the next acknowledgement."""
        self.incarnation = incarnation
        members = dict(zip(self.target.members, self.target.incarnations, strict=False))
        self.target = View.of({**members, self.me: incarnation})

    @property
    def settled(self) -> bool:
        """Whether the target view is the active one (no hand-over is going on)."""
        return self.active == self.target

    def handles(self, uid: str) -> bool:
        """Whether this replica may handle the object now."""
        if self.active is None:
            return False
        part = bucket(uid)
        if self.target.bucket_owner(part) != self.me:
            return False
        return self.active == self.target or self.active.bucket_owner(part) == self.me

    def gains(self, uid: str) -> bool:
        """Whether the object is this replica's in the target view but not handled yet: its
        latest body is kept until the view is activated."""
        return self.target.owner(uid) == self.me and not self.handles(uid)

    def retarget(self, members: Iterable[str] | Mapping[str, str]) -> bool:
        """Take the live members (a mapping: with their incarnations) as the target view; say
        if it changed.

        If the new target is the active view while a hand-over is going on (a member that
        joined is counted out before the hand-over ends), the target left becomes the active
        view: this replica handles what it handled, no more, until the view is activated again
        (after its own acknowledgement, with the listing of what it gains).
        """
        given = members if isinstance(members, Mapping) else dict.fromkeys(members, "")
        view = View.of({**given, self.me: self.incarnation})
        if view == self.target:
            return False
        if view == self.active:
            self.active = self.target
        self.target = view
        return True

    def may_activate(self, acks: Mapping[str, str | None]) -> bool:
        """Whether every member of the target view acknowledges it (``acks``: identity → the
        digest in its Lease; this replica's own must be there too)."""
        if self.settled:
            return False
        digest = self.target.digest
        return all(acks.get(member) == digest for member in self.target.members)

    def activate(self) -> None:
        """Make the target view the active one: the gained objects may be handled now."""
        self.active = self.target

    def deactivate(self) -> None:
        """Handle nothing until every member acknowledges a view again (this replica's Lease
        was not renewed in time: the others may have counted it out and taken its objects)."""
        self.active = None
