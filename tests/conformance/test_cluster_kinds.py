"""Conformance: cluster-scoped built-in kinds (PriorityClasses, IngressClasses,
PersistentVolumes, Namespaces, ClusterRoleBindings), valid and not, created and then updated
in what may not change and in what may.

Their objects outlive a scenario on the shared real API server: each is named for its scenario
and deleted at its end (unrecorded), those refused too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
Change = Callable[[Body], None]


def _name(t: Target) -> str:
    return f"anyop-conf-{t.namespace}"


async def _lifecycle(t: Target, path: str, body: Body, changes: list[Change]) -> None:
    """Create; if made, PUT each change of what was made (against its first version); then
    delete it without its finalizers (a volume's protection), unrecorded."""
    name = body["metadata"]["name"]
    made = await t.post(path, body)
    if made.get("kind") != "Status":
        for change in changes:
            changed = copy.deepcopy(made)
            change(changed)
            await t.put(f"{path}/{name}", changed)
        if made["metadata"].get("finalizers"):
            unfinalized = {"metadata": {"finalizers": None}}
            await t.call("PATCH", f"{path}/{name}", unfinalized, ct=MERGE, record=lambda d: None)
    await t.call("DELETE", f"{path}/{name}", record=lambda d: None)


# -- PriorityClass ------------------------------------------------------------------------------

PRIORITY_CLASSES: list[Body] = [
    {"value": 1000},
    {"value": 1000000000, "preemptionPolicy": "Never", "description": "d"},
    {"value": 2000000000},
    {"value": 5, "preemptionPolicy": "X"},
    {"value": 5, "preemptionPolicy": ""},
    {"value": -7, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"},
]


def _repriced(obj: Body) -> None:
    obj["value"] += 1
    obj["preemptionPolicy"] = "Never" if obj["preemptionPolicy"] != "Never" else "X"


def _described(obj: Body) -> None:
    obj["description"] = "changed"
    obj["metadata"]["labels"] = {"changed": "yes"}


@pytest.mark.parametrize("fields", PRIORITY_CLASSES)
async def test_a_priority_class_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": _name(t)}, **fields}  # fmt: skip
        path = "/apis/scheduling.k8s.io/v1/priorityclasses"
        await _lifecycle(t, path, body, [_repriced, _described])

    await conform(scenario)


async def test_a_priority_class_may_not_take_a_system_name(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # refused on both: nothing is left
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": f"system-{t.namespace}"}, "value": 1}  # fmt: skip
        await _lifecycle(t, "/apis/scheduling.k8s.io/v1/priorityclasses", body, [])

    await conform(scenario)


# -- IngressClass -------------------------------------------------------------------------------

INGRESS_CLASSES: list[Body] = [
    {"controller": "example.com/ingress"},
    {"controller": "example.com/ingress",
     "parameters": {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}},
    {"controller": "example.com/ingress",
     "parameters": {"kind": "Params", "name": "p", "scope": "Namespace", "namespace": "ns"}},
    {},
    {"controller": ""},
    {"controller": "nodomain"},
    {"controller": "Bad_Host/path"},
    {"controller": "example.com/a b"},
    {"controller": "example.com/" + "x" * 250},
    {"controller": "a/b", "parameters": {"kind": ""}},
    {"controller": "a/b", "parameters": {"apiGroup": "-x", "kind": "a/b", "name": ".."}},
    {"controller": "a/b", "parameters": {"kind": "K", "name": "n", "scope": "Galaxy"}},
    {"controller": "a/b", "parameters": {"kind": "K", "name": "n", "scope": "Namespace"}},
    {"controller": "a/b",
     "parameters": {"kind": "K", "name": "n", "scope": "Namespace", "namespace": "Bad.ns"}},
    {"controller": "a/b",
     "parameters": {"kind": "K", "name": "n", "scope": "Cluster", "namespace": "ns"}},
]  # fmt: skip


def _controller_changed(obj: Body) -> None:
    obj["spec"]["controller"] = "example.com/other"


def _parameters_changed(obj: Body) -> None:
    obj["spec"]["parameters"] = {"kind": "Other", "name": "o"}


@pytest.mark.parametrize("spec", INGRESS_CLASSES)
async def test_an_ingress_class_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": _name(t)}, "spec": spec}  # fmt: skip
        path = "/apis/networking.k8s.io/v1/ingressclasses"
        await _lifecycle(t, path, body, [_controller_changed, _parameters_changed])

    await conform(scenario)


# -- PersistentVolume ---------------------------------------------------------------------------

_HOST = {"hostPath": {"path": "/data"}}
_RWO = ["ReadWriteOnce"]
_GIB = {"storage": "1Gi"}
PERSISTENT_VOLUMES: list[Body] = [
    {"accessModes": _RWO, "capacity": _GIB, **_HOST},
    {"accessModes": ["ReadWriteMany", "ReadOnlyMany"], "capacity": {"storage": "500M"},
     "nfs": {"server": "nfs.example.com", "path": "/exports"},
     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast",
     "volumeMode": "Block", "mountOptions": ["hard"]},
    {"accessModes": _RWO, "capacity": _GIB,
     "csi": {"driver": "csi.example.com", "volumeHandle": "h"}},
    {"accessModes": ["X"]},
    {"accessModes": [], "capacity": {"storage": "0"}, **_HOST},
    {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "capacity": {"cpu": "1"}, **_HOST},
    {"accessModes": _RWO, "capacity": {"storage": "-1Gi"}, **_HOST},
    {"accessModes": _RWO, "capacity": _GIB, "hostPath": {"path": "/a/../b", "type": "Pipe"}},
    {"accessModes": _RWO, "capacity": _GIB, "hostPath": {"path": ""}},
    {"accessModes": _RWO, "capacity": _GIB, "hostPath": {"path": "/"},
     "persistentVolumeReclaimPolicy": "Recycle"},
    {"accessModes": _RWO, "capacity": _GIB, **_HOST, "persistentVolumeReclaimPolicy": "Keep",
     "storageClassName": "Fast!", "volumeMode": "Raw"},
    {"accessModes": _RWO, "capacity": _GIB, **_HOST, "nfs": {"server": "s", "path": "/p"}},
    {"accessModes": _RWO, "capacity": _GIB, "nfs": {"path": "relative"}},
    {"accessModes": _RWO, "capacity": _GIB, "local": {"path": "/mnt/disk"}},
    {"accessModes": _RWO, "capacity": _GIB, "local": {"path": "/mnt/disk"}, "nodeAffinity": {}},
    {"accessModes": _RWO, "capacity": _GIB, "csi": {"driver": "Bad_Driver"}},
    {"accessModes": _RWO, "capacity": _GIB, "csi": {"driver": "", "volumeHandle": "h"}},
]  # fmt: skip


def _mode_changed(obj: Body) -> None:
    obj["spec"]["volumeMode"] = "Block"


def _relabelled(obj: Body) -> None:
    obj["metadata"]["labels"] = {"changed": "yes"}
    obj["spec"]["storageClassName"] = "slow"


@pytest.mark.parametrize("spec", PERSISTENT_VOLUMES)
async def test_a_persistent_volume_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": _name(t)}, "spec": spec}  # fmt: skip
        await _lifecycle(t, "/api/v1/persistentvolumes", body, [_mode_changed, _relabelled])

    await conform(scenario)


async def test_mount_options_need_a_volume_type_that_takes_them(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        annotations = {"volume.beta.kubernetes.io/mount-options": "hard"}
        body = {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": _name(t), "annotations": annotations},
                "spec": {"accessModes": _RWO, "capacity": _GIB, **_HOST}}  # fmt: skip
        await _lifecycle(t, "/api/v1/persistentvolumes", body, [])

    await conform(scenario)


# -- Namespace ----------------------------------------------------------------------------------

NAMESPACES: list[tuple[str, Body]] = [
    ("-bad", {}),
    ("a.b", {}),
    ("Upper", {}),
    ("{ns}-x", {"spec": {"finalizers": ["example.com/keep"]}, "status": {"phase": "Terminating"}}),
    ("{ns}-x", {"spec": {"finalizers": ["kubernetes", "example.com/keep"]}}),
    ("{ns}-x", {"spec": {"finalizers": ["keep"]}}),
    ("{ns}-x", {"spec": {"finalizers": ["example.com/a/b"]}}),
]


@pytest.mark.parametrize(("name", "fields"), NAMESPACES)
async def test_a_namespace_is_checked(conform: Conform, name: str, fields: Body) -> None:
    async def scenario(t: Target) -> None:  # (one made stays Terminating: no controllers)
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name.format(ns=t.namespace)}, **fields}  # fmt: skip
        await _lifecycle(t, "/api/v1/namespaces", body, [_refinalized])

    await conform(scenario)


def _kind(document: Body) -> Any:
    return document if document.get("kind") == "Status" else document.get("kind")


async def test_the_api_servers_own_namespaces_may_not_be_deleted(conform: Conform) -> None:
    """``default``, ``kube-system`` and ``kube-public`` are refused (403); ``kube-node-lease``
    is not (dry runs: admission decides them as it decides a deletion)."""

    async def scenario(t: Target) -> None:
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            await t.delete(f"/api/v1/namespaces/{name}", params={"dryRun": "All"}, record=_kind)

    await conform(scenario)


def _refinalized(obj: Body) -> None:
    obj["spec"]["finalizers"] = ["bad name"]
    obj["status"] = {"phase": "Terminating"}
    obj["metadata"]["labels"]["changed"] = "yes"


# -- ClusterRoleBinding -------------------------------------------------------------------------

_ROLE = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
CLUSTER_ROLE_BINDINGS: list[Body] = [
    {"roleRef": _ROLE, "subjects": [{"kind": "User", "name": "u"},
                                    {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]},
    {"roleRef": {**_ROLE, "kind": "Role", "name": "r"}, "subjects": [{"kind": "User"}]},
    {"roleRef": {"kind": "Role", "name": ""}, "subjects": [{"kind": "ServiceAccount"}]},
    {"roleRef": {**_ROLE, "apiGroup": "x", "name": "a/b"},
     "subjects": [{"kind": "ServiceAccount", "name": "Bad_SA", "apiGroup": "rbac"},
                  {"kind": "Group", "name": "g", "apiGroup": "x"}, {"kind": "Bot", "name": "b"},
                  {"kind": "", "name": ""}]},
    {"roleRef": {**_ROLE, "name": ".."}, "subjects": [{"kind": "ServiceAccount", "name": "s"}]},
]  # fmt: skip


def _rebound(obj: Body) -> None:
    obj["roleRef"]["name"] = "edit"
    obj["subjects"] = [{"kind": "ServiceAccount", "name": "s"}]


def _resubjected(obj: Body) -> None:
    obj["subjects"] = [{"kind": "Group", "name": "g"}]


@pytest.mark.parametrize("fields", CLUSTER_ROLE_BINDINGS)
async def test_a_cluster_role_binding_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": _name(t)}, **fields}  # fmt: skip
        path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        await _lifecycle(t, path, body, [_rebound, _resubjected])

    await conform(scenario)
