"""kube-apiserver's own controllers of APIServices, as the fake runs them (in every FakeCluster:
they are the API server's, not kube-controller-manager's).

- ``crdregistration`` and ``autoregister``: each group version a CRD serves has an APIService
  ``<version>.<group>`` (labelled ``kube-aggregator.kubernetes.io/automanaged: "true"``, local,
  of priorities 1000 and 100), made, set right or deleted as the CRDs change and as others
  change or delete it, by the field manager ``kube-apiserver``; one whose label is taken off
  is left alone, as are the built-in group versions' (``onstart``).
- The local and remote availability controllers: the ``Available`` condition of an APIService,
  written to its status (by ``kube-apiserver``) when it changes, or when the Service or the
  EndpointSlices it names do. A local one is always available; a remote one is not while its
  Service is missing, does not listen on its port, or has no EndpointSlice with a ready
  address for that port. Where all that holds, the real controller asks the service for its
  discovery document; the fake does not, and leaves the condition as it was.

A controller of the fake's (see :mod:`anyop.testing.fake.controllers`): sync, it acts on each
committed change before the request that made it is answered, where kube-apiserver's act a
moment after. The decisions are :mod:`.apiservice_rules`'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake import deletions, writes
from anyop.testing.fake.apiservice_rules import available_status, registered, registration
from anyop.testing.fake.history import Change
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Ref, Store

__all__ = ["MANAGER", "apiservice_controllers"]

Body = dict[str, Any]
MANAGER = "kube-apiserver"
"""The field manager of the controllers' writes (the API server's loopback client)."""
_API_SERVICES = ("apiregistration.k8s.io", "apiservices")
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_SERVICES = ("", "services")
_SLICES = ("discovery.k8s.io", "endpointslices")
_WATCHED = frozenset((_API_SERVICES, _CRDS, _SERVICES, _SLICES))
_SERVICE_NAME = "kubernetes.io/service-name"


def apiservice_controllers(store: Store, change: Change) -> None:
    """React to one committed change as kube-apiserver's APIService controllers."""
    if change.resource not in _WATCHED:
        return
    if change.resource == _CRDS:
        for name in sorted(_group_versions(change.old) | _group_versions(change.obj)):
            _register(store, name)
        return
    if change.resource == _API_SERVICES:
        name = str(change.obj["metadata"]["name"])
        _register(store, name)
        _check_available(store, name)
        return
    metadata = change.obj.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    service = str(metadata.get("name") or "")
    if change.resource == _SLICES:
        service = str((metadata.get("labels") or {}).get(_SERVICE_NAME) or "")
        if not service:
            return
    for name in sorted(_naming(store, namespace, service)):
        _check_available(store, name)


def _group_versions(crd: Mapping[str, Any] | None) -> set[str]:
    """The names of the APIServices of a CRD's group versions (served or not)."""
    if crd is None:
        return set()
    spec = crd.get("spec") or {}
    return {f"{version.get('name')}.{spec.get('group')}" for version in spec.get("versions") or ()}


def _naming(store: Store, namespace: str, service: str) -> Iterator[str]:
    """The APIServices whose ``spec.service`` is that Service."""
    for (_, name), body in store.readable(_API_SERVICES).items():  # (the boot's: all local)
        reference = (body.get("spec") or {}).get("service")
        if isinstance(reference, Mapping) and (
            reference.get("namespace"),
            reference.get("name"),
        ) == (namespace, service):
            yield name


def _kind(store: Store) -> Any:
    kind = store.kind(_API_SERVICES[0], "v1", _API_SERVICES[1])
    assert kind is not None  # (a built-in kind, always served)
    return kind


def _register(store: Store, name: str) -> None:
    """``autoregister``'s check of one APIService against what the CRDs ask for."""
    crds = list(store.objects[_CRDS].values())
    desired = registered(crds, [name]).get(name)
    current = store.objects[_API_SERVICES].get(("", name))
    action = registration(current, desired)
    kind = _kind(store)
    try:
        if action == "create" and desired is not None:
            writes.create(store, kind, json_copy(desired), namespace=None, manager=MANAGER)
        elif action == "update" and current is not None and desired is not None:
            new = {**current, "spec": json_copy(desired["spec"])}
            writes.update(store, kind, current, new=new, subresource=None, manager=MANAGER)
        elif action == "delete" and current is not None:
            uid = current["metadata"].get("uid")
            deletions.delete(store, Ref(kind, None, name), {"preconditions": {"uid": uid}})
    except StatusError as exc:  # gone or changed meanwhile, as the controller ignores them
        if exc.code not in (404, 409):
            store.controller_errors.append(exc)  # logged, and tried again later


def _check_available(store: Store, name: str) -> None:
    """The availability controllers' check of one APIService: its status written if its
    ``Available`` condition is not what they find."""
    current = store.objects[_API_SERVICES].get(("", name))
    if current is None:
        return
    reference = (current.get("spec") or {}).get("service")
    service: Body | None = None
    slices: list[Body] = []
    if isinstance(reference, Mapping):
        namespace, service_name = str(reference.get("namespace")), str(reference.get("name"))
        service = store.objects[_SERVICES].get((namespace, service_name))
        slices = [
            body
            for (where, _), body in store.objects[_SLICES].items()
            if where == namespace
            and ((body.get("metadata") or {}).get("labels") or {}).get(_SERVICE_NAME)
            == service_name
        ]
    status = available_status(current, service=service, slices=slices, now=store.now())
    if status is not None:
        new = {**current, "status": status}
        writes.update(store, _kind(store), current, new=new, subresource="status", manager=MANAGER)
