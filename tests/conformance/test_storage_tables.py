"""Conformance: Table views of the storage and node kinds (``storage.k8s.io/v1``,
``node.k8s.io/v1``), as ``kubectl get`` asks for them.

Each scenario makes a few objects of one kind, with their printed fields set, set to their
defaults, or unset (the cell then shows the server's default or the printer's placeholder), and
reads them as Tables: their list (selected by a label of the scenario, the real server being
shared), each of them without its object, one with it. Cluster-scoped objects are named after the
scenario's namespace and deleted at its end, unrecorded. Ages are masked as in
:mod:`tests.conformance.test_tables`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target
from tests.conformance.test_tables import TABLE, TABLE_BETA, _get, _mask_records, _quiet

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
Objects = Callable[[str], list[Body]]
"""A scenario's objects, given the prefix of their names (its namespace)."""
_LABEL = "tables.anyop.dev/scenario"
_STORAGE = "storage.k8s.io/v1"


async def _print_all(t: Target, plural: str, objects: list[Body], *, group: str = _STORAGE,
                     namespaced: bool = False) -> None:  # fmt: skip
    """Create ``objects`` (and their ``status``), read them as Tables, then delete them."""
    path = t.apis(group, plural, namespaced=namespaced)
    selector = f"{_LABEL}={t.namespace}"
    made: list[str] = []
    try:
        await _get(t, path, TABLE, labelSelector=selector)  # none yet
        for obj in objects:
            obj["metadata"].setdefault("labels", {})[_LABEL] = t.namespace
            status = obj.pop("status", None)
            name = (await _quiet(t, "POST", path, obj))["metadata"]["name"]
            made.append(name)
            if status is not None:
                await _quiet(t, "PATCH", f"{path}/{name}/status", {"status": status}, MERGE)
        await _get(t, path, TABLE, labelSelector=selector)
        await _get(t, path, TABLE, labelSelector=selector, includeObject="None")
        for name in made:
            await _get(t, f"{path}/{name}", includeObject="None")
        await _get(t, f"{path}/{made[0]}", TABLE_BETA, includeObject="Object")
    finally:  # without their finalizers (a VolumeAttributesClass's protection): no controller
        for name in made:
            unfinalized = {"metadata": {"finalizers": None}}
            headers = {"Content-Type": MERGE}
            await t.api.patch(f"{path}/{name}", json=unfinalized, headers=headers)
            await t.api.delete(f"{path}/{name}")
    _mask_records(t)


# -- StorageClass ---------------------------------------------------------------------------------

