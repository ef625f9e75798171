"""A Pod's graceful deletion, as kube-apiserver's pod strategy and generic registry do it, and
the kubelet's part that ends it.

Pure but for :class:`Kubelet`, which deletes through the store. A DELETE gives a Pod bound to a
node (``spec.nodeName``) a grace period (``CheckGracefulDelete``): the one asked for, else its
``terminationGracePeriodSeconds``; none (0) for a Pod on no node or one that has terminated
(phase ``Succeeded`` or ``Failed``). It is then only marked: ``deletionTimestamp`` the end of
the grace period, ``deletionGracePeriodSeconds`` its length. A later DELETE may only shorten it
(``rest.BeforeDelete``): the timestamp moves back by the difference (to now at the earliest,
with a grace of 1 second if it asked for more than 0); with 0 the Pod goes.

On a real cluster the Pod's kubelet then stops its containers and deletes it with a grace of 0.
FakeCluster runs no containers: with ``controllers=True``, :class:`Kubelet` deletes each such Pod
(grace 0) at the first request once its grace period has ended on FakeCluster's clock.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.history import Change
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Ref, Store

__all__ = ["Kubelet", "grace_period", "later", "shortened"]

Body = dict[str, Any]
_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def later(now: str, seconds: int) -> str:
    """The RFC 3339 time ``seconds`` after ``now``."""
    moment = datetime.datetime.strptime(now, _FORMAT).replace(tzinfo=datetime.UTC)
    return (moment + datetime.timedelta(seconds=seconds)).strftime(_FORMAT)


def _is_pod(kind: Kind) -> bool:
    return (kind.group, kind.kind) == ("", "Pod")


def _requested(options: Mapping[str, Any]) -> int | None:
    period = options.get("gracePeriodSeconds")
    if period is None:
        return None
    return 1 if int(period) < 0 else int(period)  # negative is 1 s (``BeforeDelete``)


def grace_period(kind: Kind, stored: Mapping[str, Any], options: Mapping[str, Any]) -> int:
    """The grace period a first DELETE gives the object: 0 for all but a Pod on a node that
    has not terminated (``podStrategy.CheckGracefulDelete``)."""
    if not _is_pod(kind):
        return 0
    spec = stored.get("spec") or {}
    period = _requested(options)
    if period is None:
        period = int(spec.get("terminationGracePeriodSeconds") or 0)
    phase = (stored.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    return 1 if period < 0 else period


def shortened(
    kind: Kind, stored: Mapping[str, Any], options: Mapping[str, Any], *, now: str
) -> tuple[str, int] | None:
    """A later DELETE of a Pod in its grace period: the new ``deletionTimestamp`` and grace
    period when it asks for a shorter one, else ``None`` (the DELETE changes nothing)."""
    metadata = stored["metadata"]
    current = int(metadata.get("deletionGracePeriodSeconds") or 0)
    period = _requested(options)
    if not _is_pod(kind) or current <= 0 or period is None or period >= current:
        return None
    moved = later(str(metadata["deletionTimestamp"]), period - current)
    if moved < now:  # not into the past: at once, and still graceful if grace was asked
        moved, period = now, (1 if period else 0)
    return moved, period


class Kubelet:
    """The kubelets of FakeCluster's nodes, as far as deletions go: each Pod marked with a
    grace period is deleted (grace 0) once that has ended (:meth:`reap`, at each request).

    A controller (``store.controllers``): it notes the Pods marked so from the changes.
    """

    def __init__(self) -> None:
        self._terminating: dict[tuple[str, str], tuple[str, str]] = {}
        """``(namespace, name)``: the end of the grace period and the Pod's uid."""

    def __call__(self, store: Store, change: Change) -> None:
        if change.resource != ("", "pods"):
            return
        metadata = change.obj.get("metadata") or {}
        key = (str(metadata.get("namespace") or ""), str(metadata.get("name")))
        graceful = metadata.get("deletionTimestamp") and metadata.get("deletionGracePeriodSeconds")
        if change.type == "DELETED" or not graceful:
            self._terminating.pop(key, None)
        else:
            self._terminating[key] = (str(metadata["deletionTimestamp"]), str(metadata["uid"]))

    def reap(self, store: Store) -> None:
        """Delete the Pods whose grace period has ended (as their kubelets do once their
        containers have stopped); what the API refuses goes to ``store.controller_errors``."""
        if not self._terminating:
            return
        from anyop.testing.fake import deletions  # (deletions imports this module)

        now = store.now()
        due = sorted(key for key, (end, _) in self._terminating.items() if end <= now)
        kind = store.kind_of(("", "pods"))
        warnings, store.warnings = store.warnings, None  # no request's
        try:
            for namespace, name in due:
                _, uid = self._terminating.pop((namespace, name))
                if kind is None:
                    continue
                options = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
                try:
                    deletions.delete(store, Ref(kind, namespace, name), options)
                except StatusError as exc:  # gone, or another Pod under the name
                    if exc.code != 404:
                        store.controller_errors.append(exc)
        finally:
            store.warnings = warnings
