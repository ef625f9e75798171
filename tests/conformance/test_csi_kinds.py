"""Conformance: VolumeAttachments, CSINodes and CSIStorageCapacities (``storage.k8s.io/v1``),
valid and not, created, then updated in what may not change and in what may, and a
VolumeAttachment's status through its subresource.

The cluster-scoped objects outlive a scenario on the shared real API server: each is named for
its scenario and deleted at its end (unrecorded), those refused too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, STRATEGIC, Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
Change = Callable[[Body], None]
Step = tuple[str, Change]
"""A change of the object, PUT to the main resource (``""``) or to ``status``."""

_STORAGE = "storage.k8s.io/v1"
_ATTACHMENTS = f"/apis/{_STORAGE}/volumeattachments"
_NODES = f"/apis/{_STORAGE}/csinodes"


def _name(t: Target) -> str:
    return f"anyop-conf-{t.namespace}"


async def _lifecycle(t: Target, path: str, body: Body, steps: list[Step]) -> None:
    """Create; if made, PUT each change of the latest version made (to the main resource or to
    ``/status``); then delete it (unrecorded, without its finalizers)."""
    name = body["metadata"]["name"]
    current = await t.post(path, body)
    if current.get("kind") != "Status":
        for sub, change in steps:
            changed = copy.deepcopy(current)
            change(changed)
            answer = await t.put(f"{path}/{name}" + (f"/{sub}" if sub else ""), changed)
            if answer.get("kind") != "Status":
                current = answer
        if current["metadata"].get("finalizers"):
            unfinalized = {"metadata": {"finalizers": None}}
            await t.call("PATCH", f"{path}/{name}", unfinalized, ct=MERGE, record=lambda d: None)
    await t.call("DELETE", f"{path}/{name}", record=lambda d: None)


def _spec(obj: Body, **fields: Any) -> None:
    obj["spec"].update(fields)


def _labelled(obj: Body) -> None:
    obj["metadata"]["labels"] = {"changed": "yes"}


# -- VolumeAttachment ---------------------------------------------------------------------------

_PV = {"persistentVolumeName": "pv-1"}
_CSI = {"driver": "csi.example.com", "volumeHandle": "h"}
_INLINE = {"inlineVolumeSpec": {"accessModes": ["ReadWriteOnce"], "csi": _CSI}}
_SECRET = {"name": "s", "namespace": "ns"}
ATTACHMENTS: list[Body] = [
    {"attacher": "csi.example.com", "source": _PV, "nodeName": "node-1"},
    {"attacher": "CSI.Example.com", "source": _INLINE, "nodeName": "node.example.com"},
    {"attacher": "csi.example.com", "nodeName": "node-1",
     "source": {"inlineVolumeSpec": {"accessModes": ["ReadOnlyMany"], "volumeMode": "Filesystem",
                                     "persistentVolumeReclaimPolicy": "Retain",
                                     "mountOptions": ["ro"], "volumeAttributesClassName": "x",
                                     "csi": {**_CSI, "readOnly": True, "fsType": "ext4",
                                             "volumeAttributes": {"b": "2", "a": "1"},
                                             "nodePublishSecretRef": _SECRET}}}},
    {},
    {"attacher": "", "source": {}, "nodeName": ""},
    {"attacher": "Bad_Attacher", "source": _PV, "nodeName": "Node_1"},
    {"attacher": "a" * 64, "source": _PV, "nodeName": "n"},
    {"attacher": "a." * 130, "source": _PV, "nodeName": "n" * 254},
    {"attacher": "a", "source": {**_PV, **_INLINE}, "nodeName": "n"},
    {"attacher": "a", "source": {"persistentVolumeName": ""}, "nodeName": "n"},
    {"attacher": "a", "source": {"persistentVolumeName": "Bad_PV"}, "nodeName": "n"},
    {"attacher": "a", "source": {"inlineVolumeSpec": {}}, "nodeName": "n"},
    {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "X"], "capacity": {"storage": "1Gi"},
        "claimRef": {"name": "c"}, "persistentVolumeReclaimPolicy": "Recycle",
        "nodeAffinity": {"required": {"nodeSelectorTerms": []}}, "storageClassName": "fast",
        "volumeMode": "Block", "hostPath": {"path": "/"}}}},
    {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
        "csi": {"driver": "Bad_Driver"}, "nfs": {"server": "s", "path": "/p"}}}},
    {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOnce"], "local": {"path": ""}}}},
    {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOnce"], "csi": {
            **_CSI, "controllerPublishSecretRef": {}, "nodeStageSecretRef": {},
            "nodePublishSecretRef": {"name": "Bad_Name", "namespace": "a.b"},
            "controllerExpandSecretRef": {"name": "s", "namespace": "-ns"},
            "nodeExpandSecretRef": {"namespace": "ns"}}}}},
]  # fmt: skip


def _renoded(obj: Body) -> None:
    obj["spec"]["nodeName"] = "node-2"


def _reattached(obj: Body) -> None:
    obj["spec"]["attacher"] = "Other_Attacher"
    obj["spec"]["source"] = {"persistentVolumeName": "pv-2"}


def _with_status(obj: Body) -> None:  # ignored by the main resource
    obj["status"] = {"attached": True, "attachError": {"message": "m", "errorCode": -1}}
    _labelled(obj)


@pytest.mark.parametrize("spec", ATTACHMENTS)
async def test_a_volume_attachment_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": _name(t)}, "spec": spec}  # fmt: skip
        steps = [("", _renoded), ("", _reattached), ("", _with_status)]
        await _lifecycle(t, _ATTACHMENTS, body, steps)

    await conform(scenario)


async def test_a_volume_attachment_created_with_a_status_has_none(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": _name(t)},
                "spec": {"attacher": "a", "source": _PV, "nodeName": "n"},
                "status": {"attached": True, "attachmentMetadata": {"k": "v"},
                           "detachError": {"errorCode": -5}}}  # fmt: skip
        await _lifecycle(t, _ATTACHMENTS, body, [])

    await conform(scenario)


def _status(**fields: Any) -> Change:
    def change(obj: Body) -> None:
        obj["status"] = fields
        obj["spec"]["nodeName"] = "ignored"  # /status keeps the rest as it was
        obj["metadata"]["labels"] = {"ignored": "yes"}

    return change


_TIME = "2024-01-02T03:04:05Z"
STATUSES: list[Body] = [
    {"attached": True, "attachmentMetadata": {"devicePath": "/dev/sdb"}},
    {"attached": False, "attachError": {"time": _TIME, "message": "failed", "errorCode": 5},
     "detachError": {"message": "x", "errorCode": 0}},
    {"attachError": {"errorCode": -1}, "detachError": {"message": "m" * 1025, "errorCode": -2}},
    {"attachError": {"message": "é" * 513}},
    {"attachmentMetadata": {"k": "v" * (256 * 1024)}},
    {"attachmentMetadata": {"k": "v" * (256 * 1024 - 1)}},
]  # fmt: skip


@pytest.mark.parametrize("status", STATUSES)
async def test_a_volume_attachment_status_is_checked(conform: Conform, status: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": _name(t)},
                "spec": {"attacher": "a", "source": _PV, "nodeName": "n"}}  # fmt: skip
        steps = [("status", _status(**status)), ("", _renoded), ("", _labelled)]
        await _lifecycle(t, _ATTACHMENTS, body, steps)

    await conform(scenario)


def _badly_labelled(obj: Body) -> None:
    obj["metadata"]["labels"] = {"bad key!": "-bad-"}


def _badly_labelled_renoded(obj: Body) -> None:
    _badly_labelled(obj)
    _renoded(obj)


def _badly_finalized(obj: Body) -> None:
    obj["metadata"]["finalizers"] = ["keep", "example.com/keep"]


def _badly_finalized_renoded(obj: Body) -> None:
    _badly_finalized(obj)
    obj["metadata"]["annotations"] = {"-x": "y"}
    _renoded(obj)


def _misnamed_finalizer(obj: Body) -> None:
    obj["metadata"]["finalizers"] = ["example.com/a b"]


_META_CHANGES = [_badly_labelled, _badly_labelled_renoded, _badly_finalized,
                 _badly_finalized_renoded]  # fmt: skip


@pytest.mark.parametrize("change", [*_META_CHANGES, _misnamed_finalizer])
async def test_a_volume_attachment_update_checks_its_metadata(
    conform: Conform, change: Change
) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": _name(t)},
                "spec": {"attacher": "a", "source": _PV, "nodeName": "n"}}  # fmt: skip
        await _lifecycle(t, _ATTACHMENTS, body, [("", change)])

    await conform(scenario)


# -- CSINode ------------------------------------------------------------------------------------

_DRIVER = {"name": "csi.example.com", "nodeID": "node-1"}
CSI_NODES: list[Body] = [
    {"drivers": []},
    {"drivers": [{**_DRIVER, "topologyKeys": ["topology.example.com/zone"],
                  "allocatable": {"count": 10}},
                 {"name": "other.example.com", "nodeID": "n"}]},
    {"drivers": [{"name": "", "nodeID": ""}]},
    {"drivers": [{"name": "Bad_Driver", "nodeID": "x" * 257, "allocatable": {"count": -1}}]},
    {"drivers": [_DRIVER, {**_DRIVER, "nodeID": "other"}]},
    {"drivers": [{**_DRIVER, "topologyKeys": ["", "a/b/c", "zone", "zone", "-bad"]}]},
    {"drivers": [{"name": "d" * 64, "nodeID": "n", "allocatable": {}}]},
    {"drivers": [None, {"name": "b.example.com", "nodeID": "n"}]},  # null: Go's zero struct
]  # fmt: skip


def _recounted(obj: Body) -> None:
    for driver in obj["spec"]["drivers"] or ():
        driver["allocatable"] = {"count": 3}


def _reidentified(obj: Body) -> None:
    for driver in obj["spec"]["drivers"] or ():
        driver["nodeID"] = "changed"
        driver["topologyKeys"] = ["zone"]


def _driver_added(obj: Body) -> None:
    new = {"name": "new.example.com", "nodeID": "n"}
    obj["spec"]["drivers"] = [*(obj["spec"]["drivers"] or ()), new]
    _labelled(obj)


@pytest.mark.parametrize("spec", CSI_NODES)
async def test_a_csi_node_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "CSINode",
                "metadata": {"name": _name(t)}, "spec": spec}  # fmt: skip
        steps = [("", _recounted), ("", _reidentified), ("", _driver_added)]
        await _lifecycle(t, _NODES, body, steps)

    await conform(scenario)


@pytest.mark.parametrize("change", _META_CHANGES[::2])
async def test_a_csi_node_update_checks_its_metadata(conform: Conform, change: Change) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "CSINode",
                "metadata": {"name": _name(t)}, "spec": {"drivers": [_DRIVER]}}  # fmt: skip
        await _lifecycle(t, _NODES, body, [("", change)])

    await conform(scenario)


async def test_a_csi_node_name_is_a_subdomain(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "CSINode",
                "metadata": {"name": "Bad_Node"}, "spec": {"drivers": []}}  # fmt: skip
        await _lifecycle(t, _NODES, body, [])

    await conform(scenario)


# -- CSIStorageCapacity -------------------------------------------------------------------------

_ZONE = {"matchLabels": {"topology.example.com/zone": "a"}}
CAPACITIES: list[Body] = [
    {"storageClassName": "standard"},
    {"storageClassName": "standard", "capacity": "10Gi", "maximumVolumeSize": "1.5Gi",
     "nodeTopology": {"matchLabels": {"z": "a", "b": "c"},
                      "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]},
                                           {"key": "e", "operator": "Exists"}]}},
    {},
    {"storageClassName": "Bad_Class", "capacity": "-1", "maximumVolumeSize": "-5Gi"},
    {"storageClassName": "s", "capacity": "-0.5Ki"},
    {"storageClassName": "s", "nodeTopology": {
        "matchLabels": {"bad key!": "-v-"},
        "matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Is"},
                             {"key": "k", "operator": "Exists", "values": ["x"]}]}},
    {"storageClassName": "s", "nodeTopology": {}},
]  # fmt: skip


def _resized(obj: Body) -> None:
    obj["capacity"] = "20Gi"
    obj["maximumVolumeSize"] = "2Gi"
    _labelled(obj)


def _reclassed(obj: Body) -> None:
    obj["storageClassName"] = "other"
    obj["capacity"] = "-1Mi"


def _retopologised(obj: Body) -> None:
    obj["nodeTopology"] = {"matchExpressions": [{"key": "k", "operator": "NotIn",
                                                 "values": ["a", "b"]}]}  # fmt: skip


@pytest.mark.parametrize("fields", CAPACITIES)
async def test_a_csi_storage_capacity_is_checked(conform: Conform, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_STORAGE, "csistoragecapacities")
        body = {"apiVersion": _STORAGE, "kind": "CSIStorageCapacity",
                "metadata": {"name": "capacity"}, **fields}  # fmt: skip
        for change in (_resized, _reclassed, _retopologised):
            await _lifecycle(t, path, {**body, "metadata": {"name": change.__name__[1:]}},
                             [("", change)])  # fmt: skip

    await conform(scenario)


def _badly_labelled_resized(obj: Body) -> None:
    _badly_labelled(obj)
    obj["capacity"] = "1Gi"


def _badly_finalized_shrunk(obj: Body) -> None:
    _badly_finalized(obj)
    obj["capacity"] = "-1Gi"


_CAPACITY_META_CHANGES = [_badly_labelled, _badly_labelled_resized, _badly_finalized,
                          _badly_finalized_shrunk,
                          _reclassed]  # fmt: skip


@pytest.mark.parametrize("change", _CAPACITY_META_CHANGES)
async def test_a_csi_storage_capacity_update_checks_its_metadata(
    conform: Conform, change: Change
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_STORAGE, "csistoragecapacities")
        body = {
            "apiVersion": _STORAGE,
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "capacity"},
            "storageClassName": "s",
            "nodeTopology": _ZONE,
        }
        await _lifecycle(t, path, body, [("", change)])

    await conform(scenario)


# -- generation ---------------------------------------------------------------------------------


_GENERATION_BODIES = [
    ("volumeattachments", {"kind": "VolumeAttachment",
                           "spec": {"attacher": "a", "source": _PV, "nodeName": "n"}}),
    ("csinodes", {"kind": "CSINode", "spec": {"drivers": [_DRIVER]}}),
]  # fmt: skip


def _regenerated(obj: Body) -> None:
    obj["metadata"]["labels"] = {"changed": "yes"}
    obj["metadata"]["generation"] = 7


@pytest.mark.parametrize(("plural", "fields"), _GENERATION_BODIES)
async def test_no_generation_is_counted(conform: Conform, plural: str, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "metadata": {"name": _name(t)}, **fields}
        steps = [
            ("", _regenerated),
            ("", _renoded if plural == "volumeattachments" else _recounted),
        ]
        await _lifecycle(t, f"/apis/{_STORAGE}/{plural}", body, steps)

    await conform(scenario)


@pytest.mark.parametrize(("plural", "fields"), _GENERATION_BODIES)
async def test_a_client_generation_is_kept(conform: Conform, plural: str, fields: Body) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "metadata": {"name": _name(t), "generation": 3}, **fields}
        await _lifecycle(t, f"/apis/{_STORAGE}/{plural}", body, [])

    await conform(scenario)


# -- patches ------------------------------------------------------------------------------------


async def test_a_volume_attachment_status_is_patched(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment", "metadata": {"name": name},
                "spec": {"attacher": "a", "source": _PV, "nodeName": "n"}}  # fmt: skip
        await t.post(_ATTACHMENTS, body)
        path = f"{_ATTACHMENTS}/{name}"
        await t.patch(f"{path}/status", {"status": {"attached": True, "spec": "ignored"}})
        await t.patch(f"{path}/status", {"status": {"detachError": {"errorCode": -3}}})
        await t.patch(path, {"status": {"attached": False}, "metadata": {"labels": {"a": "b"}}})
        await t.patch(path, {"spec": {"nodeName": "other"}})
        await t.call("DELETE", path, record=lambda d: None)

    await conform(scenario)


async def test_a_csi_node_driver_is_patched_by_name(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        drivers = [_DRIVER, {"name": "b.example.com", "nodeID": "n"}]
        body = {"apiVersion": _STORAGE, "kind": "CSINode", "metadata": {"name": name},
                "spec": {"drivers": drivers}}  # fmt: skip
        await t.post(_NODES, body)
        path = f"{_NODES}/{name}"
        patch = {"spec": {"drivers": [{"name": "b.example.com", "allocatable": {"count": 2}}]}}
        await t.patch(path, patch, ct=STRATEGIC)
        patch = {"spec": {"drivers": [{"name": "b.example.com", "nodeID": "changed"}]}}
        await t.patch(path, patch, ct=STRATEGIC)
        await t.call("DELETE", path, record=lambda d: None)

    await conform(scenario)


async def test_a_volume_attachment_name_is_checked_with_the_rest(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": "Bad_Name", "labels": {"-x": "y"}},
                "spec": {"attacher": "Bad_A", "source": _PV, "nodeName": "n"}}  # fmt: skip
        await _lifecycle(t, _ATTACHMENTS, body, [])

    await conform(scenario)


# -- found by generated requests (the storage family) -------------------------------------------

_CAPACITY = {"storageClassName": "s", "nodeTopology": _ZONE}


def _kind_body(t: Target, plural: str) -> tuple[str, Body]:
    """A valid object of one of the kinds here, and its collection's path."""
    if plural == "csistoragecapacities":
        body = {"apiVersion": _STORAGE, "kind": "CSIStorageCapacity",
                "metadata": {"name": "capacity"}, **_CAPACITY}  # fmt: skip
        return t.apis(_STORAGE, plural), body
    kind, spec = {
        "volumeattachments": ("VolumeAttachment", {"attacher": "a", "source": _PV,
                                                   "nodeName": "n"}),
        "csinodes": ("CSINode", {"drivers": [_DRIVER]}),
    }[plural]  # fmt: skip
    body = {"apiVersion": _STORAGE, "kind": kind, "metadata": {"name": _name(t)}, "spec": spec}
    return f"/apis/{_STORAGE}/{plural}", body


