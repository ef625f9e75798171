"""Deletions in FakeCluster's store, as kube-apiserver's registry deletes: at once, or marked
(``deletionTimestamp``) while finalizers remain, with the propagation policy's finalizer, the
preconditions checked, and the answer the kind's storage gives (a ``Status``, or the object).

Pure of I/O: the store is in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import crd_deletion
from anyop.testing.fake.kinds import CRD_KIND, NAMESPACE_KIND, Kind
from anyop.testing.fake.pod_termination import grace_period, later, shortened
from anyop.testing.fake.statuses import forbidden, precondition_failed, success
from anyop.testing.fake.store import ListQuery, Ref, Store, shown
from anyop.testing.fake.writes import Body, served

__all__ = ["IMMORTAL_NAMESPACES", "delete", "delete_collection"]

IMMORTAL_NAMESPACES = frozenset({"default", "kube-public", "kube-system"})
"""The namespaces that the NamespaceLifecycle admission plugin refuses to delete."""


def delete(store: Store, ref: Ref, options: Mapping[str, Any]) -> Body:
    """Delete an object: at once, or mark it (``deletionTimestamp``) while finalizers remain.

    Returns:
        The object while it stays (finalizers, namespaces), else a ``Status`` of success (the
        object as deleted, for the kinds that answer with it).

    Raises:
        StatusError: 403 (a namespace the API server keeps), 404, 409 (a precondition failed).
    """
    kind, name = ref.kind, ref.name
    stored = store.find(kind, ref.namespace, name)
    if kind == NAMESPACE_KIND and name in IMMORTAL_NAMESPACES:
        raise forbidden(kind.plural, "", name, "this namespace may not be deleted")
    metadata = stored["metadata"]
    _check_preconditions(kind, stored, options.get("preconditions") or {})
    finalizers = _collecting(kind, list(metadata.get("finalizers") or ()), options)
    if metadata.get("deletionTimestamp"):
        regraced = shortened(kind, stored, options, now=store.now())
        if regraced is not None:
            return _regraced(store, kind, stored, *regraced)
        if finalizers == list(metadata.get("finalizers") or ()):
            return shown(kind, stored)
        changed = {**stored, "metadata": {**metadata, "finalizers": finalizers}}
        return served(kind, store.commit(kind, "MODIFIED", changed, old=stored))
    if kind == CRD_KIND:
        mark = crd_deletion.marked(stored, finalizers, now=store.now())
        crd = store.commit(kind, "MODIFIED", mark, old=stored)
        crd_deletion.clean_up(store, crd)
        return served(kind, crd)
    is_namespace = kind.plural == "namespaces" and not kind.group
    grace = grace_period(kind, stored, options)  # a Pod's on a node: marked, kept till then
    if not finalizers and not is_namespace and not grace:
        deleted = store.commit(kind, "DELETED", stored, old=stored)  # a dry run ends here
        if kind.plural == "pods" and not kind.group:
            # A Pod's deletion is graceful, with no grace for one on no node: the answer shows
            # it marked so, as it is removed at once.
            deleted = _marked(deleted, now=store.now(), finalizers=[])
        if kind.returns_deleted:
            return served(kind, deleted)
        return success(name, kind.group, kind.plural, uid=metadata["uid"])
    # The mark is a write of the object: the one a claim's first update makes (see
    # ``writes.create``) is done.
    store.unsettled.discard((kind.group, kind.plural, ref.namespace or "", name))
    if not is_namespace:
        marked = _marked(stored, now=store.now(), finalizers=finalizers, grace=grace)
    else:
        marked = {**stored, "metadata": {**metadata, "deletionTimestamp": store.now()}}
        marked["status"] = {**stored.get("status", {}), "phase": "Terminating"}
    return served(kind, store.commit(kind, "MODIFIED", marked, old=stored))


_ORPHANED_BY_DEFAULT = {("batch", "jobs"): "Orphan", ("", "replicationcontrollers"): "Orphan"}
"""Kinds whose strategies orphan dependents when a DELETE names no propagation policy
(``DefaultGarbageCollectionPolicy``: batch/v1 Jobs and v1 ReplicationControllers)."""


def _collecting(kind: Kind, finalizers: list[str], options: Mapping[str, Any]) -> list[str]:
    """The finalizers with those of the garbage collector as a deletion's options ask
    (``deletionFinalizersForGarbageCollection``): ``orphan`` or ``foregroundDeletion`` by the
    ``orphanDependents`` flag, else the propagation policy, else the finalizer there, else the
    kind's default; the finalizers as they were if that changes none."""
    policy, flag = options.get("propagationPolicy"), options.get("orphanDependents")
    held = next((f for f in finalizers if f in ("orphan", "foregroundDeletion")), None)
    if flag is not None:
        orphan, foreground = bool(flag), False
    elif policy in ("Orphan", "Background", "Foreground"):
        orphan, foreground = policy == "Orphan", policy == "Foreground"
    elif held is not None:
        orphan, foreground = held == "orphan", held == "foregroundDeletion"
    else:
        orphan = _ORPHANED_BY_DEFAULT.get((kind.group, kind.plural)) == "Orphan"
        foreground = False
    kept = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
    kept += ["orphan"] * orphan + ["foregroundDeletion"] * foreground
    return finalizers if set(kept) == set(finalizers) else kept


