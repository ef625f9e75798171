"""The controllers a real cluster runs beside its API server, as the fake runs them: the garbage
collector (owner references) and the namespace controller (deleting a namespace's contents).

Sync and deterministic: they act on each committed change right after the watches have seen it
(see :meth:`Store.commit <anyop.testing.fake.store.Store.commit>`), so a deletion's
consequences are committed in order, with the next resourceVersions, before the request that
caused them is answered. A real cluster does the same a moment later, after the answer.

Behaviour, as Kubernetes documents it:

- Background (the default): once an owner is gone, each dependent whose owners are all gone is
  deleted (with the same policy, so a chain goes too); a dependent with another live owner only
  loses the reference to the gone one.
- Foreground: the owner keeps ``foregroundDeletion`` and a ``deletionTimestamp`` while its
  dependents are deleted; it goes once no dependent with ``blockOwnerDeletion: true`` is left.
- Orphan: the dependents lose their references to the owner, then the owner goes.
- A namespace being deleted: every object in it is deleted (finalizers are respected: such an
  object stays until they are removed); once it is empty, the ``kubernetes`` finalizer is
  removed from ``spec.finalizers``, and then the namespace is gone (unless
  ``metadata.finalizers`` keep it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from anyop.testing.fake import deletions, writes
from anyop.testing.fake.history import Change
from anyop.testing.fake.kinds import NAMESPACE_KIND, Kind
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Ref, Store

__all__ = ["run_controllers"]

Body = dict[str, Any]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_NAMESPACE_FINALIZER = "kubernetes"


def run_controllers(store: Store, change: Change) -> None:
    """React to one committed change as the garbage collector and the namespace controller."""
    metadata = change.obj.get("metadata") or {}
    deleting = bool(metadata.get("deletionTimestamp"))
    if change.type == "DELETED":
        _collect_dependents(store, str(metadata.get("uid", "")))
    elif deleting and ORPHAN in (metadata.get("finalizers") or ()):
        _orphan_dependents(store, change)
    elif deleting and FOREGROUND in (metadata.get("finalizers") or ()):
        _delete_foreground(store, change)
    for owner in metadata.get("ownerReferences") or ():
        if change.type == "DELETED" or deleting:
            _finish_foreground(store, str(owner.get("uid", "")))
    if change.resource == ("", "namespaces") and deleting and change.type != "DELETED":
        _empty_namespace(store, str(metadata.get("name")))
    elif metadata.get("namespace") and change.type == "DELETED":
        namespace = store.namespace(str(metadata["namespace"]))
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            _finish_namespace(store, namespace)


# -- the garbage collector ----------------------------------------------------------------------


def _objects(store: Store) -> Iterator[tuple[Kind, Body]]:
    """Every stored object with a kind it is served as (a snapshot: writes may follow)."""
    for resource, body in list(store.all_objects()):
        kind = store.kind_of(resource)
        if kind is not None:
            yield kind, body


def _ref(kind: Kind, body: Body) -> Ref:
    metadata = body["metadata"]
    return Ref(kind, metadata.get("namespace") if kind.namespaced else None, metadata["name"])


def _dependents(store: Store, uid: str) -> list[tuple[Kind, Body]]:
    return [
        (kind, body)
        for kind, body in _objects(store)
        if any(ref.get("uid") == uid for ref in body["metadata"].get("ownerReferences") or ())
    ]


def _exists(store: Store, uid: str) -> bool:
    return any(body["metadata"].get("uid") == uid for _, body in _objects(store))


def _delete(store: Store, ref: Ref, policy: str = "Background") -> None:
    try:
        deletions.delete(store, ref, {"propagationPolicy": policy})
    except StatusError as exc:  # gone meanwhile: nothing left to do
        if exc.code != 404:
            raise


def _amend(store: Store, ref: Ref, **changes: Any) -> None:
    """Change an object's metadata as it is stored now (earlier writes may have changed it)."""
    try:
        stored = store.find(ref.kind, ref.namespace, ref.name)
    except StatusError:
        return
    metadata = {**stored["metadata"], **changes}
    new = {**stored, "metadata": {k: v for k, v in metadata.items() if v is not None}}
    writes.update(store, ref.kind, stored, new=new, subresource=None)


def _collect_dependents(store: Store, uid: str) -> None:
    for kind, body in _dependents(store, uid):
        references = body["metadata"].get("ownerReferences") or []
        alive = [ref for ref in references if ref.get("uid") != uid and _exists(store, ref["uid"])]
        if alive:
            kept = [ref for ref in references if ref.get("uid") != uid]
            _amend(store, _ref(kind, body), ownerReferences=kept)
        elif not body["metadata"].get("deletionTimestamp"):
            _delete(store, _ref(kind, body))


def _orphan_dependents(store: Store, change: Change) -> None:
    uid = str(change.obj["metadata"].get("uid"))
    for kind, body in _dependents(store, uid):
        references = body["metadata"].get("ownerReferences") or []
        kept = [ref for ref in references if ref.get("uid") != uid]
        _amend(store, _ref(kind, body), ownerReferences=kept or None)
    owner_kind = store.kind_of(change.resource)
    if owner_kind is not None:
        _remove_finalizer(store, _ref(owner_kind, change.obj), ORPHAN)


def _delete_foreground(store: Store, change: Change) -> None:
    uid = str(change.obj["metadata"].get("uid"))
    for kind, body in _dependents(store, uid):
        if not body["metadata"].get("deletionTimestamp"):
            _delete(store, _ref(kind, body), "Foreground")
    _finish_foreground(store, uid)


def _finish_foreground(store: Store, uid: str) -> None:
    """Let an owner in foreground deletion go once no blocking dependent is left."""
    found = [(kind, body) for kind, body in _objects(store) if body["metadata"].get("uid") == uid]
    if not found or FOREGROUND not in (found[0][1]["metadata"].get("finalizers") or ()):
        return
    for _, body in _dependents(store, uid):
        references = body["metadata"].get("ownerReferences") or ()
        if any(ref.get("uid") == uid and ref.get("blockOwnerDeletion") for ref in references):
            return
    _remove_finalizer(store, _ref(*found[0]), FOREGROUND)


def _remove_finalizer(store: Store, ref: Ref, finalizer: str) -> None:
    try:
        stored = store.find(ref.kind, ref.namespace, ref.name)
    except StatusError:
        return
    kept = [item for item in stored["metadata"].get("finalizers") or () if item != finalizer]
    _amend(store, ref, finalizers=kept or None)


# -- the namespace controller -------------------------------------------------------------------


def _empty_namespace(store: Store, name: str) -> None:
    for kind, body in _objects(store):
        inside = kind.namespaced and body["metadata"].get("namespace") == name
        if inside and not body["metadata"].get("deletionTimestamp"):
            _delete(store, _ref(kind, body))
    namespace = store.namespace(name)
    if namespace is not None:
        _finish_namespace(store, namespace)


def _finish_namespace(store: Store, namespace: Body) -> None:
    name = namespace["metadata"]["name"]
    if any(
        kind.namespaced and body["metadata"].get("namespace") == name
        for kind, body in _objects(store)
    ):
        return
    finalizers = (namespace.get("spec") or {}).get("finalizers") or []
    if _NAMESPACE_FINALIZER not in finalizers:
        return
    kept = [item for item in finalizers if item != _NAMESPACE_FINALIZER]
    new = {**namespace, "spec": {**namespace.get("spec", {}), "finalizers": kept}}
    writes.update(store, NAMESPACE_KIND, namespace, new=new, subresource="finalize")