_PLURALS = ["volumeattachments", "csinodes", "csistoragecapacities"]


@pytest.mark.parametrize("plural", _PLURALS)
async def test_a_deletion_answers_as_the_kinds_storage_does(conform: Conform, plural: str) -> None:
    """VolumeAttachments and CSINodes are answered with the deleted object
    (``ReturnDeletedObject``), CSIStorageCapacities with a ``Status``."""

    async def scenario(t: Target) -> None:
        path, body = _kind_body(t, plural)
        await t.post(path, body)
        await t.delete(f"{path}/{body['metadata']['name']}")
        await t.delete(f"{path}/{body['metadata']['name']}")

    await conform(scenario)


@pytest.mark.parametrize("plural", _PLURALS)
async def test_an_update_names_the_version_it_replaces(conform: Conform, plural: str) -> None:
    """Their strategies do not ``AllowUnconditionalUpdate``: a PUT without a resourceVersion
    is refused, one with it accepted."""

    async def scenario(t: Target) -> None:
        path, body = _kind_body(t, plural)
        made = await t.post(path, body)
        name = body["metadata"]["name"]
        await t.put(f"{path}/{name}", {**body, "metadata": {**body["metadata"],
                                                            "labels": {"a": "b"}}})  # fmt: skip
        await t.put(f"{path}/{name}", {**made, "metadata": {**made["metadata"],
                                                            "labels": {"a": "b"}}})  # fmt: skip
        await t.call("DELETE", f"{path}/{name}", record=lambda d: None)

    await conform(scenario)


