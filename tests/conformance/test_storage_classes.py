"""Conformance: StorageClasses, VolumeAttributesClasses and CSIDrivers (``storage.k8s.io/v1``)
and RuntimeClasses (``node.k8s.io/v1``): defaults, each check alone and several at once (their
order), updates of what may not change and of what may, metadata checks, generation.

Their objects are cluster-scoped and outlive a scenario on the shared real API server: each is
named for its scenario and deleted at its end (unrecorded), those refused too. The strategies'
warnings are not compared (the harness records no headers).
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

_SC = "/apis/storage.k8s.io/v1/storageclasses"
_VAC = "/apis/storage.k8s.io/v1/volumeattributesclasses"
_CSI = "/apis/storage.k8s.io/v1/csidrivers"
_RC = "/apis/node.k8s.io/v1/runtimeclasses"
_KINDS = {
    _SC: ("storage.k8s.io/v1", "StorageClass"),
    _VAC: ("storage.k8s.io/v1", "VolumeAttributesClass"),
    _CSI: ("storage.k8s.io/v1", "CSIDriver"),
    _RC: ("node.k8s.io/v1", "RuntimeClass"),
}


def _name(t: Target) -> str:
    return f"anyop-conf-{t.namespace}"


def _body(t: Target, path: str, fields: Body, metadata: Body | None = None) -> Body:
    api_version, kind = _KINDS[path]
    meta = {"name": _name(t), **(metadata or {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **copy.deepcopy(fields)}


async def _lifecycle(t: Target, path: str, body: Body, changes: list[Change]) -> None:
    """Create; if made, PUT each change of what was made (against its first version, unless
    a change was accepted: then against what it made); then delete it, unrecorded."""
    name = body["metadata"]["name"]
    made = await t.post(path, body)
    if made.get("kind") != "Status":
        for change in changes:
            changed = copy.deepcopy(made)
            change(changed)
            answer = await t.put(f"{path}/{name}", changed)
            if answer.get("kind") != "Status":
                made = answer
        if made["metadata"].get("finalizers"):  # a VolumeAttributesClass's protection
            unfinalized = {"metadata": {"finalizers": None}}
            await t.call("PATCH", f"{path}/{name}", unfinalized, ct=MERGE, record=lambda d: None)
    await t.call("DELETE", f"{path}/{name}", record=lambda d: None)


def _set(**fields: Any) -> Change:
    """A change that sets top-level fields (``None`` removes one)."""

    def change(obj: Body) -> None:
        for key, value in fields.items():
            if value is None:
                obj.pop(key, None)
            else:
                obj[key] = copy.deepcopy(value)

    return change


def _set_spec(**fields: Any) -> Change:
    """A change that sets fields of the spec (``None`` removes one)."""

    def change(obj: Body) -> None:
        for key, value in fields.items():
            if value is None:
                obj["spec"].pop(key, None)
            else:
                obj["spec"][key] = copy.deepcopy(value)

    return change


def _labelled(obj: Body) -> None:
    obj["metadata"]["labels"] = {"changed": "yes"}


def _bad_label(obj: Body) -> None:
    obj["metadata"]["labels"] = {"bad key!": "v"}


# -- StorageClass -------------------------------------------------------------------------------

_PROV = "example.com/disk"
STORAGE_CLASSES: list[Body] = [
    {"provisioner": _PROV},
    {"provisioner": _PROV, "parameters": {"type": "ssd", "zone": "a"},
     "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
     "allowVolumeExpansion": True, "mountOptions": ["ro", "soft"],
     "allowedTopologies": [{"matchLabelExpressions": [
         {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]},
    {},
    {"provisioner": ""},
    {"provisioner": "Example.COM/Disk"},
    {"provisioner": "bad provisioner!"},
    {"provisioner": "a/b/c"},
    {"provisioner": _PROV, "reclaimPolicy": "Recycle"},
    {"provisioner": _PROV, "reclaimPolicy": ""},
    {"provisioner": _PROV, "volumeBindingMode": "Later"},
    {"provisioner": _PROV, "volumeBindingMode": ""},
    {"provisioner": _PROV, "parameters": {"": "empty key"}},
    {"provisioner": _PROV, "parameters": {"big": "x" * (256 * 1024)}},
    {"provisioner": _PROV, "parameters": {f"k{i}": "v" for i in range(513)}},
    {"provisioner": _PROV, "allowedTopologies": [{}]},
    {"provisioner": _PROV, "allowedTopologies": [{}, {"matchLabelExpressions": []}]},
    {"provisioner": _PROV, "allowedTopologies": [
        {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
        {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]},
    {"provisioner": _PROV, "allowedTopologies": [{"matchLabelExpressions": [
        {"key": "bad key", "values": []},
        {"key": "bad key", "values": ["x", "y", "x"]}]}]},
    {"provisioner": "Bad_One!", "reclaimPolicy": "Keep", "volumeBindingMode": "Soon",
     "parameters": {"": ""}, "allowedTopologies": [{"matchLabelExpressions": [{"key": "k"}]}]},
]  # fmt: skip


@pytest.mark.parametrize("fields", STORAGE_CLASSES)
async def test_a_storage_class_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _SC, _body(t, _SC, fields), [_labelled])

    await conform(scenario)


STORAGE_CLASS_UPDATES: list[list[Change]] = [
    [_set(provisioner="example.com/other")],
    [_set(parameters={"type": "hdd"})],
    [_set(parameters=None)],
    [_set(reclaimPolicy="Retain")],
    [_set(reclaimPolicy=None)],
    [_set(volumeBindingMode="WaitForFirstConsumer")],
    [_set(volumeBindingMode=None)],
    [_set(provisioner="Other!", parameters={"a": "b"}, reclaimPolicy="Retain",
          volumeBindingMode="WaitForFirstConsumer")],
    [_set(allowVolumeExpansion=True, mountOptions=["ro"]),
     _set(allowedTopologies=[{"matchLabelExpressions": [{"key": "z", "values": ["1"]}]}])],
    [_set(allowedTopologies=[{}], reclaimPolicy="Keep")],
    [_bad_label],
    [_bad_label, _set(provisioner="example.com/other")],
    [_bad_label, _set(reclaimPolicy="Keep")],
    [_set(parameters={})],  # shown as sent, {} (Go decodes an empty map, not nil)
]  # fmt: skip


@pytest.mark.parametrize("changes", STORAGE_CLASS_UPDATES)
async def test_a_storage_class_update_is_checked(conform: Conform, changes: list[Change]) -> None:
    async def scenario(t: Target) -> None:
        fields = {"provisioner": _PROV, "parameters": {"type": "ssd"}}
        await _lifecycle(t, _SC, _body(t, _SC, fields), changes)

    await conform(scenario)


async def test_a_storage_class_keeps_the_generation_it_was_created_with(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _body(t, _SC, {"provisioner": _PROV}, {"generation": 7})
        await _lifecycle(t, _SC, body, [_set(allowVolumeExpansion=True)])

    await conform(scenario)


async def test_a_storage_class_may_take_a_kubernetes_finalizer_name_only(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _body(t, _SC, {"provisioner": ""}, {"finalizers": ["custom"]})
        await _lifecycle(t, _SC, body, [])

    await conform(scenario)


# -- VolumeAttributesClass ----------------------------------------------------------------------

ATTRIBUTES_CLASSES: list[Body] = [
    {"driverName": _PROV, "parameters": {"iops": "1000"}},
    {"driverName": _PROV},
    {"driverName": _PROV, "parameters": {}},
    {},
    {"driverName": "Bad Driver", "parameters": {"": "x"}},
    {"driverName": "UPPER.example.com/x", "parameters": {"a": "b"}},
    {"driverName": _PROV, "parameters": {"big": "x" * (256 * 1024)}},
]


@pytest.mark.parametrize("fields", ATTRIBUTES_CLASSES)
async def test_a_volume_attributes_class_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _VAC, _body(t, _VAC, fields), [_labelled])

    await conform(scenario)


ATTRIBUTES_UPDATES: list[list[Change]] = [
    [_set(driverName="example.com/other")],
    [_set(parameters={"iops": "2000"})],
    [_set(parameters=None)],
    [_set(driverName="", parameters={"": "x"})],
    [_bad_label],
    [_bad_label, _set(driverName="example.com/other")],
    [_bad_label, _set(driverName="")],
]


@pytest.mark.parametrize("changes", ATTRIBUTES_UPDATES)
async def test_a_volume_attributes_class_update_is_checked(
    conform: Conform, changes: list[Change]
) -> None:
    async def scenario(t: Target) -> None:
        fields = {"driverName": _PROV, "parameters": {"iops": "1000"}}
        await _lifecycle(t, _VAC, _body(t, _VAC, fields), changes)

    await conform(scenario)


async def test_a_volume_attributes_class_is_protected_once(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        fields = {"driverName": _PROV, "parameters": {"iops": "1000"}}
        metadata = {"finalizers": ["example.com/keep", "kubernetes.io/vac-protection"]}

        def unprotected(obj: Body) -> None:
            obj["metadata"]["finalizers"] = ["example.com/keep"]

        await _lifecycle(t, _VAC, _body(t, _VAC, fields, metadata), [unprotected, _labelled])

    await conform(scenario)


# -- CSIDriver ----------------------------------------------------------------------------------

CSI_DRIVERS: list[Body] = [
    {"spec": {}},
    {},
    {"spec": {"attachRequired": False, "podInfoOnMount": True, "storageCapacity": True,
              "fsGroupPolicy": "File", "volumeLifecycleModes": ["Ephemeral", "Persistent"],
              "requiresRepublish": True, "seLinuxMount": True,
              "nodeAllocatableUpdatePeriodSeconds": 60,
              "tokenRequests": [{"audience": "a", "expirationSeconds": 3600}, {"audience": ""}],
              "serviceAccountTokenInSecrets": True}},
    {"spec": {"volumeLifecycleModes": []}},
    {"spec": {"fsGroupPolicy": "Sometimes"}},
    {"spec": {"volumeLifecycleModes": ["Persistent", "Forever", "Never"]}},
    {"spec": {"nodeAllocatableUpdatePeriodSeconds": 9}},
    {"spec": {"serviceAccountTokenInSecrets": False}},
    {"spec": {"preventPodSchedulingIfMissing": True}},
    {"spec": {"tokenRequests": [{"audience": "a", "expirationSeconds": 599},
                                {"audience": "a", "expirationSeconds": 1},
                                {"audience": "b", "expirationSeconds": 4294967297}]}},
    {"spec": {"fsGroupPolicy": "x", "volumeLifecycleModes": ["y"],
              "nodeAllocatableUpdatePeriodSeconds": -1, "serviceAccountTokenInSecrets": True,
              "tokenRequests": []}},
]  # fmt: skip


@pytest.mark.parametrize("fields", CSI_DRIVERS)
async def test_a_csi_driver_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _CSI, _body(t, _CSI, fields), [_labelled])

    await conform(scenario)


CSI_UPDATES: list[list[Change]] = [
    [_set_spec(attachRequired=False)],
    [_set_spec(volumeLifecycleModes=["Ephemeral"])],
    [_set_spec(volumeLifecycleModes=None)],
    [_set_spec(podInfoOnMount=None, storageCapacity=None, seLinuxMount=None)],
    [_set_spec(fsGroupPolicy="Bad", attachRequired=False, volumeLifecycleModes=["Odd"])],
    [_bad_label],
    [_bad_label, _set_spec(attachRequired=False)],
    [_bad_label, _set_spec(attachRequired=False, fsGroupPolicy="Bad")],
]


@pytest.mark.parametrize("changes", CSI_UPDATES)
async def test_a_csi_driver_update_is_checked(conform: Conform, changes: list[Change]) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _CSI, _body(t, _CSI, {"spec": {}}), changes)

    await conform(scenario)


async def test_a_csi_driver_counts_generations_of_its_spec(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _body(t, _CSI, {"spec": {}})
        changes = [_labelled, _set_spec(podInfoOnMount=True),
                   _set_spec(storageCapacity=True, requiresRepublish=True),
                   _set_spec(fsGroupPolicy="None", seLinuxMount=True)]  # fmt: skip
        await _lifecycle(t, _CSI, body, changes)

    await conform(scenario)


async def test_a_csi_driver_update_needs_a_resource_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        await t.post(_CSI, _body(t, _CSI, {"spec": {}}))
        await t.put(f"{_CSI}/{name}", _body(t, _CSI, {"spec": {"podInfoOnMount": True}}))
        await t.put(f"{_CSI}/other-{name}", {**_body(t, _CSI, {}), "metadata": {
            "name": f"other-{name}"}})  # fmt: skip
        await t.call("DELETE", f"{_CSI}/{name}", record=lambda d: None)

    await conform(scenario)


# -- RuntimeClass -------------------------------------------------------------------------------

RUNTIME_CLASSES: list[Body] = [
    {"handler": "runc"},
    {"handler": "kata", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
     "scheduling": {"nodeSelector": {"runtime": "kata"},
                    "tolerations": [{"key": "kata", "operator": "Exists",
                                     "effect": "NoSchedule"}]}},
    {},
    {"handler": ""},
    {"handler": "Not_A_Label"},
    {"handler": "a" * 64},
    {"handler": "h", "overhead": {"podFixed": {"cpu": "-1"}}},
    {"handler": "h", "overhead": {"podFixed": {"pods": "1"}}},
    {"handler": "h", "overhead": {"podFixed": {"example.com/gpu": "500m"}}},
    {"handler": "h", "overhead": {"podFixed": {"hugepages-2Mi": "3Mi"}}},
    {"handler": "h", "overhead": {"podFixed": {"bad name!": "1"}}},
    {"handler": "h", "overhead": {}},
    {"handler": "h", "scheduling": {"nodeSelector": {"bad key!": "v"}}},
    {"handler": "h", "scheduling": {"nodeSelector": {}}},
    {"handler": "h", "scheduling": {"tolerations": [
        {"operator": "Equal", "value": "v"},
        {"key": "k", "operator": "Exists", "value": "v"},
        {"key": "k", "effect": "Whenever"},
        {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"}]}},
    {"handler": "h", "scheduling": {"tolerations": [
        {"key": "k", "value": "v", "effect": "NoSchedule"},
        {"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 1},
        {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]}},
    {"handler": "Bad!", "overhead": {"podFixed": {"memory": "-1Mi"}},
     "scheduling": {"nodeSelector": {"a": "bad value!"}, "tolerations": [{"key": "-"}]}},
    {"handler": "h", "scheduling": {"tolerations": [None, {"key": "k", "operator": "Exists"}]}},
]  # fmt: skip


@pytest.mark.parametrize("fields", RUNTIME_CLASSES)
async def test_a_runtime_class_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _RC, _body(t, _RC, fields), [_labelled])

    await conform(scenario)


RUNTIME_UPDATES: list[list[Change]] = [
    [_set(handler="other")],
    [_set(handler="Bad!")],
    [_set(overhead={"podFixed": {"cpu": "1"}}), _set(scheduling={"nodeSelector": {"a": "b"}})],
    [_set(scheduling={"tolerations": [{"key": "-"}]}, handler="x")],
    [_bad_label],
    [_bad_label, _set(handler="x")],
    [_bad_label, _set(handler="Bad!")],
]


@pytest.mark.parametrize("changes", RUNTIME_UPDATES)
async def test_a_runtime_class_update_is_checked(conform: Conform, changes: list[Change]) -> None:
    async def scenario(t: Target) -> None:
        await _lifecycle(t, _RC, _body(t, _RC, {"handler": "runc"}), changes)

    await conform(scenario)


async def test_a_runtime_class_is_created_by_a_put(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        await t.put(f"{_RC}/{name}", _body(t, _RC, {"handler": "runc"}))
        await t.put(f"{_RC}/{name}", _body(t, _RC, {"handler": "runc", "overhead": {}}))
        await t.call("DELETE", f"{_RC}/{name}", record=lambda d: None)

    await conform(scenario)


# -- deletion -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [_SC, _VAC, _CSI, _RC])
async def test_a_deletion_answers_as_the_kinds_storage_does(conform: Conform, path: str) -> None:
    """The storage of StorageClasses, VolumeAttributesClasses and CSIDrivers answers a DELETE
    with the deleted object (``ReturnDeletedObject``), that of RuntimeClasses with a
    ``Status``."""

    async def scenario(t: Target) -> None:
        fields = {
            _SC: {"provisioner": _PROV},
            _VAC: {"driverName": _PROV, "parameters": {"iops": "1000"}},
            _CSI: {"spec": {}},
            _RC: {"handler": "runc"},
        }[path]
        name = _name(t)
        await t.post(path, _body(t, path, fields))
        unfinalized = {"metadata": {"finalizers": None}}  # a VolumeAttributesClass's protection
        await t.call("PATCH", f"{path}/{name}", unfinalized, ct=MERGE, record=lambda d: None)
        await t.delete(f"{path}/{name}")
        await t.delete(f"{path}/{name}")

    await conform(scenario)


# -- discovery ----------------------------------------------------------------------------------


async def test_the_groups_are_discovered(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for group in ("storage.k8s.io/v1", "node.k8s.io/v1"):
            listed = await t.call("GET", f"/apis/{group}", record=lambda d: None)
            t.note(group, sorted(
                (r["name"], tuple(r.get("shortNames") or ()), tuple(r.get("categories") or ()))
                for r in listed.get("resources", [])))  # fmt: skip

    await conform(scenario)
