"""Generated requests on the kinds of ``storage.k8s.io/v1`` and ``node.k8s.io/v1``: a
StorageClass (``sc1``), a VolumeAttributesClass (``vac1``), a CSIDriver (``csd1``), a CSINode
(``csn1``), a VolumeAttachment (``va1``, and writes of its ``/status``), a namespaced
CSIStorageCapacity (``cap1``) and a RuntimeClass (``rc1``); valid and invalid values alike of
the fields their validation checks (see :mod:`tests.conformance.generated_requests` for how a
sequence is built and played).

All but the capacity are cluster-scoped and outlive a sequence on the shared real API server:
each is named for its sequence (:func:`object_name`: the scenario's namespace, which the records
show as ``<ns>``, then the step's name), its lists show only the sequence's own objects and ask
for no pages (another test's objects would fill them), and :func:`cluster_scoped` tells what a
sequence leaves behind, which the test deletes at its end, finalizers first, unrecorded.
"""

from __future__ import annotations

import random
import re
from typing import Any

from tests.conformance.generated_requests import Maker, Step, _metadata, _value, objects_plan

__all__ = ["STORAGE_COLLECTIONS", "cluster_scoped", "object_name", "scoped_options",
           "storage_plan"]  # fmt: skip

Choices = tuple[tuple[Any, ...], tuple[Any, ...]]

_STORAGE = "storage.k8s.io/v1"
_PROVISIONERS: Choices = (
    ("example.com/disk", "kubernetes.io/no-provisioner", "Example.COM/Disk"),
    ("", "bad provisioner!", "a/b/c", "-x"),
)
_STRING_MAPS: Choices = (({"type": "ssd"}, {"zone": "a", "iops": "100"}, {}),
                         ({"": "empty key"}, {"type": 1}, {"a b": None}))  # fmt: skip