def _keys_emptied(obj: Body) -> None:
    obj["spec"]["drivers"][0]["topologyKeys"] = []


def _keys_emptied_renoded(obj: Body) -> None:
    obj["spec"]["drivers"][0]["topologyKeys"] = []
    obj["spec"]["drivers"][0]["nodeID"] = "changed"


async def test_a_csi_node_driver_is_compared_as_go_compares_it(conform: Conform) -> None:
    """No topology keys, nil or empty, are the same (``Semantic.DeepEqual``); a changed driver
    is shown as sent, its empty keys ``[]``."""

    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "CSINode", "metadata": {"name": _name(t)},
                "spec": {"drivers": [_DRIVER]}}  # fmt: skip
        await _lifecycle(t, _NODES, body, [("", _keys_emptied), ("", _keys_emptied_renoded)])

    await conform(scenario)


async def test_a_strategic_merge_patch_takes_a_list_the_object_lacks_as_it_is(
    conform: Conform,
) -> None:
    """Where the stored object has no list (nil, ``null``), Go's ``mergeMap`` takes the
    patch's without merging it: its duplicate merge keys stay (and are refused), its items
    with a ``$patch`` directive go."""

    async def scenario(t: Target) -> None:
        name = _name(t)
        body = {"apiVersion": _STORAGE, "kind": "CSINode", "metadata": {"name": name},
                "spec": {"drivers": []}}  # fmt: skip
        await t.post(_NODES, body)
        twice = [{"name": "b.example.com", "nodeID": "n"},
                 {"name": "b.example.com", "nodeID": "m", "topologyKeys": ["zone"]},
                 {"name": "c.example.com", "$patch": "delete"}]  # fmt: skip
        await t.patch(f"{_NODES}/{name}", {"spec": {"drivers": twice}}, ct=STRATEGIC)
        once = [{"name": "b.example.com", "nodeID": "n"},
                {"name": "c.example.com", "$patch": "delete"}]  # fmt: skip
        await t.patch(f"{_NODES}/{name}", {"spec": {"drivers": once}}, ct=STRATEGIC)
        await t.call("DELETE", f"{_NODES}/{name}", record=lambda d: None)

    await conform(scenario)


def _inline_as_sent(obj: Body) -> None:
    """An inline spec with empty lists and maps, and a claim reference: refused, and the
    changed spec shown as Go decoded it."""
    csi = {**_CSI, "volumeAttributes": {}}
    obj["spec"]["source"] = {
        "inlineVolumeSpec": {
            "accessModes": [],
            "mountOptions": [],
            "capacity": {},
            "csi": csi,
            "claimRef": {"name": "c", "apiVersion": "v1", "kind": "PersistentVolumeClaim"},
        }
    }


async def test_a_volume_attachment_spec_change_is_shown_as_sent(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                "metadata": {"name": _name(t)},
                "spec": {"attacher": "a", "source": _PV, "nodeName": "n"}}  # fmt: skip
        await _lifecycle(t, _ATTACHMENTS, body, [("", _inline_as_sent)])

    await conform(scenario)
