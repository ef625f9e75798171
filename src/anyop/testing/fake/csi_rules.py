"""What kube-apiserver's Go code does to VolumeAttachments, CSINodes and CSIStorageCapacities
(``storage.k8s.io/v1``) beyond their schemas, with its messages and in its order (see
:mod:`.storage_rules`, which merges these tables with the other storage kinds').

Pure. :data:`DEFAULTERS`: ``SetObjectDefaults_VolumeAttachment`` (an inline volume spec's
capacity rounded to milli-units, its sources' defaults). :data:`CREATES`: ``Validate<Kind>``
beyond the metadata (the attacher, the source, the node's name, the status; a CSINode's
drivers; a capacity's topology, class and quantity). :data:`UPDATES`: the same of the new
object, then what may not change (a VolumeAttachment's whole spec, a CSINode driver but its
allocatable count, a capacity's topology and class). The objects are decoded (typed) already.
A create's reset status and an update's kept status (and ``/status`` keeping the rest) are the
fake's generic handling of status subresources; MutableCSINodeAllocatableCount is on in 1.36,
so ``/status`` keeps the volume errors' codes.

Not here: an inline volume spec's sources are checked as :mod:`.volume_rules` checks them (only
``hostPath``, ``local``, ``nfs`` and ``csi``, with its secret references, have their own fields
checked); an update of a capacity whose stored topology has label values Kubernetes no longer
accepts (it then allows them); the warnings a capacity's deprecated topology labels draw (the
fake has no hook for a kind's warnings); a changed spec shown with another inline source than
``csi`` writes that source's fields by their JSON names capitalised.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anyop.testing.fake.field_errors import duplicate, forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import (
    DNS_SUBDOMAIN,
    DNS_SUBDOMAIN_HINT,
    label_key_errors,
)
from anyop.testing.fake.pod_rules import (
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    required,
)
from anyop.testing.fake.pod_spec_diff import with_sent_empties
from anyop.testing.fake.quantities import (
    QuantityError,
    canonical_quantity,
    milli_rounded,
    quantity_value,
)
from anyop.testing.fake.selector_rules import label_selector_causes
from anyop.testing.fake.volume_rules import volume_causes

__all__ = [
    "CREATES",
    "DEFAULTERS",
    "UPDATES",
    "attachment_update_causes",
    "capacity_changes",
    "driver_name_causes",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_GROUP = "storage.k8s.io"
_IMMUTABLE = "field is immutable"
_INLINE = "spec.source.inlineVolumeSpec"
_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
_METADATA_LIMIT = 256 * 1024
_MESSAGE_LIMIT = 1024
_NODE_ID_LIMIT = 256
_INT32_MAX = 2147483647


def driver_name_causes(name: str, field: str) -> Causes:
    """``ValidateCSIDriverName``: required, at most 63 bytes, a subdomain in lower case (a CSI
    driver's, and a DRA driver's)."""
    if not name:
        return [required(field)]
    causes: Causes = []
    if len(name.encode()) > 63:
        causes.append(too_long(field, 63))
    lowered = name.lower()
    if len(lowered) > 253:
        causes.append(invalid(field, go_quoted(name), "must be no more than 253 characters"))
    if not DNS_SUBDOMAIN.match(lowered):
        causes.append(invalid(field, go_quoted(name), DNS_SUBDOMAIN_HINT))
    return causes


# -- VolumeAttachment ---------------------------------------------------------------------------

_RBD = {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"}
_AZURE_DISK = {"cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": False, "kind": "Shared"}
_SCALE_IO = {"storageMode": "ThinProvisioned", "fsType": "xfs"}


def _volume_attachment_defaults(obj: Body) -> None:
    """``SetObjectDefaults_VolumeAttachment``: those of an inline volume spec (its capacity
    rounded to milli-units, its sources' fields); and the volume errors' times, which Go
    writes even when unset (``null``)."""
    status = obj.get("status")
    for key in ("attachError", "detachError"):
        error = status.get(key) if isinstance(status, dict) else None
        if isinstance(error, dict) and error.get("time") is None:
            error["time"] = None
    inline = ((obj.get("spec") or {}).get("source") or {}).get("inlineVolumeSpec")
    if not isinstance(inline, dict):
        return
    if isinstance(inline.get("capacity"), dict):
        inline["capacity"] = {name: milli_rounded(value) if isinstance(value, str) else value
                              for name, value in inline["capacity"].items()}  # fmt: skip
    if isinstance(inline.get("hostPath"), dict):
        inline["hostPath"].setdefault("type", "")
    for source, defaults, empty in (("rbd", _RBD, ""), ("iscsi", {"iscsiInterface": "default"}, ""),
                                    ("azureDisk", _AZURE_DISK, None),
                                    ("scaleIO", _SCALE_IO, "")):  # fmt: skip
        fields = inline.get(source)
        if isinstance(fields, dict):
            for key, value in defaults.items():
                if fields.get(key) in (None, empty):
                    fields[key] = value


def _reprefixed(causes: Iterable[tuple[str, Cause]], *dropped: str) -> Causes:
    """A PersistentVolume spec's causes as an inline volume spec's (``spec`` is its path),
    without those of the fields ``dropped``."""
    return [(_INLINE + field.removeprefix("spec"), cause) for field, cause in causes
            if field.partition("[")[0] not in dropped]  # fmt: skip


_CHECKED_SECRETS = ("controllerPublishSecretRef", "controllerExpandSecretRef",
                    "nodePublishSecretRef", "nodeExpandSecretRef")  # fmt: skip
"""The secret references of a CSI source that its check checks, in its order."""


def _secret_reference_causes(reference: Mapping[str, Any], where: str) -> Causes:
    """``validatePVSecretReference``: a name that is a subdomain, a namespace that is a
    label."""
    name, namespace = str(reference.get("name") or ""), str(reference.get("namespace") or "")
    causes = dns_subdomain_causes(name, f"{where}.name") if name else [required(f"{where}.name")]
    if not namespace:
        return [*causes, required(f"{where}.namespace")]
    return causes + dns_label_causes(namespace, f"{where}.namespace")


def _mounts_root(host_path: Mapping[str, Any]) -> bool:
    """A host path source of ``/`` (as Go's ``path.Clean`` reads it)."""
    return posixpath.normpath(str(host_path.get("path") or ".")) in ("/", "//")


def _inline_volume_spec(spec: Mapping[str, Any]) -> Causes:
    """``ValidatePersistentVolumeSpec`` of an inline volume: no claim, capacity, node affinity
    nor storage class; a CSI source; only the ``Retain`` policy and the ``Filesystem`` mode."""
    causes: Causes = []
    context = "in the context of inline volumes"
    if spec.get("claimRef") is not None:
        causes.append(forbidden(f"{_INLINE}.claimRef", f"may not be specified {context}"))
    if spec.get("capacity"):
        causes.append(forbidden(f"{_INLINE}.capacity", f"may not be specified {context}"))
    if spec.get("csi") is None:
        causes.append(required_because(f"{_INLINE}.csi", f"has to be specified {context}"))
    modes = {"spec": {"accessModes": spec.get("accessModes")}}
    causes += [cause for cause in _reprefixed(volume_causes(modes))
               if cause[0] == f"{_INLINE}.accessModes"]  # fmt: skip
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy != "Retain":
        where = f"{_INLINE}.persistentVolumeReclaimPolicy"
        causes.append(forbidden(where, f"may only be Retain {context}"))
    if spec.get("nodeAffinity") is not None:
        causes.append(forbidden(f"{_INLINE}.nodeAffinity", f"may not be specified {context}"))
    kept = ("accessModes", "capacity", "persistentVolumeReclaimPolicy", "nodeAffinity",
            "storageClassName", "volumeMode", "volumeAttributesClassName", "claimRef")  # fmt: skip
    sources = {key: value for key, value in spec.items() if key not in kept}
    causes += _reprefixed(volume_causes({"spec": sources}), "spec.accessModes", "spec.capacity")
    csi = sources.pop("csi", None)
    if isinstance(csi, Mapping) and not any(
        isinstance(value, Mapping) for value in sources.values()
    ):
        for key in _CHECKED_SECRETS:  # (a CSI source after another is not checked)
            if isinstance(csi.get(key), Mapping):
                causes += _secret_reference_causes(csi[key], f"{_INLINE}.csi.{key}")
    host_path = spec.get("hostPath")
    if policy == "Recycle" and isinstance(host_path, Mapping) and _mounts_root(host_path):
        detail = "may not be 'recycle' for a hostPath mount of '/'"
        causes.append(forbidden(f"{_INLINE}.persistentVolumeReclaimPolicy", detail))
    if spec.get("storageClassName"):
        causes.append(forbidden(f"{_INLINE}.storageClassName", f"may not be specified {context}"))
    mode = spec.get("volumeMode")
    if mode is not None and mode != "Filesystem":
        detail = f"may not specify volumeMode other than Filesystem {context}"
        causes.append(forbidden(f"{_INLINE}.volumeMode", detail))
    return causes


def _volume_error(error: Any, where: str) -> Causes:
    """``validateVolumeError``: its message's length (the limit shown is the metadata's), its
    code not negative."""
    if not isinstance(error, Mapping):
        return []
    causes: Causes = []
    if len(str(error.get("message") or "").encode()) > _MESSAGE_LIMIT:
        causes.append(too_long(f"{where}.message", _METADATA_LIMIT))
    code = error.get("errorCode")
    if isinstance(code, int) and code < 0:
        detail = f"must be between 0 and {_INT32_MAX}, inclusive"
        causes.append(invalid(f"{where}.errorCode", str(code), detail))
    return causes


def _volume_attachment(obj: Mapping[str, Any]) -> Causes:
    """``ValidateVolumeAttachment`` beyond the metadata: the attacher, the source, the node's
    name, the status, then the persistent volume's name."""
    spec = obj.get("spec") or {}
    causes = driver_name_causes(str(spec.get("attacher") or ""), "spec.attacher")
    source = spec.get("source") or {}
    inline, volume = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and volume is None:
        causes.append(required_because("spec.source", _ONE_SOURCE))
    elif inline is not None and volume is not None:
        causes.append(forbidden("spec.source", _ONE_SOURCE))
    elif volume is not None and not volume:
        detail = "must specify non empty persistentVolumeName"
        causes.append(required_because("spec.source.persistentVolumeName", detail))
    elif inline is not None:
        causes += _inline_volume_spec(inline)
    causes += dns_subdomain_causes(str(spec.get("nodeName") or ""), "spec.nodeName")
    status = obj.get("status") or {}
    metadata = status.get("attachmentMetadata") or {}
    size = sum(len(str(key).encode()) + len(str(value).encode()) for key, value in metadata.items())
    if size > _METADATA_LIMIT:
        causes.append(too_long("status.attachmentMetadata", _METADATA_LIMIT))
    causes += _volume_error(status.get("attachError"), "status.attachError")
    causes += _volume_error(status.get("detachError"), "status.detachError")
    if volume is not None:
        causes += dns_subdomain_causes(str(volume), "spec.source.persistentVolumeName")
    return causes


def _go_named(value: Any) -> Any:
    """A value of an internal Go type without JSON tags, from its ``v1`` form: each field by
    its JSON name capitalised (the Go name, for most fields)."""
    if isinstance(value, Mapping):
        return {key[:1].upper() + key[1:]: _go_named(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_go_named(item) for item in value]
    return value


_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd",
            "quobyte", "iscsi", "flexVolume", "cinder", "cephfs", "fc", "flocker", "azureFile",
            "vsphereVolume", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO",
            "local", "storageos")  # fmt: skip
"""The internal ``PersistentVolumeSource``'s sources before ``CSI``, in its order."""
_GO_NAMES = {"gcePersistentDisk": "GCEPersistentDisk", "awsElasticBlockStore":
             "AWSElasticBlockStore", "nfs": "NFS", "rbd": "RBD", "iscsi": "ISCSI", "cephfs":
             "CephFS", "fc": "FC", "scaleIO": "ScaleIO", "storageos": "StorageOS"}  # fmt: skip
_SECRETS = ("controllerPublishSecretRef", "nodeStageSecretRef", "nodePublishSecretRef",
            "controllerExpandSecretRef", "nodeExpandSecretRef")  # fmt: skip


def _secret_reference(reference: Any) -> Any:
    if not isinstance(reference, Mapping):
        return None
    return {"Name": reference.get("name") or "", "Namespace": reference.get("namespace") or ""}


def _csi_source(csi: Any) -> Any:
    """An internal ``CSIPersistentVolumeSource``."""
    if not isinstance(csi, Mapping):
        return None
    out = {"Driver": csi.get("driver") or "", "VolumeHandle": csi.get("volumeHandle") or "",
           "ReadOnly": bool(csi.get("readOnly")), "FSType": csi.get("fsType") or "",
           "VolumeAttributes": None if csi.get("volumeAttributes") is None
           else dict(sorted(csi["volumeAttributes"].items()))}  # fmt: skip
    for key in _SECRETS:
        out[key[:1].upper() + key[1:]] = _secret_reference(csi.get(key))
    return out


def _claim_reference(reference: Any) -> Any:
    if not isinstance(reference, Mapping):
        return None
    fields = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    names = {"uid": "UID", "apiVersion": "APIVersion"}  # the Go names of the others: capitalised
    return {names.get(key, key[:1].upper() + key[1:]): reference.get(key) or ""
            for key in fields}  # fmt: skip


def _inline_json(spec: Mapping[str, Any]) -> Any:
    """An internal ``core.PersistentVolumeSpec`` (its embedded source's fields promoted)."""
    capacity = spec.get("capacity")
    out: dict[str, Any] = {"Capacity": None if capacity is None else dict(sorted(capacity.items()))}
    for key in _SOURCES:
        name = _GO_NAMES.get(key, key[:1].upper() + key[1:])
        out[name] = _go_named(spec.get(key))
    out["CSI"] = _csi_source(spec.get("csi"))
    out["AccessModes"] = _slice(spec.get("accessModes"))
    out["ClaimRef"] = _claim_reference(spec.get("claimRef"))
    out["PersistentVolumeReclaimPolicy"] = spec.get("persistentVolumeReclaimPolicy") or ""
    out["StorageClassName"] = spec.get("storageClassName") or ""
    out["MountOptions"] = _slice(spec.get("mountOptions"))
    out["VolumeMode"] = spec.get("volumeMode")
    out["NodeAffinity"] = _go_named(spec.get("nodeAffinity"))
    out["VolumeAttributesClassName"] = spec.get("volumeAttributesClassName")
    return out


def _attachment_spec_json(spec: Mapping[str, Any]) -> str:
    """A VolumeAttachment's spec as ``field.Invalid`` shows the internal Go struct."""
    source = spec.get("source") or {}
    inline = source.get("inlineVolumeSpec")
    shown = {"Attacher": spec.get("attacher") or "",
             "Source": {"PersistentVolumeName": source.get("persistentVolumeName"),
                        "InlineVolumeSpec": None if inline is None else _inline_json(inline)},
             "NodeName": spec.get("nodeName") or ""}  # fmt: skip
    return go_marshalled(shown, sort_keys=False)


def _slice(value: Any) -> Any:
    """A Go slice as its JSON shows it: ``null`` when nil, ``[]`` when empty."""
    return None if value is None else list(value)


def attachment_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], raw: Mapping[str, Any] | None = None
) -> Causes:
    """``ValidateVolumeAttachmentUpdate``: the new object's checks, then its spec unchanged
    (shown with the empty lists and maps of the request, ``raw``, as Go decoded them)."""
    causes = _volume_attachment(new)
    after = new.get("spec") or {}
    if after != (old.get("spec") or {}):
        shown = with_sent_empties(after, (raw or {}).get("spec"))
        causes.append(invalid("spec", _attachment_spec_json(shown), _IMMUTABLE))
    return causes