def _marked(stored: Body, *, now: str, finalizers: list[str], grace: int = 0) -> Body:
    """An object marked for deletion: its ``deletionTimestamp`` (the end of its grace period)
    and grace period set, and its ``generation`` (where kept) bumped, for controllers see the
    deletion as a change."""
    metadata = {**stored["metadata"], "deletionTimestamp": later(now, grace),
                "deletionGracePeriodSeconds": grace}  # fmt: skip
    if int(metadata.get("generation") or 0) > 0:
        metadata["generation"] = int(metadata["generation"]) + 1
    if finalizers:
        metadata["finalizers"] = finalizers
    return {**stored, "metadata": metadata}


def _regraced(store: Store, kind: Kind, stored: Body, timestamp: str, grace: int) -> Body:
    """A Pod in its grace period given a shorter one; with 0 and no finalizers, it goes."""
    metadata = {**stored["metadata"], "deletionTimestamp": timestamp,
                "deletionGracePeriodSeconds": grace}  # fmt: skip
    marked = {**stored, "metadata": metadata}
    if grace or metadata.get("finalizers"):
        return served(kind, store.commit(kind, "MODIFIED", marked, old=stored))
    deleted = store.commit(kind, "DELETED", stored, old=stored)  # (a dry run ends here)
    moved = {"deletionTimestamp": timestamp, "deletionGracePeriodSeconds": 0}
    return served(kind, {**deleted, "metadata": {**deleted["metadata"], **moved}})


def _check_preconditions(kind: Kind, stored: Body, preconditions: Mapping[str, Any]) -> None:
    metadata = stored["metadata"]
    name = metadata["name"]
    uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid is not None and uid != metadata["uid"]:
        why = (
            f"the UID in the precondition ({uid}) does not match the UID in record "
            f"({metadata['uid']}). The object might have been deleted and then recreated"
        )
        raise precondition_failed(kind.kind, kind.group, name, why=why)
    if version is not None and version != metadata["resourceVersion"]:
        why = (
            f"the ResourceVersion in the precondition ({version}) does not match the "
            f"ResourceVersion in record ({metadata['resourceVersion']}). The object might have "
            "been modified"
        )
        raise precondition_failed(kind.kind, kind.group, name, why=why)


def delete_collection(
    store: Store, kind: Kind, query: ListQuery, *, options: Mapping[str, Any]
) -> Body:
    """Delete every object a list would show (``deletecollection``); answer their list, as
    they were before (those that finalizers keep are marked meanwhile).

    Raises:
        StatusError: 400 (a bad selector), 410, as a list would.
    """
    listed = store.list(kind, ListQuery(query.namespace, query.selector))
    items = []
    for item in listed["items"]:
        metadata = item["metadata"]
        ref = Ref(kind, metadata.get("namespace") if kind.namespaced else None, metadata["name"])
        delete(store, ref, options)
        items.append(item)  # as listed, before its deletion (as the API server answers)
    return {**listed, "metadata": {"resourceVersion": str(store.rv)}, "items": items}
