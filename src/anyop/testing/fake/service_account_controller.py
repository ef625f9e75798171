"""The service account controller, as kube-controller-manager runs it: every namespace has a
ServiceAccount ``default``.

Sync, like the fake's other controllers (:mod:`anyop.testing.fake.controllers`): a new namespace
gets it, and a deleted one comes back, while the namespace is not being deleted.
"""

from __future__ import annotations

from anyop.testing.fake import writes
from anyop.testing.fake.history import Change
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Store

__all__ = ["default_accounts_everywhere", "service_account_controller"]

_DEFAULT = "default"
_MANAGER = "kube-controller-manager"


def service_account_controller(store: Store, change: Change) -> None:
    """Keep the ServiceAccount ``default`` in the namespace a change concerns."""
    metadata = change.obj.get("metadata") or {}
    if change.resource == ("", "namespaces") and change.type == "ADDED":
        _ensure(store, str(metadata.get("name")))
    elif (change.resource == ("", "serviceaccounts") and change.type == "DELETED"
          and metadata.get("name") == _DEFAULT):  # fmt: skip
        _ensure(store, str(metadata.get("namespace")))


def default_accounts_everywhere(store: Store) -> None:
    """The ServiceAccount in the namespaces that exist already."""
    names = [
        str(body["metadata"]["name"])
        for resource, body in list(store.all_objects())
        if resource == ("", "namespaces")
    ]
    for name in names:
        _ensure(store, name)


def _ensure(store: Store, namespace: str) -> None:
    found = store.namespace(namespace)
    if found is None or found["metadata"].get("deletionTimestamp"):
        return
    kind = store.kind("", "v1", "serviceaccounts")
    assert kind is not None
    try:
        store.find(kind, namespace, _DEFAULT)
    except StatusError:
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": _DEFAULT}}
        writes.create(store, kind, account, namespace=namespace, manager=_MANAGER)
