"""The cells of storage and node kinds' Table rows (StorageClasses, VolumeAttributesClasses,
CSIDrivers, CSINodes, VolumeAttachments, RuntimeClasses), as kube-apiserver's printers compute
them.

Pure, as :mod:`~anyop.testing.fake.printers` (whose helpers they share). The real printers read
the defaulted object, so a field the server always defaults (a StorageClass's reclaim policy and
binding mode, a CSIDriver's booleans) is read as stored, with the printer's own fallback for an
object stored without it. CSIStorageCapacities have no printer here: the real server gives them
the default convertor's columns (Name, Created At), which :mod:`~anyop.testing.fake.tables`
already serves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.printers import Age, Printed, member

__all__ = ["STORAGE_PRINTERS"]

_DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _name(obj: Mapping[str, Any]) -> str:
    return str(member(obj, "metadata", "name") or "")


def _age(obj: Mapping[str, Any], age: Age) -> str:
    return age(member(obj, "metadata", "creationTimestamp"))


def _flag(value: Any, unset: bool) -> bool:
    """A ``*bool`` field: its value, or the printer's fallback when it is not set."""
    return value if isinstance(value, bool) else unset


def _storage_class(obj: Mapping[str, Any], age: Age) -> Printed:
    name = _name(obj)
    annotations = member(obj, "metadata", "annotations") or {}
    if any(annotations.get(key) == "true" for key in _DEFAULT_CLASS):
        name += " (default)"
    cells = [name, str(obj.get("provisioner") or ""),
             str(obj.get("reclaimPolicy") or "Delete"),
             str(obj.get("volumeBindingMode") or "Immediate"),
             _flag(obj.get("allowVolumeExpansion"), False), _age(obj, age)]  # fmt: skip
    return cells, []


def _volume_attributes_class(obj: Mapping[str, Any], age: Age) -> Printed:
    return [_name(obj), str(obj.get("driverName") or ""), _age(obj, age)], []


def _audiences(requests: Any) -> str:
    """A CSIDriver's token audiences, comma-joined; ``<unset>`` for none (an empty list is not
    kept in storage, so it reads back as unset)."""
    if not requests:
        return "<unset>"
    return ",".join(str(request.get("audience") or "") for request in requests)


def _csi_driver(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    modes = ",".join(str(mode) for mode in spec.get("volumeLifecycleModes") or ())
    cells = [_name(obj), _flag(spec.get("attachRequired"), True),
             _flag(spec.get("podInfoOnMount"), False), _flag(spec.get("storageCapacity"), False),
             _audiences(spec.get("tokenRequests")), _flag(spec.get("requiresRepublish"), False),
             modes or "<none>", _age(obj, age)]  # fmt: skip
    return cells, []


def _csi_node(obj: Mapping[str, Any], age: Age) -> Printed:
    drivers = member(obj, "spec", "drivers") or ()
    return [_name(obj), len(drivers), _age(obj, age)], []


def _volume_attachment(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    volume = str(member(spec, "source", "persistentVolumeName") or "")
    attached = member(obj, "status", "attached") is True
    cells = [_name(obj), str(spec.get("attacher") or ""), volume,
             str(spec.get("nodeName") or ""), attached, _age(obj, age)]  # fmt: skip
    return cells, []


def _runtime_class(obj: Mapping[str, Any], age: Age) -> Printed:
    return [_name(obj), str(obj.get("handler") or ""), _age(obj, age)], []


STORAGE_PRINTERS: dict[tuple[str, str], Callable[[Mapping[str, Any], Age], Printed]] = {
    ("storage.k8s.io", "storageclasses"): _storage_class,
    ("storage.k8s.io", "volumeattributesclasses"): _volume_attributes_class,
    ("storage.k8s.io", "csidrivers"): _csi_driver,
    ("storage.k8s.io", "csinodes"): _csi_node,
    ("storage.k8s.io", "volumeattachments"): _volume_attachment,
    ("node.k8s.io", "runtimeclasses"): _runtime_class,
}
"""Printers by (group, plural), as :data:`~anyop.testing.fake.printers.PRINTERS`."""
