"""Lease-based leader election, the pure part: what a replica does with the Lease it reads.

Replicas of one operator share a ``coordination.k8s.io/v1`` Lease. The leader renews it every
``retry_period``; a standby takes it once it has seen it unchanged for ``leaseDurationSeconds``
(timed on its own monotonic clock: clocks of different machines are never compared), or at once
when its holder is empty (a released Lease). Every write is a PUT with the resourceVersion that
was read, so of two replicas racing for it, one fails with a conflict.

The leader fences itself: its work runs in a cancel scope whose deadline is the start of its
last successful renewal plus ``renew_deadline``. Since ``renew_deadline < lease_duration`` and a
standby's clock starts when it sees that renewal (which is after the renewal was sent), the
leader's work is cancelled before any standby may take the Lease.

Nothing here does I/O: ``anyop.engine.coordination.lease_keeper`` reads and writes the Lease.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
import socket
from collections.abc import Mapping
from typing import Any

from anyop.kube.resources import Resource

__all__ = [
    "LEASES",
    "Action",
    "LeaseRecord",
    "Observation",
    "decide",
    "default_identity",
    "lease_body",
    "micro_time",
    "observe",
    "release_body",
]

LEASES = Resource(
    "coordination.k8s.io",
    "v1",
    "leases",
    kind="Lease",
    namespaced=True,
    verbs=frozenset({"get", "create", "update", "patch"}),
)


def default_identity() -> str:
    """The host name (the pod's name in a cluster) and the process id."""
    return f"{socket.gethostname()}-{os.getpid()}"


def micro_time(now: datetime.datetime) -> str:
    """A Kubernetes ``MicroTime``: RFC 3339 in UTC with microseconds."""
    return now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    """What matters of a Lease object.

    Attributes:
        name: The Lease's name.
        namespace: The Lease's namespace.
        holder: ``spec.holderIdentity``; ``None`` or empty when nobody holds it.
        duration: ``spec.leaseDurationSeconds``.
        renew_time: ``spec.renewTime`` as written (only compared for changes).
        acquire_time: ``spec.acquireTime`` as written.
        transitions: ``spec.leaseTransitions``.
        resource_version: For the conditional write.
    """

    name: str
    namespace: str
    holder: str | None
    duration: int
    renew_time: str | None = None
    acquire_time: str | None = None
    transitions: int = 0
    resource_version: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> LeaseRecord:
        """Read a Lease object as returned by the API."""
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        return cls(
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            holder=spec.get("holderIdentity") or None,
            duration=int(spec.get("leaseDurationSeconds") or 0),
            renew_time=spec.get("renewTime"),
            acquire_time=spec.get("acquireTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
            resource_version=str(meta.get("resourceVersion") or ""),
        )


@dataclasses.dataclass(frozen=True)
class Observation:
    """When this replica last saw the Lease change (on its monotonic clock).

    Attributes:
        version: The resourceVersion seen then.
        since: The monotonic time it was first seen.
    """

    version: str
    since: float


def observe(previous: Observation | None, record: LeaseRecord | None, now: float) -> Observation:
    """Remember the Lease as seen at ``now``: the clock restarts only when it has changed."""
    version = record.resource_version if record else ""
    if previous is not None and previous.version == version:
        return previous
    return Observation(version, now)


class Action(enum.Enum):
    """What to do with the Lease."""

    CREATE = "create"
    """There is no Lease: create it, held by us."""
    TAKE = "take"
    """It is free, released, or expired: take it over (conditionally on its resourceVersion)."""
    RENEW = "renew"
    """We hold it: renew it."""
    WAIT = "wait"
    """Another replica holds it and it has not expired yet."""


def decide(
    record: LeaseRecord | None, *, identity: str, observation: Observation, now: float
) -> Action:
    """Decide what ``identity`` does with the Lease it read, at monotonic time ``now``."""
    if record is None:
        return Action.CREATE
    if record.holder == identity:
        return Action.RENEW
    if not record.holder:
        return Action.TAKE
    if now >= observation.since + max(record.duration, 1):
        return Action.TAKE
    return Action.WAIT


def lease_body(
    action: Action,
    record: LeaseRecord,
    *,
    identity: str,
    duration: int,
    now: datetime.datetime,
) -> dict[str, Any]:
    """The whole Lease to write (PUT, or POST for :attr:`Action.CREATE`) for ``action``.

    ``record`` names the Lease; for :attr:`Action.CREATE` only its name and namespace matter.
    """
    stamp = micro_time(now)
    taking = action is not Action.RENEW
    spec: dict[str, Any] = {
        "holderIdentity": identity,
        "leaseDurationSeconds": duration,
        "acquireTime": stamp if taking else record.acquire_time,
        "renewTime": stamp,
        "leaseTransitions": record.transitions + (1 if action is Action.TAKE else 0),
    }
    return _lease(record, spec, versioned=action is not Action.CREATE)


def release_body(record: LeaseRecord, *, now: datetime.datetime) -> dict[str, Any]:
    """The Lease after a graceful exit: nobody holds it, so a standby takes it at once."""
    spec = {
        "holderIdentity": None,
        "leaseDurationSeconds": 1,
        "acquireTime": record.acquire_time,
        "renewTime": micro_time(now),
        "leaseTransitions": record.transitions,
    }
    return _lease(record, spec, versioned=True)


def _lease(record: LeaseRecord, spec: dict[str, Any], *, versioned: bool) -> dict[str, Any]:
    """A whole Lease named as ``record``; ``versioned``: only if still at its resourceVersion."""
    metadata: dict[str, Any] = {"name": record.name, "namespace": record.namespace}
    if versioned:
        metadata["resourceVersion"] = record.resource_version
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": metadata,
        "spec": spec,
    }
