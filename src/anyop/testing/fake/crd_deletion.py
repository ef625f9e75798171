"""A CRD's deletion, as kube-apiserver's apiextensions part does it.

Its first DELETE does not remove the CRD: it sets ``deletionTimestamp``, adds the
``customresourcecleanup.apiextensions.k8s.io`` finalizer and a ``Terminating`` condition, and
answers with the CRD so marked (apiextensions-apiserver's ``registry/customresourcedefinition``).
Then its finalizer controller (``controller/finalizer``) says the instances are being deleted,
deletes them, says they are gone, and removes its finalizer: the CRD goes with it unless other
finalizers keep it. Here that follows the marking at once, in the same request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.kinds import CRD_KIND
from anyop.testing.fake.store import Store

__all__ = [
    "CLEANUP_FINALIZER",
    "clean_up",
    "is_established",
    "marked",
    "remove_instances",
    "terminating",
]

Body = dict[str, Any]
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

_PENDING = (
    "True",
    "InstanceDeletionPending",
    "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
)
_IN_PROGRESS = ("True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
_COMPLETED = ("False", "InstanceDeletionCompleted", "removed all instances")
_NEVER = ("False", "NeverEstablished", "resource was never established")  # fmt: skip


def terminating(crd: Mapping[str, Any], state: tuple[str, str, str], *, now: str) -> Body:
    """The CRD with its ``Terminating`` condition set to ``(status, reason, message)``; the
    transition time changes only with the status (as ``SetCRDCondition`` does)."""
    status, reason, message = state
    conditions = list((crd.get("status") or {}).get("conditions") or [])
    old = next((c for c in conditions if c.get("type") == "Terminating"), None)
    since = old["lastTransitionTime"] if old and old.get("status") == status else now
    new = {"type": "Terminating", "status": status, "lastTransitionTime": since,
           "reason": reason, "message": message}  # fmt: skip
    if old is None:
        conditions.append(new)
    else:
        conditions[conditions.index(old)] = new
    return {**crd, "status": {**(crd.get("status") or {}), "conditions": conditions}}


def marked(crd: Mapping[str, Any], finalizers: list[str], *, now: str) -> Body:
    """The CRD as its first DELETE stores it: being deleted, with the cleanup finalizer, no
    grace period and its generation as it was (the registry writes it past the strategy)."""
    kept = [name for name in finalizers if name != CLEANUP_FINALIZER]
    metadata = {**crd["metadata"], "deletionTimestamp": now,
                "finalizers": [*kept, CLEANUP_FINALIZER]}  # fmt: skip
    return terminating({**crd, "metadata": metadata}, _PENDING, now=now)


def is_established(crd: Mapping[str, Any]) -> bool:
    """Whether the CRD has the ``Established`` condition (its instances may exist)."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def clean_up(store: Store, crd: Body) -> Body:
    """Do the finalizer controller's work on a marked CRD; return what is left of it (the CRD
    as stored last, whether or not other finalizers keep it)."""
    now = store.now()
    crd = store.commit(CRD_KIND, "MODIFIED", terminating(crd, _IN_PROGRESS, now=now), old=crd)
    if is_established(crd):
        remove_instances(store, crd["metadata"]["name"])
        done = terminating(crd, _COMPLETED, now=now)
    else:
        done = terminating(crd, _NEVER, now=now)
    left = [name for name in crd["metadata"]["finalizers"] if name != CLEANUP_FINALIZER]
    if left:
        done = {**done, "metadata": {**done["metadata"], "finalizers": left}}
        return store.commit(CRD_KIND, "MODIFIED", done, old=crd)
    store.commit(CRD_KIND, "DELETED", crd, old=crd)  # watches see the last stored state
    store.unserve(crd["metadata"]["name"])
    return crd


def remove_instances(store: Store, name: str) -> None:
    """Delete a CRD's custom resources (finalizers or not); its kinds stay served while the
    CRD exists."""
    resources = {(kind.group, kind.plural) for kind in store.kinds.values() if kind.crd == name}
    for resource in sorted(resources):
        kind = store.kind_of(resource)
        if kind is None:
            continue
        for body in list(store.objects[resource].values()):
            store.commit(kind, "DELETED", body, old=body)