# -- CSINode ------------------------------------------------------------------------------------


def _csi_node_defaults(obj: Body) -> None:
    """What Go writes of a CSINode even when unset: its drivers' topology keys (``null``)."""
    for driver in (obj.get("spec") or {}).get("drivers") or ():
        if isinstance(driver, dict) and driver.get("topologyKeys") is None:
            driver["topologyKeys"] = None


def _csi_node(obj: Mapping[str, Any]) -> Causes:
    """``validateCSINodeSpec``: each driver's name, node ID, allocatable count and topology
    keys, no driver twice."""
    causes: Causes = []
    seen: set[str] = set()
    for index, driver in enumerate((obj.get("spec") or {}).get("drivers") or ()):
        driver = driver if isinstance(driver, Mapping) else {}  # null: Go's zero struct
        where = f"spec.drivers[{index}]"
        name, node = str(driver.get("name") or ""), str(driver.get("nodeID") or "")
        causes += driver_name_causes(name, f"{where}.name")
        if not node:
            causes.append(required(f"{where}.nodeID"))
        if len(node) > _NODE_ID_LIMIT:
            detail = f"must be {_NODE_ID_LIMIT} characters or less"
            causes.append(invalid(f"{where}.nodeID", go_quoted(node), detail))
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int) and count < 0:
            detail = "must be greater than or equal to 0"
            causes.append(invalid(f"{where}.allocatable.count", str(count), detail))
        if name in seen:
            causes.append(duplicate(f"{where}.name", name))
        seen.add(name)
        keys: set[str] = set()
        for key in driver.get("topologyKeys") or ():
            text = str(key)
            if not text:
                causes.append(required(where))
            if text in keys:
                causes.append(duplicate(where, text))
            keys.add(text)
            causes += [invalid(where, go_quoted(text), error) for error in label_key_errors(text)]
    return causes


