"""The objects a fresh kube-apiserver makes for itself, which every fake store starts with.

``data/bootstrap.json.gz`` is made by ``scripts/fake_bootstrap.py`` from a bare local control
plane: the default RBAC ClusterRoles, ClusterRoleBindings, Roles and RoleBindings
(``kubernetes.io/bootstrapping: rbac-defaults``, with their aggregation rules: see
:func:`boot_set`), the PriorityClasses ``system-cluster-critical`` and
``system-node-critical``, the ``default/kubernetes`` Service with its Endpoints,
EndpointSlice, ServiceCIDR ``kubernetes`` and IPAddress, API Priority and Fairness' FlowSchemas
and PriorityLevelConfigurations, and the local APIServices. Their ``managedFields`` are the
API server's (``kube-apiserver``, ``Update``; the ServiceCIDR's status the
``kubernetes-service-cidr-controller``'s ``Apply``), stamped with the boot's time.

The Service, whose cluster IP is the service network's first address, targets
:data:`API_PORT` and its endpoints are the local control plane's advertised address there: a
FakeCluster is made before it listens anywhere (in-process, it never does), so it names the
port a kube-apiserver listens on by default, and keeps it while :meth:`FakeCluster.serve`
listens on another.

Sync and pure. The file is read and put in stored form once per process, and the objects of the
stores of one seed, boot time and first resourceVersion are made once (:func:`boot_set`): a
store takes its own copy of a resource's objects (one :mod:`marshal` load) when that resource is
first read, so that the many FakeClusters of a test suite that read none of them pay nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import marshal
import random
import uuid
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

from anyop.testing.fake.clusterrole_aggregation import RESOURCE as CLUSTERROLES
from anyop.testing.fake.clusterrole_aggregation import settled
from anyop.testing.fake.conversions import for_storage, stored_as
from anyop.testing.fake.history import ObjectKey, ResourceKey
from anyop.testing.fake.kinds import BUILTIN_KINDS, Kind
from anyop.testing.fake.stored_form import as_stored

__all__ = [
    "API_PORT",
    "BootSet",
    "boot_set",
    "filled",
    "flow_control_configuration",
    "group_priorities",
]

Body = dict[str, Any]
API_PORT = 6443
"""The port the ``kubernetes`` Service targets: kube-apiserver's default ``--secure-port``."""
_NOW, _PORT = "$now", "$port"
"""The data's placeholders for the boot's time and the API server's port."""


@functools.cache
def _document() -> dict[str, Any]:
    data = resources.files("anyop.testing.fake").joinpath("data/bootstrap.json.gz").read_bytes()
    found: dict[str, Any] = json.loads(gzip.decompress(data))
    return found


@functools.cache
def group_priorities() -> dict[tuple[str, str], int]:
    """The ``groupPriorityMinimum`` of each built-in group version's APIService (kube-apiserver's
    own, in the data), by group and version."""
    return {
        (str(body["spec"].get("group") or ""), str(body["spec"]["version"])):
            int(body["spec"]["groupPriorityMinimum"])
        for body in _document()["objects"]
        if body["kind"] == "APIService"
    }  # fmt: skip


@functools.cache
def flow_control_configuration() -> dict[str, dict[str, Body]]:
    """API Priority and Fairness' bootstrap objects as its config producer creates them (their
    specs as stored: the producer's, defaulted): by kind (``FlowSchema`` and
    ``PriorityLevelConfiguration``), then by name. To be read, never changed."""
    found: dict[str, dict[str, Body]] = {"FlowSchema": {}, "PriorityLevelConfiguration": {}}
    for body in _document()["objects"]:
        if body["kind"] in found:
            metadata = {"name": body["metadata"]["name"],
                        "annotations": dict(body["metadata"]["annotations"])}  # fmt: skip
            found[body["kind"]][metadata["name"]] = {
                "apiVersion": body["apiVersion"], "kind": body["kind"], "metadata": metadata,
                "spec": body["spec"]}  # fmt: skip
    return found


