"""Kopf-style peering, the pure part: peer records, who is alive, and who must pause.

Operators that serve the same resources find each other in a peering object: ``AnyopPeering``
in a namespace, ``ClusterAnyopPeering`` for the cluster, or Kopf's ``KopfPeering`` and
``ClusterKopfPeering`` (of ``kopf.dev``, or of ``kopf.zalando.org`` before Kopf 1.29). Each
writes ``status.<identity> = {priority, lifetime, lastseen}`` and renews it before its lifetime
ends. An operator pauses while a live peer has a higher priority; peers of the same priority
pause each other (and warn). A record whose ``lastseen`` is older than its ``lifetime`` belongs
to a dead peer; any live peer removes it.

anyop's records also say whether the peer serves (``serving``), so that a peer never starts
serving while a live peer of a lower priority still does: it says ``serving: true`` first, and
serves only if the object's status that this write returns lets it (no live peer of a higher or
the same priority, none of a lower one that still serves); a peer that pauses says
``serving: false`` once its last handler has finished. The API server orders the writes to one
object, so of two peers one always sees the other's word (``docs/peering.md``). Kopf's records
have no such field: Kopf's peers are not waited for, as Kopf waits for none.

Nothing here does I/O: ``anyop.engine.coordination.peering_keeper`` reads and writes the objects and
acts on the :class:`Verdict` of :func:`judge`.
"""

from __future__ import annotations

import dataclasses
import datetime
import getpass
import os
import random
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from anyop.clock import utcnow
from anyop.kube.resources import Resource

__all__ = [
    "ANYOP_CLUSTER_PEERINGS",
    "ANYOP_PEERINGS",
    "DEFAULT_LIFETIME",
    "KOPF_CLUSTER_PEERINGS",
    "KOPF_PEERINGS",
    "LEGACY_CLUSTER_PEERINGS",
    "LEGACY_PEERINGS",
    "Peer",
    "Verdict",
    "judge",
    "keepalive_interval",
    "keepalive_patch",
    "parse_peers",
    "peer_identity",
    "peering_resources",
    "removal_patch",
    "transition_messages",
]

DEFAULT_LIFETIME = 60
"""Seconds a record without a lifetime is assumed to live (as Kopf assumes)."""

_VERBS = frozenset({"get", "list", "watch", "patch", "create"})


def _peerings(group: str, prefix: str, *, cluster: bool) -> Resource:
    """A peering kind: ``{Prefix}Peering`` (namespaced) or ``Cluster{Prefix}Peering``."""
    kind = f"Cluster{prefix}Peering" if cluster else f"{prefix}Peering"
    plural = f"{kind.lower()}s"
    return Resource(group, "v1", plural, kind=kind, namespaced=not cluster, verbs=_VERBS)


ANYOP_CLUSTER_PEERINGS = _peerings("anyop.dev", "Anyop", cluster=True)
ANYOP_PEERINGS = _peerings("anyop.dev", "Anyop", cluster=False)
KOPF_CLUSTER_PEERINGS = _peerings("kopf.dev", "Kopf", cluster=True)
KOPF_PEERINGS = _peerings("kopf.dev", "Kopf", cluster=False)
LEGACY_CLUSTER_PEERINGS = _peerings("zalando.org", "Kopf", cluster=True)  # Kopf < 1.29
LEGACY_PEERINGS = _peerings("zalando.org", "Kopf", cluster=False)


def peering_resources(*, clusterwide: bool) -> tuple[Resource, ...]:
    """Where to look for a peering object, in order: anyop's kind, Kopf's, and the kind of Kopf
    before 1.29 (group ``zalando.org``)."""
    if clusterwide:
        return ANYOP_CLUSTER_PEERINGS, KOPF_CLUSTER_PEERINGS, LEGACY_CLUSTER_PEERINGS
    return ANYOP_PEERINGS, KOPF_PEERINGS, LEGACY_PEERINGS


def peer_identity(
    environ: Mapping[str, str] | None = None,
    now: datetime.datetime | None = None,
    rand: random.Random | None = None,
) -> str:
    """This operator's name among its peers: ``$POD_ID``, else ``user@host/<start time>/<xyz>``.

    The start time and the random suffix tell apart two runs on one host.
    """
    environ = os.environ if environ is None else environ
    if pod_id := environ.get("POD_ID"):
        return pod_id
    now = now or utcnow()
    suffix = "".join((rand or random.Random()).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=3))
    return f"{user_at_host()}/{now:%Y%m%d%H%M%S}/{suffix}"


