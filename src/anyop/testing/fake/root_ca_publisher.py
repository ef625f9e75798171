"""The root CA publisher, as kube-controller-manager runs it: every namespace has a ConfigMap
``kube-root-ca.crt`` with the CA bundle that verifies the API server.

Sync, like the fake's other controllers (:mod:`anyop.testing.fake.controllers`): a new namespace
gets the ConfigMap, a deleted one comes back, and a changed one is set right again, while the
namespace is not being deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyop.testing.fake import writes
from anyop.testing.fake.history import Change
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Controller, Store

__all__ = ["ROOT_CA", "publish_everywhere", "root_ca_publisher"]

ROOT_CA = "kube-root-ca.crt"
_MANAGER = "kube-controller-manager"
_DESCRIPTION = (  # kube-controller-manager's own words (the annotation's value)
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


def root_ca_publisher(ca_pem: Callable[[], str]) -> Controller:
    """A controller that keeps ``kube-root-ca.crt`` (with ``ca_pem()``) in every namespace."""

    def publish(store: Store, change: Change) -> None:
        metadata = change.obj.get("metadata") or {}
        if change.resource == ("", "namespaces") and change.type == "ADDED":
            _ensure(store, str(metadata.get("name")), ca_pem())
        elif change.resource == ("", "configmaps") and metadata.get("name") == ROOT_CA:
            data = change.obj.get("data") or {}
            if change.type == "DELETED" or data != {"ca.crt": ca_pem()}:
                _ensure(store, str(metadata.get("namespace")), ca_pem())

    return publish


def publish_everywhere(store: Store, ca_pem: str) -> None:
    """The ConfigMap in the namespaces that exist already."""
    names = [
        str(body["metadata"]["name"])
        for resource, body in list(store.all_objects())
        if resource == ("", "namespaces")
    ]
    for name in names:
        _ensure(store, name, ca_pem)


def _configmap(ca_pem: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA, "annotations": {"kubernetes.io/description": _DESCRIPTION}},
        "data": {"ca.crt": ca_pem},
    }


def _ensure(store: Store, namespace: str, ca_pem: str) -> None:
    found = store.namespace(namespace)
    if found is None or found["metadata"].get("deletionTimestamp"):
        return
    kind = store.kind("", "v1", "configmaps")
    assert kind is not None
    wanted = _configmap(ca_pem)
    try:
        stored = store.find(kind, namespace, ROOT_CA)
    except StatusError:
        writes.create(store, kind, wanted, namespace=namespace, manager=_MANAGER)
        return
    if stored.get("data") != wanted["data"]:
        new = {**stored, "data": wanted["data"]}
        writes.update(store, kind, stored, new=new, subresource=None, manager=_MANAGER)