@functools.cache
def _templates() -> tuple[tuple[Kind, Body], ...]:
    """Each object as stored, but for what each store makes anew (``$now`` where the boot's
    time goes); in the data's order. (The data is the server's: the script checks that the
    fake's decoder and defaults keep it as it is.)"""
    kinds = {(kind.group, kind.version, kind.kind): kind for kind in BUILTIN_KINDS}
    result = []
    for body in _document()["objects"]:
        group, _, version = str(body["apiVersion"]).rpartition("/")
        kind = kinds[(group, version, body["kind"])]
        obj = for_storage(kind, _replaced(body, {_PORT: API_PORT}))
        result.append((kind, as_stored(*stored_as(kind), kind.kind, obj)))
    return tuple(result)


def _replaced(value: Any, strings: Mapping[str, Any]) -> Any:
    """A copy of ``value`` (every dict and list a new one) with some strings replaced."""
    if isinstance(value, str):
        return strings.get(value, value)
    if isinstance(value, dict):
        return {key: _replaced(item, strings) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, strings) for item in value]
    return value


def filled(body: Body, now: str) -> Body:
    """A copy of an object of the data with the boot's time and the API server's port in place
    of their placeholders."""
    result: Body = _replaced(body, {_NOW: now, _PORT: API_PORT})
    return result


def _made(seed: int, now: str, rv: int) -> Iterator[tuple[ResourceKey, ObjectKey, Body]]:
    """The objects of one store, as stored: uids from a generator of their own (the store's
    uids and generated names stay those it gave before there were any)."""
    rng = random.Random(f"bootstrap {seed}")
    for index, (kind, template) in enumerate(_templates(), start=rv + 1):
        obj = _replaced(template, {_NOW: now})
        given = obj["metadata"]
        metadata = {
            "name": given.pop("name"),
            "namespace": given.pop("namespace", None),
            "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "resourceVersion": str(index),
            "generation": 1 if kind.generation else None,
            "creationTimestamp": now,
        }
        obj["metadata"] = {k: v for k, v in metadata.items() if v is not None} | given
        key = (str(metadata["namespace"] or ""), str(metadata["name"]))
        yield (kind.group, kind.plural), key, obj


@dataclasses.dataclass(frozen=True, slots=True)
class BootSet:
    """The bootstrap objects of the stores of one seed, boot time and first resourceVersion.

    Attributes:
        frozen: Each resource's objects by key (``namespace, name``), as :mod:`marshal` bytes:
            a store's own copy is one load of them.
        shared: The same objects, shared by those stores: to be read, never changed.
        count: How many objects (resourceVersions) there are.
    """

    frozen: Mapping[ResourceKey, bytes]
    shared: Mapping[ResourceKey, Mapping[ObjectKey, Body]]
    count: int


@functools.lru_cache(maxsize=16)
def boot_set(seed: int, now: str, rv: int, *, aggregated: bool = False) -> BootSet:
    """The bootstrap objects of a store, as stored: made at ``now``, with the resourceVersions
    after ``rv`` in the data's order and uids that ``seed`` decides.

    ``aggregated``: the ClusterRoles that aggregate others (``admin``, ``edit``, ``view``) hold
    their rules, as kube-controller-manager's aggregation leaves them at once in a cluster with
    controllers, with the resourceVersions after the others' (see
    :mod:`~anyop.testing.fake.clusterrole_aggregation`).
    """
    objects: dict[ResourceKey, dict[ObjectKey, Body]] = {}
    for resource, key, obj in _made(seed, now, rv):
        objects.setdefault(resource, {})[key] = obj
    count = sum(len(found) for found in objects.values())
    roles = objects.get(CLUSTERROLES, {})
    for key in settled(roles, now) if aggregated else ():
        count += 1
        roles[key]["metadata"]["resourceVersion"] = str(rv + count)
    # Version 4 shares in a copy what the source shares, and nothing but strings is shared
    # here (every dict and list of _made's is its own); it loads about twice as fast as 2.
    frozen = {resource: marshal.dumps(found, 4) for resource, found in objects.items()}
    shared = {resource: marshal.loads(data) for resource, data in frozen.items()}
    return BootSet(frozen, shared, count)