def _driver_json(driver: Mapping[str, Any]) -> str:
    """A CSINode driver as ``field.Invalid`` shows the internal Go struct (its allocatable
    count left out, as the comparison leaves it; its topology keys ``[]`` where the request
    sent none, ``null`` where it sent nothing)."""
    keys = driver.get("topologyKeys")
    shown = {"Name": driver.get("name") or "", "NodeID": driver.get("nodeID") or "",
             "TopologyKeys": None if keys is None else list(keys),
             "Allocatable": None}  # fmt: skip
    return go_marshalled(shown, sort_keys=False)


def _semantic(driver: Any) -> dict[str, Any]:
    """A CSINode driver as ``apiequality.Semantic.DeepEqual`` compares it (without its
    allocatable count): a field nil, empty or zero is one left out."""
    fields = driver.items() if isinstance(driver, Mapping) else ()
    return {key: value for key, value in fields
            if key != "allocatable" and value not in (None, "", [], {})}  # fmt: skip


def _csi_node_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateCSINodeUpdate``: the new object's checks, then each driver kept under its name
    unchanged but for its allocatable count (compared as Go's ``Semantic.DeepEqual`` does: no
    topology keys nil or empty alike)."""
    causes = _csi_node(new)
    for before in (old.get("spec") or {}).get("drivers") or ():
        for after in (new.get("spec") or {}).get("drivers") or ():
            before, after = before or {}, after or {}  # (a null driver: Go's zero struct)
            if (before.get("name") or "") != (after.get("name") or ""):
                continue
            if _semantic(before) != _semantic(after):
                causes.append(invalid("spec.drivers", _driver_json(after), _IMMUTABLE))
    return causes


# -- CSIStorageCapacity -------------------------------------------------------------------------


def _capacity(obj: Mapping[str, Any]) -> Causes:
    """``ValidateCSIStorageCapacity`` beyond the metadata: the topology's selector, the storage
    class's name, the capacity not negative."""
    causes = list(label_selector_causes(obj.get("nodeTopology"), "nodeTopology"))
    causes += dns_subdomain_causes(str(obj.get("storageClassName") or ""), "storageClassName")
    capacity = obj.get("capacity")
    if capacity is not None:
        try:
            negative = quantity_value(capacity) < 0
        except QuantityError:
            negative = False
        if negative:
            shown = go_quoted(canonical_quantity(capacity))
            causes.append(invalid("capacity", shown, "must be greater than or equal to 0"))
    return causes