def user_at_host() -> str:
    """``user@host`` of this process: the identity ``anyop freeze`` uses by default."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no such user in a container's passwd
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


@dataclasses.dataclass(frozen=True)
class Peer:
    """One operator's record in a peering object.

    Attributes:
        identity: The key of the record in ``status``.
        priority: Higher wins.
        lifetime: Seconds the record is valid after ``lastseen``.
        lastseen: When the peer last renewed its record (UTC).
        serving: Whether it serves now, as it says (anyop's peers); ``None``: it does not say
            (Kopf's peers, ``anyop freeze``).
    """

    identity: str
    priority: int
    lifetime: float
    lastseen: datetime.datetime
    serving: bool | None = None

    @property
    def deadline(self) -> datetime.datetime:
        """When the record expires unless renewed."""
        return self.lastseen + datetime.timedelta(seconds=self.lifetime)

    def is_dead(self, now: datetime.datetime) -> bool:
        """Whether the record has expired."""
        return self.deadline <= now


def _parse_time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def parse_peers(status: Mapping[str, Any] | None) -> list[Peer]:
    """The peer records of a peering object's ``status``.

    Records that are not mappings are skipped; a record with a broken ``lastseen`` counts as
    long dead (so that a live peer removes it); a missing ``lifetime`` is
    :data:`DEFAULT_LIFETIME`, a missing ``priority`` is 0; a ``serving`` that is not a boolean is
    not said.
    """
    epoch = datetime.datetime.fromtimestamp(0, datetime.UTC)
    peers: list[Peer] = []
    for identity, record in (status or {}).items():
        if not isinstance(record, Mapping):
            continue
        try:
            priority = int(record.get("priority") or 0)
            lifetime = float(record.get("lifetime") or DEFAULT_LIFETIME)
        except (TypeError, ValueError):
            priority, lifetime = 0, 0.0
        lastseen = _parse_time(record.get("lastseen")) or epoch
        serving = record.get("serving")
        serving = serving if isinstance(serving, bool) else None
        peers.append(Peer(str(identity), priority, lifetime, lastseen, serving))
    return peers


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What an operator must do, judged from the peer records.

    Attributes:
        higher: Live peers with a higher priority (we pause in their favour).
        same: Live peers with our priority (all of us pause).
        dead: Expired records to remove.
        next_expiry: When the earliest live record of another peer expires: judge again then.
        serving_lower: Live peers with a lower priority that still say they serve: we may not
            serve before they say they stopped (or their records expire).
    """

    higher: tuple[str, ...] = ()
    same: tuple[str, ...] = ()
    dead: tuple[str, ...] = ()
    next_expiry: datetime.datetime | None = None
    serving_lower: tuple[str, ...] = ()

    @property
    def paused(self) -> bool:
        """Whether we must pause."""
        return bool(self.higher or self.same)

    @property
    def may_serve(self) -> bool:
        """Whether we may serve: no pause, and no peer of a lower priority that still serves."""
        return not self.paused and not self.serving_lower


def judge(
    peers: Iterable[Peer],
    *,
    identity: str,
    priority: int,
    now: datetime.datetime,
    shared: bool = False,
) -> Verdict:
    """Decide whether the operator ``identity`` with ``priority`` must pause now.

    ``shared``: peers of the same priority are replicas that share the work (anyop's sharding):
    they neither pause this one nor are they a conflict.
    """
    higher: list[str] = []
    same: list[str] = []
    dead: list[str] = []
    serving_lower: list[str] = []
    expiries: list[datetime.datetime] = []
    for peer in peers:
        if peer.identity == identity:
            continue
        if peer.is_dead(now):
            dead.append(peer.identity)
            continue
        expiries.append(peer.deadline)
        if peer.priority > priority:
            higher.append(peer.identity)
        elif peer.priority == priority and not shared:
            same.append(peer.identity)
        elif peer.priority < priority and peer.serving:
            serving_lower.append(peer.identity)
    return Verdict(
        tuple(sorted(higher)),
        tuple(sorted(same)),
        tuple(sorted(dead)),
        min(expiries, default=None),
        tuple(sorted(serving_lower)),
    )


def transition_messages(was_paused: bool, verdict: Verdict) -> list[tuple[bool, str]]:
    """The log lines for a new verdict, as ``(is_warning, message)``, in Kopf's wording.

    As in Kopf, a peer of a higher priority comes first: while there is one, peers of the same
    priority are no conflict worth a warning (all of them pause in its favour anyway).
    """
    messages: list[tuple[bool, str]] = []
    if verdict.same and not verdict.higher:
        messages.append(
            (True, f"Possibly conflicting operators with the same priority: {list(verdict.same)}.")
        )
    if verdict.paused and not was_paused:
        if verdict.higher:
            messages.append((False, f"Pausing operations in favour of {list(verdict.higher)}."))
        else:
            messages.append((True, f"Pausing all operators, including self: {list(verdict.same)}"))
    elif was_paused and not verdict.paused:
        messages.append((False, "Resuming operations after the pause."))
    return messages


def keepalive_patch(
    identity: str,
    *,
    priority: int,
    lifetime: float,
    now: datetime.datetime,
    serving: bool | None = None,
) -> dict[str, Any]:
    """The merge patch that writes (or renews) one peer's record; ``serving`` is said unless
    ``None`` (``anyop freeze`` says nothing, as Kopf's records)."""
    record: dict[str, Any] = {"priority": priority, "lifetime": lifetime}
    record["lastseen"] = now.isoformat()
    if serving is not None:
        record["serving"] = serving
    return {"status": {identity: record}}


def removal_patch(identities: Iterable[str]) -> dict[str, Any]:
    """The merge patch that removes these peers' records."""
    return {"status": dict.fromkeys(identities)}


def keepalive_interval(lifetime: float, rand: random.Random | None = None) -> float:
    """Seconds until the next keep-alive: 5-10 s before the record expires, and at the latest
    half-way through a short lifetime."""
    early = (rand or random.Random()).uniform(5, 10)
    return max(lifetime / 2, lifetime - early)
