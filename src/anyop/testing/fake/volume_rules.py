"""What kube-apiserver's Go code checks of PersistentVolumes beyond their schema, with its
messages and in its order.

Pure. :func:`volume_defaults` is ``SetDefaults_PersistentVolume``'s (the reclaim policy, the
volume mode, a host path's type); :func:`volume_causes` is ``ValidatePersistentVolumeSpec``'s
(access modes, capacity, reclaim policy, one volume source, storage class, volume mode) and the
mount options' check; :func:`volume_update_causes` adds what an update may not change. Of the
volume sources, only ``hostPath``, ``local``, ``nfs`` and ``csi`` have their own fields checked;
node affinity terms are not checked. The objects are decoded (typed) already.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT
from anyop.testing.fake.pod_rules import dns_subdomain_causes, invalid, required
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = [
    "volume_causes",
    "volume_defaults",
    "volume_update_causes",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_RECLAIM = ("Delete", "Recycle", "Retain")
_VOLUME_MODES = ("Block", "Filesystem")
_HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                    "FileOrCreate", "Socket")  # fmt: skip
_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs",
    "rbd", "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile",
    "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local",
    "storageos", "csi",
)  # fmt: skip
"""A PersistentVolume's volume sources, in the order ``ValidatePersistentVolumeSpec`` counts
them."""
_MOUNT_OPTIONS = "volume.beta.kubernetes.io/mount-options"
_WITH_MOUNT_OPTIONS = (
    "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "nfs", "rbd", "quobyte", "iscsi",
    "cinder", "cephfs", "azureFile", "vsphereVolume", "azureDisk", "photonPersistentDisk",
)  # fmt: skip
_IMMUTABLE = "field is immutable"


def volume_defaults(obj: Body) -> None:
    """``SetDefaults_PersistentVolume`` (and of its host path)."""
    spec = obj.setdefault("spec", {})
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""


def _access_modes(modes: list[Any]) -> Iterator[tuple[str, Cause]]:
    if not modes:
        yield required("spec.accessModes")
    once_pod = others = False
    for mode in modes:
        if mode not in _ACCESS_MODES:
            yield "spec.accessModes", _unsupportedgo_marshalled(mode, _ACCESS_MODES)
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            others = True
    if once_pod and others:
        yield forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes")


def _unsupportedgo_marshalled(value: Any, supported: tuple[str, ...]) -> Cause:
    """``field.NotSupported`` of a typed value (shown as JSON)."""
    listed = ", ".join(json.dumps(item) for item in supported)
    message = f"Unsupported value: {go_marshalled(value)}: supported values: {listed}"
    return {"reason": "FieldValueNotSupported", "message": message}


def _capacity(given: Any) -> Iterator[tuple[str, Cause]]:
    capacity: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    if not capacity:
        yield required("spec.capacity")
    if "storage" not in capacity or len(capacity) > 1:
        yield "spec.capacity", _unsupportedgo_marshalled(given, ("storage",))
    for name, quantity in sorted(capacity.items()):  # (Go walks the map in random order)
        where = f"spec.capacity[{name}]"
        try:
            value = quantity_value(quantity)
        except QuantityError:
            continue
        if value < 0:  # its Value(): rounded up to an integer
            yield invalid(where, str(math.ceil(value)), "must be a valid resource quantity")
        if value <= 0:
            yield invalid(where, go_quoted(str(quantity)), "must be greater than zero")


def _no_backsteps(path: str, field: str) -> Iterator[tuple[str, Cause]]:
    """``validatePathNoBacksteps``."""
    if ".." in path.split("/"):
        yield invalid(field, go_quoted(path), "must not contain '..'")


def _source(name: str, source: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    """The checks of the volume sources operators use (``validate<Source>VolumeSource``)."""
    path = str(source.get("path") or "")
    if name in ("hostPath", "local"):
        if not path:
            yield required(f"{where}.path")
            return
        yield from _no_backsteps(path, f"{where}.path")
        kind = source.get("type")
        if name == "hostPath" and kind is not None and kind not in _HOST_PATH_TYPES:
            yield f"{where}.type", _unsupportedgo_marshalled(kind, _HOST_PATH_TYPES)
    elif name == "nfs":
        if not source.get("server"):
            yield required(f"{where}.server")
        if not path:
            yield required(f"{where}.path")
        if not path.startswith("/"):
            yield invalid(f"{where}.path", go_quoted(path), "must be an absolute path")
    elif name == "csi":
        yield from _csi(source, where)


def _csi(source: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    """``validateCSIPersistentVolumeSource``: the driver's name, the volume's handle."""
    driver = str(source.get("driver") or "")
    if not driver:
        yield required(f"{where}.driver")
    else:
        if len(driver) > 63:
            yield too_long(f"{where}.driver", 63)
        lowered = driver.lower()
        if len(lowered) > 253:
            yield invalid(
                f"{where}.driver", go_quoted(driver), "must be no more than 253 characters"
            )
        if not DNS_SUBDOMAIN.match(lowered):
            yield invalid(f"{where}.driver", go_quoted(driver), DNS_SUBDOMAIN_HINT)
    if not source.get("volumeHandle"):
        yield required(f"{where}.volumeHandle")


_FORBIDDEN_PATHS = {"cephfs": "cephFS"}
"""Where Go reports a second source, if not under its field's name."""