_TOPOLOGY_TERMS: Choices = (
    ({"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]},
     {"matchLabelExpressions": [{"key": "zone", "values": ["a"]},
                                {"key": "rack", "values": ["1"]}]}),
    ({}, {"matchLabelExpressions": [{"key": "bad key", "values": []}]},
     {"matchLabelExpressions": [{"key": "zone", "values": ["x", "x"]},
                                {"key": "zone", "values": ["y"]}]}),
)  # fmt: skip


def _storage_class(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": _STORAGE, "kind": "StorageClass",
                            "metadata": _metadata(rng, "sc1", bad=bad)}  # fmt: skip
    if rng.random() > bad / 4:
        body["provisioner"] = _value(rng, _PROVISIONERS, bad)
    for field, choices, chance in (
        ("parameters", _STRING_MAPS, 0.5),
        ("reclaimPolicy", (("Delete", "Retain"), ("Recycle", "")), 0.4),
        ("volumeBindingMode", (("Immediate", "WaitForFirstConsumer"), ("Later", "")), 0.4),
        ("allowVolumeExpansion", ((True, False), ("yes",)), 0.3),
        ("mountOptions", ((["ro"], ["ro", "soft"], []), ([1], "ro")), 0.2),
    ):
        if rng.random() < chance:
            body[field] = _value(rng, choices, bad)
    if rng.random() < 0.3:
        body["allowedTopologies"] = [_value(rng, _TOPOLOGY_TERMS, bad)
                                     for _ in range(rng.randint(1, 2))]  # fmt: skip
    return body


def _attributes_class(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": _STORAGE, "kind": "VolumeAttributesClass",
                            "metadata": _metadata(rng, "vac1", bad=bad)}  # fmt: skip
    if rng.random() > bad / 4:
        body["driverName"] = _value(rng, _PROVISIONERS, bad)
    if rng.random() > bad / 4:
        choices = (({"iops": "1000"}, {"iops": "1000", "throughput": "50"}),
                   ({}, {"": "x"}, {"iops": 1000}))  # fmt: skip
        body["parameters"] = _value(rng, choices, bad)
    return body


def _token_requests(rng: random.Random, *, bad: float) -> list[Any]:
    requests: list[Any] = []
    for audience in rng.sample(["a", "b", ""], k=rng.randint(1, 2)):
        request: dict[str, Any] = {"audience": audience}
        if rng.random() < 0.5:
            request["expirationSeconds"] = _value(rng, ((600, 3600), (60, 1 << 33)), bad)
        requests.append(request)
    if rng.random() < bad / 2:
        requests.append(dict(requests[0]))
    return requests


def _csi_driver(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for field in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish",
                  "seLinuxMount"):  # fmt: skip
        if rng.random() < 0.3:
            spec[field] = _value(rng, ((True, False), ("yes",)), bad)
    for field, choices in (
        ("fsGroupPolicy", (("File", "None", "ReadWriteOnceWithFSType"), ("Sometimes", ""))),
        ("volumeLifecycleModes", ((["Persistent"], ["Ephemeral"], ["Persistent", "Ephemeral"]),
                                  (["Forever"], ["Ephemeral", "Ephemeral"], []))),
        ("nodeAllocatableUpdatePeriodSeconds", ((10, 60), (5, 0))),
    ):  # fmt: skip
        if rng.random() < 0.3:
            spec[field] = _value(rng, choices, bad)
    if rng.random() < 0.3:
        spec["tokenRequests"] = _token_requests(rng, bad=bad)
    if rng.random() < 0.15:
        spec["serviceAccountTokenInSecrets"] = _value(rng, ((True, False), ("no",)), bad)
    body: dict[str, Any] = {"apiVersion": _STORAGE, "kind": "CSIDriver",
                            "metadata": _metadata(rng, "csd1", bad=bad)}  # fmt: skip
    if spec or rng.random() < 0.5:
        body["spec"] = spec
    return body


def _csi_node_driver(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    driver: dict[str, Any] = {"name": name, "nodeID": _value(rng, (("node-1", "n"), ("",)), bad)}
    if rng.random() < 0.5:
        keys = ((["topology.kubernetes.io/zone"], [], ["zone", "rack"]),
                (["bad key"], ["zone", "zone"], [""]))  # fmt: skip
        driver["topologyKeys"] = _value(rng, keys, bad)
    if rng.random() < 0.4:
        driver["allocatable"] = {"count": _value(rng, ((0, 2, 16), (-1,)), bad)}
    return driver


def _csi_node(rng: random.Random, *, bad: float) -> dict[str, Any]:
    names = (("csi.example.com", "b.example.com"), ("Bad_Driver", "", "a" * 64))
    drivers = [_csi_node_driver(rng, _value(rng, names, bad), bad=bad)
               for _ in range(rng.randint(0, 2))]  # fmt: skip
    return {"apiVersion": _STORAGE, "kind": "CSINode",
            "metadata": _metadata(rng, "csn1", bad=bad), "spec": {"drivers": drivers}}  # fmt: skip


def _attachment_source(rng: random.Random, *, bad: float) -> dict[str, Any]:
    volume = _value(rng, (("pv-1", "pv-2"), ("", "Bad_PV")), bad)
    csi: dict[str, Any] = {"driver": _value(rng, (("csi.example.com",), ("Bad_Driver",)), bad),
                           "volumeHandle": "h"}  # fmt: skip
    if rng.random() < 0.3:
        csi["volumeAttributes"] = {"b": "2", "a": "1"}
    if rng.random() < 0.2:
        csi["nodePublishSecretRef"] = _value(
            rng, (({"name": "s", "namespace": "ns"},), ({"name": "Bad_Name"},)), bad
        )
    inline: dict[str, Any] = {
        "accessModes": _value(rng, ((["ReadWriteOnce"], ["ReadOnlyMany"]), ([], ["X"])), bad),
        "csi": csi,
    }  # fmt: skip
    if rng.random() < bad:
        extra = rng.choice([("persistentVolumeReclaimPolicy", "Delete"), ("storageClassName", "s"),
                            ("capacity", {"storage": "1Gi"}), ("volumeMode", "Block"),
                            ("claimRef", {"name": "c"})])  # fmt: skip
        inline[extra[0]] = extra[1]
    kind = rng.choice(["volume", "volume", "inline", "both" if rng.random() < bad else "none"])
    if kind == "volume":
        return {"persistentVolumeName": volume}
    if kind == "inline":
        return {"inlineVolumeSpec": inline}
    return {"persistentVolumeName": volume, "inlineVolumeSpec": inline} if kind == "both" else {}


def _attachment_status(rng: random.Random, *, bad: float) -> dict[str, Any]:
    status: dict[str, Any] = {"attached": _value(rng, ((True, False), ("yes",)), bad)}
    if rng.random() < 0.4:
        status["attachmentMetadata"] = _value(
            rng, (({"devicePath": "/dev/sdb"}, {}), ({"k": 1},)), bad
        )
    for field in ("attachError", "detachError"):
        if rng.random() < 0.3:
            error = (({"message": "failed", "errorCode": 5}, {"time": "2026-01-02T03:04:05Z"}),
                     ({"errorCode": -1}, {"message": "m" * 1025}))  # fmt: skip
            status[field] = _value(rng, error, bad)
    return status


def _volume_attachment(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "attacher": _value(rng, (("csi.example.com", "CSI.Example.com"),
                                 ("", "Bad_Attacher", "a" * 64)), bad),
        "source": _attachment_source(rng, bad=bad),
        "nodeName": _value(rng, (("node-1", "node.example.com"), ("", "Node_1")), bad),
    }  # fmt: skip
    body: dict[str, Any] = {"apiVersion": _STORAGE, "kind": "VolumeAttachment",
                            "metadata": _metadata(rng, "va1", bad=bad), "spec": spec}  # fmt: skip
    if rng.random() < 0.15:
        body["status"] = _attachment_status(rng, bad=bad)
    return body


def _capacity(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": _STORAGE, "kind": "CSIStorageCapacity",
                            "metadata": _metadata(rng, "cap1", bad=bad)}  # fmt: skip
    if rng.random() > bad / 4:
        body["storageClassName"] = _value(rng, (("standard", "fast"), ("", "Bad_Class")), bad)
    if rng.random() < 0.8:
        topologies = (({"matchLabels": {"topology.example.com/zone": "a"}},
                       {"matchExpressions": [{"key": "zone", "operator": "In",
                                              "values": ["a"]}]}, {}),
                      ({"matchLabels": {"-a": "b"}},
                       {"matchExpressions": [{"key": "zone", "operator": "In"}]}))  # fmt: skip
        body["nodeTopology"] = _value(rng, topologies, bad)
    for field in ("capacity", "maximumVolumeSize"):
        if rng.random() < 0.5:
            body[field] = _value(rng, (("1Gi", "100Mi", "0", "1.5Gi"), ("-1Gi", "lots")), bad)
    return body


def _runtime_class(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                            "metadata": _metadata(rng, "rc1", bad=bad)}  # fmt: skip
    if rng.random() > bad / 4:
        body["handler"] = _value(rng, (("runc", "kata"), ("", "Bad_Handler", "a.b")), bad)
    if rng.random() < 0.3:
        fixed = (({"cpu": "250m", "memory": "120Mi"}, {"cpu": "1"}, {}),
                 ({"cpu": "-1"}, {"foo": "1"}, {"hugepages-2Mi": "2Mi"},
                  {"example.com/gpu": "1.5"}))  # fmt: skip
        body["overhead"] = {"podFixed": _value(rng, fixed, bad)}
    if rng.random() < 0.3:
        scheduling: dict[str, Any] = {}
        if rng.random() < 0.6:
            scheduling["nodeSelector"] = _value(rng, (({"zone": "a"},), ({"bad key": "v"},)), bad)
        if rng.random() < 0.6:
            toleration = (({"key": "k", "operator": "Exists"},
                           {"key": "k", "operator": "Equal", "value": "v",
                            "effect": "NoSchedule"}),
                          ({"operator": "Maybe"}, {"key": "k", "operator": "Exists",
                                                   "value": "v"}))  # fmt: skip
            first = _value(rng, toleration, bad)
            scheduling["tolerations"] = [first] + ([first] if rng.random() < bad / 2 else [])
        body["scheduling"] = scheduling
    return body


_STORAGE_KINDS: dict[str, Maker] = {
    "sc1": _storage_class, "vac1": _attributes_class, "csd1": _csi_driver, "csn1": _csi_node,
    "va1": _volume_attachment, "cap1": _capacity, "rc1": _runtime_class,
}  # fmt: skip

STORAGE_COLLECTIONS: dict[str, tuple[str, str, bool]] = {
    "sc1": (_STORAGE, "storageclasses", False),
    "vac1": (_STORAGE, "volumeattributesclasses", False),
    "csd1": (_STORAGE, "csidrivers", False),
    "csn1": (_STORAGE, "csinodes", False),
    "va1": (_STORAGE, "volumeattachments", False),
    "cap1": (_STORAGE, "csistoragecapacities", True),
    "rc1": ("node.k8s.io/v1", "runtimeclasses", False),
}
"""Where each object of the family lives (group version, plural, namespaced), by its name."""


def cluster_scoped(name: str) -> bool:
    """Whether the step's object is one of the family's cluster-scoped ones."""
    return name in STORAGE_COLLECTIONS and not STORAGE_COLLECTIONS[name][2]


def object_name(namespace: str, name: str) -> str:
    """The name of a step's object on the servers: a cluster-scoped one's is its sequence's."""
    return f"{namespace}-{name}" if cluster_scoped(name) else name


def scoped_options(namespace: str, options: dict[str, str]) -> dict[str, str]:
    """A list's options with the names its field selector compares renamed as the objects
    are (:func:`object_name`)."""
    selector = options.get("fieldSelector")
    found = re.fullmatch(r"(metadata\.name!?=)(.*)", selector or "")
    if not found:
        return options
    return {**options, "fieldSelector": found[1] + object_name(namespace, found[2])}


def storage_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on two of the family's objects (see :func:`objects_plan`), with merge patches of
    a VolumeAttachment's ``/status`` after some of its steps; the lists of cluster-scoped objects
    ask for no pages."""
    out: list[Step] = []
    extra = random.Random(f"storage-{seed}")
    for step in objects_plan(seed, _STORAGE_KINDS, steps=steps):
        if step.op == "list" and cluster_scoped(step.name):
            step = Step(step.op, step.name, step.body,
                        {k: v for k, v in step.options.items() if k != "limit"})  # fmt: skip
        out.append(step)
        if step.name == "va1" and extra.random() < 0.35:
            bad = extra.choice([0.1, 0.3])
            body: dict[str, Any] = {"status": _attachment_status(extra, bad=bad)}
            if extra.random() < 0.3:
                body["spec"] = {"nodeName": "ignored"}  # /status keeps the spec as it was
            if extra.random() < 0.2:
                body["metadata"] = {"labels": {"app": "s"}}
            out.append(Step("status", "va1", body))
    return out
