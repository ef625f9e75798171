"""What kube-apiserver's Go code does to the kinds of ``storage.k8s.io/v1``,
``node.k8s.io/v1``, ``apiregistration.k8s.io/v1``, ``flowcontrol.apiserver.k8s.io/v1`` and
``resource.k8s.io/v1``, and to a few of the core group, ``apps`` and ``networking.k8s.io``,
beyond their schemas, with its messages and in its order.

Pure. One table per kind, from the modules that hold each kind's rules:
:mod:`.storage_class_rules` (StorageClasses, VolumeAttributesClasses, CSIDrivers),
:mod:`.csi_rules` (VolumeAttachments, CSINodes, CSIStorageCapacities),
:mod:`.runtime_class_rules` (RuntimeClasses), :mod:`.apiservice_rules` (APIServices),
:mod:`.flowcontrol_rules` (FlowSchemas, PriorityLevelConfigurations),
:mod:`.resource_claim_rules` (ResourceClaims, their templates, DeviceClasses),
:mod:`.resource_slice_rules` (ResourceSlices), :mod:`.pod_template_rules` (PodTemplates,
ReplicationControllers, ControllerRevisions) and :mod:`.service_cidr_rules` (ServiceCIDRs,
IPAddresses).
:data:`STORAGE_DEFAULTERS` fill in what the kinds' ``SetDefaults_*`` functions set;
:func:`storage_causes` lists the errors of a new object (``Validate<Kind>``, beyond its
metadata's) and :func:`storage_update_causes` those of an update (``Validate<Kind>Update`` and
what it calls of ``Validate<Kind>``, in its order). The objects are decoded (typed) already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import (
    apiservice_rules,
    csi_rules,
    flowcontrol_rules,
    pod_template_rules,
    resource_claim_rules,
    resource_slice_rules,
    runtime_class_rules,
    service_cidr_rules,
    storage_class_rules,
)

__all__ = ["STORAGE_DEFAULTERS", "storage_causes", "storage_update_causes"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]

_MODULES = (
    storage_class_rules,
    csi_rules,
    runtime_class_rules,
    apiservice_rules,
    flowcontrol_rules,
    resource_claim_rules,
    resource_slice_rules,
    pod_template_rules,
    service_cidr_rules,
)
STORAGE_DEFAULTERS = {key: value for module in _MODULES for key, value in module.DEFAULTERS.items()}
"""The defaulting functions of the kinds here, by ``(group, kind)``."""
_CREATES = {key: value for module in _MODULES for key, value in module.CREATES.items()}
_UPDATES = {key: value for module in _MODULES for key, value in module.UPDATES.items()}
_SHOWN_AS_SENT = {
    ("storage.k8s.io", "StorageClass"): storage_class_rules.storage_class_update_causes,
    ("storage.k8s.io", "VolumeAttachment"): csi_rules.attachment_update_causes,
}
"""The updates whose errors show a value as the request sent it (an empty list or map that
the decoded object leaves out): they are given the request's object too."""


def storage_causes(group: str, kind: str, obj: Mapping[str, Any]) -> Causes | None:
    """The errors of a new object of a kind here (beyond its metadata's), in Go's order;
    ``None`` for another kind."""
    check = _CREATES.get((group, kind))
    return None if check is None else list(check(obj))


def storage_update_causes(
    group: str,
    kind: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    raw: Mapping[str, Any] | None = None,
) -> Causes | None:
    """The errors of an update of an object of a kind here (beyond its metadata's): those of
    the update and of the object as its ``ValidateUpdate`` orders them; ``None`` for another
    kind. ``raw``: the object as the request gave it (a StorageClass's changed parameters and
    a VolumeAttachment's changed spec are shown with the empty lists and maps it sent)."""
    shown_as_sent = _SHOWN_AS_SENT.get((group, kind))
    if shown_as_sent is not None:
        return shown_as_sent(old, new, raw)
    check = _UPDATES.get((group, kind))
    return None if check is None else list(check(old, new))