def _sources(spec: Mapping[str, Any], affinity: bool) -> Iterator[tuple[str, Cause]]:
    count = 0
    for name in _SOURCES:
        source = spec.get(name)
        if not isinstance(source, Mapping):
            continue
        if count > 0 and name != "flexVolume":
            yield forbidden(
                f"spec.{_FORBIDDEN_PATHS.get(name, name)}",
                "may not specify more than 1 volume type",
            )
            continue
        count += 1
        yield from _source(name, source, f"spec.{name}")
        if name == "local" and not affinity:
            yield required_because("spec.nodeAffinity", "Local volume requires node affinity")
    if count == 0:
        yield required_because("spec", "must specify a volume type")


def volume_causes(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidatePersistentVolumeSpec`` (not inline), then the mount options' check."""
    spec = obj.get("spec") or {}
    yield from _access_modes(list(spec.get("accessModes") or ()))
    yield from _capacity(spec.get("capacity"))
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in _RECLAIM:
        yield "spec.persistentVolumeReclaimPolicy", _unsupportedgo_marshalled(policy, _RECLAIM)
    affinity = spec.get("nodeAffinity")
    if isinstance(affinity, Mapping) and affinity.get("required") is None:
        yield required_because(
            "spec.nodeAffinity.required", "must specify required node constraints"
        )
    yield from _sources(spec, isinstance(affinity, Mapping))
    if policy == "Recycle" and _mounts_root(spec.get("hostPath")):
        detail = "may not be 'recycle' for a hostPath mount of '/'"
        yield forbidden("spec.persistentVolumeReclaimPolicy", detail)
    yield from _class_and_mode(spec)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if _MOUNT_OPTIONS in annotations and not any(spec.get(s) for s in _WITH_MOUNT_OPTIONS):
        detail = "may not specify mount options for this volume type"
        yield forbidden(f"metadata.annotations.{_MOUNT_OPTIONS}", detail)


def _mounts_root(host_path: Any) -> bool:
    """A host path source of ``/`` (as Go's ``path.Clean`` reads it)."""
    if not isinstance(host_path, Mapping):
        return False
    return posixpath.normpath(str(host_path.get("path") or ".")) in ("/", "//")


def _class_and_mode(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """The storage class's name, the volume mode, the volume attributes class's name."""
    name = str(spec.get("storageClassName") or "")
    if name:
        yield from dns_subdomain_causes(name, "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        yield "spec.volumeMode", _unsupportedgo_marshalled(mode, _VOLUME_MODES)
    attributes = spec.get("volumeAttributesClassName")
    if attributes is not None:
        if not attributes:
            yield required_because(
                "spec.volumeAttributesClassName", "an empty string is disallowed"
            )
        else:
            yield from dns_subdomain_causes(str(attributes), "spec.volumeAttributesClassName")
        if spec.get("csi") is None:
            yield required_because(
                "spec.csi", "has to be specified when using volumeAttributesClassName"
            )


def volume_update_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidatePersistentVolumeUpdate`` after the object's checks: the volume mode may not
    change, nor a volume attributes class be removed. (Not its check that the volume source did
    not change, whose message is a Go diff of the structs.)"""
    causes = list(volume_causes(new))
    before, after = old.get("spec") or {}, new.get("spec") or {}
    if before.get("volumeMode") != after.get("volumeMode"):
        causes.append(invalid("volumeMode", go_marshalled(after.get("volumeMode")), _IMMUTABLE))
    had = before.get("volumeAttributesClassName")
    if had is not None and after.get("volumeAttributesClassName") is None:
        detail = "update from non-nil value to nil is forbidden"
        causes.append(forbidden("spec.volumeAttributesClassName", detail))
    return causes
