"""Deletions in FakeCluster's store, as kube-apiserver's registry deletes: at once, or marked
(``deletionTimestamp``) while finalizers remain, with the propagation policy's finalizer, the
preconditions checked, and the answer the kind's storage gives (a ``Status``, or the object).

Pure of I/O: the store is in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import crd_deletion
from anyop.testing.fake.kinds import CRD_KIND, Kind
from anyop.testing.fake.statuses import precondition_failed, success
from anyop.testing.fake.store import ListQuery, Ref, Store, shown
from anyop.testing.fake.writes import Body, served

__all__ = ["delete", "delete_collection"]


def delete(store: Store, ref: Ref, options: Mapping[str, Any]) -> Body:
    """Delete an object: at once, or mark it (``deletionTimestamp``) while finalizers remain.

    Returns:
        The object while it stays (finalizers, namespaces), else a ``Status`` of success (the
        object as deleted, for the kinds that answer with it).

    Raises:
        StatusError: 404, 409 (a precondition failed).
    """
    kind, name = ref.kind, ref.name
    stored = store.find(kind, ref.namespace, name)
    metadata = stored["metadata"]
    _check_preconditions(kind, stored, options.get("preconditions") or {})
    if metadata.get("deletionTimestamp"):
        return shown(kind, stored)
    finalizers = list(metadata.get("finalizers") or ())
    policy = options.get("propagationPolicy") or _ORPHANED_BY_DEFAULT.get((kind.group, kind.plural))
    extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(str(policy))
    if extra and extra not in finalizers:
        finalizers.append(extra)
    if kind == CRD_KIND:
        mark = crd_deletion.marked(stored, finalizers, now=store.now())
        crd = store.commit(kind, "MODIFIED", mark, old=stored)
        crd_deletion.clean_up(store, crd)
        return served(kind, crd)
    is_namespace = kind.plural == "namespaces" and not kind.group
    if not finalizers and not is_namespace:
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
        marked = _marked(stored, now=store.now(), finalizers=finalizers)
    else:
        marked = {**stored, "metadata": {**metadata, "deletionTimestamp": store.now()}}
        marked["status"] = {**stored.get("status", {}), "phase": "Terminating"}
    return served(kind, store.commit(kind, "MODIFIED", marked, old=stored))


_ORPHANED_BY_DEFAULT = {("batch", "jobs"): "Orphan", ("", "replicationcontrollers"): "Orphan"}
"""Kinds whose strategies orphan dependents when a DELETE names no propagation policy
(``DefaultGarbageCollectionPolicy``: batch/v1 Jobs and v1 ReplicationControllers)."""


def _marked(stored: Body, *, now: str, finalizers: list[str]) -> Body:
    """An object marked for deletion: its ``deletionTimestamp`` and grace period set, and its
    ``generation`` (where kept) bumped, for controllers see the deletion as a change."""
    metadata = {**stored["metadata"], "deletionTimestamp": now, "deletionGracePeriodSeconds": 0}
    if int(metadata.get("generation") or 0) > 0:
        metadata["generation"] = int(metadata["generation"]) + 1
    if finalizers:
        metadata["finalizers"] = finalizers
    return {**stored, "metadata": metadata}


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