def _selector_json(selector: Any) -> str:
    """A label selector as Go's encoder writes the ``v1`` struct (its tags ``omitempty``)."""
    if not isinstance(selector, Mapping):
        return "null"
    shown: dict[str, Any] = {}
    if selector.get("matchLabels"):
        shown["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    requirements = []
    for requirement in selector.get("matchExpressions") or ():
        item = {"key": requirement.get("key") or "", "operator": requirement.get("operator") or ""}
        if requirement.get("values"):
            item["values"] = list(requirement["values"])
        requirements.append(item)
    if requirements:
        shown["matchExpressions"] = requirements
    return go_marshalled(shown, sort_keys=False)


def _capacity_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """The strategy's ``ValidateUpdate``: the new object's checks, then
    ``ValidateCSIStorageCapacityUpdate``'s (:func:`capacity_changes`)."""
    return [*_capacity(new), *capacity_changes(old, new)]


def capacity_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateCSIStorageCapacityUpdate``'s own: the topology and the class may not change
    (its metadata's checks, before them, are made with the others: see ``builtin_rules``)."""
    causes: Causes = []
    topology = new.get("nodeTopology")
    if _selector_json(topology) != _selector_json(old.get("nodeTopology")):
        causes.append(invalid("nodeTopology", _selector_json(topology), _IMMUTABLE))
    name = str(new.get("storageClassName") or "")
    if name != str(old.get("storageClassName") or ""):
        causes.append(invalid("storageClassName", go_quoted(name), _IMMUTABLE))
    return causes


# -- tables -------------------------------------------------------------------------------------

DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {
    (_GROUP, "VolumeAttachment"): _volume_attachment_defaults,
    (_GROUP, "CSINode"): _csi_node_defaults,
}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (_GROUP, "VolumeAttachment"): _volume_attachment,
    (_GROUP, "CSINode"): _csi_node,
    (_GROUP, "CSIStorageCapacity"): _capacity,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (_GROUP, "VolumeAttachment"): attachment_update_causes,
    (_GROUP, "CSINode"): _csi_node_update,
    (_GROUP, "CSIStorageCapacity"): _capacity_update,
}