_BETA_DEFAULT = "storageclass.beta.kubernetes.io/is-default-class"
STORAGE_CLASSES: dict[str, Objects] = {
    "set": lambda ns: [
        {"metadata": {"name": f"{ns}-fast",
                      "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": "example.com/fast", "parameters": {"type": "ssd"},
         "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
         "allowVolumeExpansion": True, "mountOptions": ["ro"]},
        {"metadata": {"name": f"{ns}-beta", "annotations": {_BETA_DEFAULT: "true"}},
         "provisioner": "kubernetes.io/no-provisioner", "allowVolumeExpansion": False,
         "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
        {"metadata": {"name": f"{ns}-not-default", "annotations": {_BETA_DEFAULT: "yes"}},
         "provisioner": "example.com/slow", "reclaimPolicy": "Delete",
         "volumeBindingMode": "Immediate"},
    ],
    "unset": lambda ns: [
        {"metadata": {"name": f"{ns}-plain"}, "provisioner": "example.com/plain"},
    ],
}  # fmt: skip


@pytest.mark.parametrize("case", STORAGE_CLASSES)
async def test_storage_classes_print_their_policies(conform: Conform, case: str) -> None:
    async def scenario(t: Target) -> None:
        await _print_all(t, "storageclasses", STORAGE_CLASSES[case](t.namespace))

    await conform(scenario)


# -- VolumeAttributesClass ------------------------------------------------------------------------


async def test_volume_attributes_classes_print_their_driver(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        classes = [
            {"metadata": {"name": f"{t.namespace}-gold"}, "driverName": "example.com/csi",
             "parameters": {"iops": "3000", "throughput": "50"}},
            {"metadata": {"name": f"{t.namespace}-silver"}, "driverName": "csi.example.com",
             "parameters": {"iops": ""}},
        ]  # fmt: skip
        await _print_all(t, "volumeattributesclasses", classes)

    await conform(scenario)


# -- CSIDriver ------------------------------------------------------------------------------------

CSI_DRIVERS: dict[str, Objects] = {
    "set": lambda ns: [
        {"metadata": {"name": f"{ns}.full.example.com"}, "spec": {
            "attachRequired": False, "podInfoOnMount": True, "storageCapacity": True,
            "tokenRequests": [{"audience": "vault"},
                              {"audience": "gcp", "expirationSeconds": 3600}],
            "requiresRepublish": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"],
            "fsGroupPolicy": "File"}},
        {"metadata": {"name": f"{ns}.explicit.example.com"}, "spec": {
            "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
            "requiresRepublish": False, "volumeLifecycleModes": ["Persistent"],
            "fsGroupPolicy": "ReadWriteOnceWithFSType", "tokenRequests": [{"audience": ""}]}},
        {"metadata": {"name": f"{ns}.ephemeral.example.com"}, "spec": {
            "attachRequired": True, "podInfoOnMount": True, "storageCapacity": False,
            "requiresRepublish": False, "volumeLifecycleModes": ["Ephemeral"],
            "fsGroupPolicy": "None"}},
    ],
    "unset": lambda ns: [
        {"metadata": {"name": f"{ns}.plain.example.com"}, "spec": {}},
        {"metadata": {"name": f"{ns}.empty.example.com"},
         "spec": {"tokenRequests": [], "volumeLifecycleModes": []}},
    ],
}  # fmt: skip


@pytest.mark.parametrize("case", CSI_DRIVERS)
async def test_csi_drivers_print_their_capabilities(conform: Conform, case: str) -> None:
    async def scenario(t: Target) -> None:
        await _print_all(t, "csidrivers", CSI_DRIVERS[case](t.namespace))

    await conform(scenario)


# -- CSINode --------------------------------------------------------------------------------------


async def test_csi_nodes_print_their_drivers_count(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        drivers = [
            {"name": "a.example.com", "nodeID": "node-1",
             "topologyKeys": ["topology.example.com/zone"], "allocatable": {"count": 10}},
            {"name": "b.example.com", "nodeID": "node-1"},
        ]  # fmt: skip
        nodes = [
            {"metadata": {"name": f"{t.namespace}-two"}, "spec": {"drivers": drivers}},
            {"metadata": {"name": f"{t.namespace}-none"}, "spec": {"drivers": []}},
        ]
        await _print_all(t, "csinodes", nodes)

    await conform(scenario)


# -- VolumeAttachment -----------------------------------------------------------------------------


async def test_volume_attachments_print_their_volume_node_and_state(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        inline = {
            "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
        }
        attachments = [
            {"metadata": {"name": f"{t.namespace}-attached"},
             "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                      "source": {"persistentVolumeName": "pv-1"}},
             "status": {"attached": True, "attachmentMetadata": {"device": "/dev/sdb"}}},
            {"metadata": {"name": f"{t.namespace}-pending"},
             "spec": {"attacher": "csi.example.com", "nodeName": "node-2",
                      "source": {"persistentVolumeName": "pv-2"}}},
            {"metadata": {"name": f"{t.namespace}-failed"},
             "spec": {"attacher": "csi.example.com", "nodeName": "node-3",
                      "source": {"persistentVolumeName": "pv-3"}},
             "status": {"attached": False, "attachError": {"message": "no such disk"}}},
            {"metadata": {"name": f"{t.namespace}-inline"},
             "spec": {"attacher": "csi.example.com", "nodeName": "node-4",
                      "source": {"inlineVolumeSpec": inline}}},
        ]  # fmt: skip
        await _print_all(t, "volumeattachments", attachments)

    await conform(scenario)


# -- CSIStorageCapacity ---------------------------------------------------------------------------


async def test_csi_storage_capacities_print_the_default_columns(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        topology = {"matchLabels": {"topology.example.com/zone": "a"}}
        capacities = [
            {"metadata": {"name": "sized"}, "storageClassName": "fast", "capacity": "100Gi",
             "maximumVolumeSize": "10Gi", "nodeTopology": topology},
            {"metadata": {"name": "unsized"}, "storageClassName": "slow"},
        ]  # fmt: skip
        await _print_all(t, "csistoragecapacities", capacities, namespaced=True)

    await conform(scenario)


# -- RuntimeClass ---------------------------------------------------------------------------------


async def test_runtime_classes_print_their_handler(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        classes = [
            {"metadata": {"name": f"{t.namespace}-gvisor"}, "handler": "runsc",
             "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
             "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                            "tolerations": [{"key": "sandbox", "operator": "Exists"}]}},
            {"metadata": {"name": f"{t.namespace}-runc"}, "handler": "runc"},
        ]  # fmt: skip
        await _print_all(t, "runtimeclasses", classes, group="node.k8s.io/v1")

    await conform(scenario)
