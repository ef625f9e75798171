"""What kube-apiserver's Go code does to StorageClasses, VolumeAttributesClasses and
CSIDrivers (``storage.k8s.io/v1``) beyond their schemas, with its messages and in its order.

Pure. :data:`DEFAULTERS` are the kinds' ``SetDefaults_*`` (a StorageClass's reclaim policy and
binding mode; a CSIDriver's flags, FSGroup policy, lifecycle modes and SELinux mount) with what
the CSIDriver strategy's ``PrepareForCreate``/``PrepareForUpdate`` drop of the fields of
feature gates that are off in 1.36.3 (``preventPodSchedulingIfMissing``, of
``VolumeLimitScaling``). :data:`CREATES` are ``Validate<Kind>`` beyond the metadata;
:data:`UPDATES` what each strategy's ``ValidateUpdate`` adds: a StorageClass's object checks then
its immutable fields, a VolumeAttributesClass's immutable fields then its object checks, a
CSIDriver's spec then its immutable fields. The declarative validations of ``storage.k8s.io/v1``
are alpha in 1.36.3: the handwritten ones answer. The objects are decoded (typed) already.

Not here: the warnings (``Warning`` headers) of the strategies; a CSIDriver's ``generation``
(unset on create, bumped by each change of its spec: the fake's kinds count theirs from 1);
the field ownership of a dropped field (kube-apiserver's field manager sees the request before
the strategy drops it, and records it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import duplicate, forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import invalid, required, unsupported_shown
from anyop.testing.fake.pod_spec_diff import with_sent_empties

__all__ = ["CREATES", "DEFAULTERS", "UPDATES", "storage_class_update_causes"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_GROUP = "storage.k8s.io"
_RECLAIM = ("Delete", "Retain")
_BINDING = ("Immediate", "WaitForFirstConsumer")
_FS_GROUP = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE = ("Persistent", "Ephemeral")
_CSI_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
    ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("volumeLifecycleModes", ("Persistent",)),
    ("requiresRepublish", False), ("seLinuxMount", False),
)  # fmt: skip
"""``SetDefaults_CSIDriver``'s, in its order (``SELinuxMountReadWriteOncePod`` on)."""
_PARAMETERS_LIMIT = 512
_PARAMETERS_SIZE = 256 * 1024
_IMMUTABLE = "field is immutable"
_MIN_EXPIRATION = 600
_MAX_EXPIRATION = 1 << 32


def _provisioner(name: str, field: str) -> Causes:
    """``validateProvisioner``: present, and (lowercased) a qualified name."""
    if not name:
        return [required(field)]
    lowered = name.lower()
    return [invalid(field, go_quoted(lowered), error) for error in label_key_errors(lowered)]


def _parameters(parameters: Mapping[str, Any], field: str, *, allow_empty: bool) -> Causes:
    """``validateParameters``: at most 512 entries, no empty key, 256 KiB in all; some if
    ``allow_empty`` is false."""
    if len(parameters) > _PARAMETERS_LIMIT:
        return [too_long(field, _PARAMETERS_LIMIT)]
    causes: Causes = []
    if "" in parameters:
        causes.append(invalid(field, '""', "field can not be empty."))
    size = sum(len(key.encode()) + len(str(value).encode()) for key, value in parameters.items())
    if size > _PARAMETERS_SIZE:
        causes.append(too_long(field, _PARAMETERS_SIZE))
    if not allow_empty and not parameters:
        causes.append(required_because(field, "must contain at least one key/value pair"))
    return causes


def _immutable(field: str, new: Any, old: Any) -> Causes:
    """``ValidateImmutableField`` of a typed value (shown as JSON; nil and empty alike)."""
    if (new or None) == (old or None) or new == old:
        return []
    shown = go_quoted(new) if isinstance(new, str) else go_marshalled(new)
    return [invalid(field, shown, _IMMUTABLE)]


# -- StorageClass -------------------------------------------------------------------------------


def _storage_class_defaults(obj: Body) -> None:
    """``SetDefaults_StorageClass``."""
    if obj.get("reclaimPolicy") is None:
        obj["reclaimPolicy"] = "Delete"
    if obj.get("volumeBindingMode") is None:
        obj["volumeBindingMode"] = "Immediate"


def _storage_class(obj: Mapping[str, Any]) -> Causes:
    """``ValidateStorageClass`` beyond the metadata."""
    causes = _provisioner(str(obj.get("provisioner") or ""), "provisioner")
    causes += _parameters(obj.get("parameters") or {}, "parameters", allow_empty=True)
    policy = obj.get("reclaimPolicy")
    if policy and policy not in _RECLAIM:
        causes.append(unsupported_shown("reclaimPolicy", go_marshalled(policy), _RECLAIM))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        causes.append(required("volumeBindingMode"))
    elif mode not in _BINDING:
        causes.append(unsupported_shown("volumeBindingMode", go_marshalled(mode), _BINDING))
    causes += _topologies(list(obj.get("allowedTopologies") or ()), "allowedTopologies")
    return causes


def _topologies(terms: list[Any], field: str) -> Causes:
    """``validateAllowedTopologies``: each term's requirements, and no term twice (as Go
    compares them: against as many empty terms as there are terms, then those before)."""
    causes: Causes = []
    seen: list[dict[str, frozenset[str]]] = [{} for _ in terms]
    for index, term in enumerate(terms):
        where = f"{field}[{index}]"
        expressions: dict[str, frozenset[str]] = {}
        for position, requirement in enumerate((term or {}).get("matchLabelExpressions") or ()):
            at = f"{where}.matchLabelExpressions[{position}]"
            key = str((requirement or {}).get("key") or "")
            values = [str(value) for value in (requirement or {}).get("values") or ()]
            if not values:
                causes.append(required(f"{at}.values"))
            for number, value in enumerate(values):
                if value in values[:number]:
                    causes.append(duplicate(f"{at}.values[{number}]", value))
            causes += [invalid(f"{at}.key", go_quoted(key), e) for e in label_key_errors(key)]
            if key in expressions:
                causes.append(duplicate(f"{at}.key", key))
            expressions[key] = frozenset(values)
        for earlier in seen:
            if earlier == expressions:
                causes.append(duplicate(f"{where}.matchLabelExpressions", ""))
        seen.append(expressions)
    return causes


def storage_class_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], raw: Mapping[str, Any] | None = None
) -> Causes:
    """The strategy's ``ValidateUpdate``: ``ValidateStorageClass``, then
    ``ValidateStorageClassUpdate`` (parameters, provisioner, reclaim policy and binding mode
    immutable; the new parameters shown as the request, ``raw``, sent them: ``{}`` sent empty,
    which Go decodes as an empty map, not nil)."""
    if raw is not None:
        new = with_sent_empties(new, raw)  # (the checks read an empty map or list as none)
    causes = _storage_class(new)
    causes += _immutable("parameters", new.get("parameters"), old.get("parameters"))
    before, after = str(old.get("provisioner") or ""), str(new.get("provisioner") or "")
    if before != after:
        causes.append(invalid("provisioner", go_quoted(after), _IMMUTABLE))
    for field in ("reclaimPolicy", "volumeBindingMode"):
        if new.get(field) != old.get(field):
            causes.append(invalid(field, go_marshalled(new.get(field)), _IMMUTABLE))
    return causes


# -- VolumeAttributesClass ----------------------------------------------------------------------


def _attributes_class(obj: Mapping[str, Any]) -> Causes:
    """``ValidateVolumeAttributesClass`` beyond the metadata: a driver, some parameters."""
    causes = _provisioner(str(obj.get("driverName") or ""), "driverName")
    return causes + _parameters(obj.get("parameters") or {}, "parameters", allow_empty=False)


def _attributes_class_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateVolumeAttributesClassUpdate``: the driver and parameters may not change, then
    the object's checks."""
    causes: Causes = []
    if str(new.get("driverName") or "") != str(old.get("driverName") or ""):
        causes.append(forbidden("driverName", "updates to driverName are forbidden."))
    if (new.get("parameters") or None) != (old.get("parameters") or None):
        causes.append(forbidden("parameters", "updates to parameters are forbidden."))
    return causes + _attributes_class(new)


# -- CSIDriver ----------------------------------------------------------------------------------


def _csi_driver_defaults(obj: Body) -> None:
    """``SetDefaults_CSIDriver`` (``SELinuxMountReadWriteOncePod`` on, ``VolumeLimitScaling``
    off), and the strategy's drop of the field of the gate that is off."""
    spec = obj.setdefault("spec", {})
    for field, value in _CSI_DEFAULTS:
        if field == "volumeLifecycleModes" and not spec.get(field):
            spec[field] = list(value)
        elif spec.get(field) is None:
            spec[field] = value
    spec.pop("preventPodSchedulingIfMissing", None)


def _csi_driver_spec(spec: Mapping[str, Any]) -> Causes:
    """``validateCSIDriverSpec``."""
    causes: Causes = []
    for field, path in (("attachRequired", "attachedRequired"), ("podInfoOnMount", None),
                        ("storageCapacity", None)):  # fmt: skip
        if spec.get(field) is None:
            causes.append(required(f"spec.{path or field}"))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP:
        causes.append(unsupported_shown("spec.fsGroupPolicy", go_marshalled(policy), _FS_GROUP))
    requests = list(spec.get("tokenRequests") or ())
    causes += _token_requests(requests)
    for mode in spec.get("volumeLifecycleModes") or ():
        if mode not in _LIFECYCLE:
            shown = go_marshalled(mode)
            causes.append(unsupported_shown("spec.volumeLifecycleModes", shown, _LIFECYCLE))
    if spec.get("seLinuxMount") is None:
        causes.append(required("spec.seLinuxMount"))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if period is not None and int(period) < 10:
        detail = "must be greater than or equal to 10 seconds"
        causes.append(invalid("spec.nodeAllocatableUpdatePeriodSeconds", str(period), detail))
    in_secrets = spec.get("serviceAccountTokenInSecrets")
    if in_secrets is not None and not requests:
        detail = "serviceAccountTokenInSecrets is set but no tokenRequests are specified"
        shown = str(bool(in_secrets)).lower()
        causes.append(invalid("spec.serviceAccountTokenInSecrets", shown, detail))
    return causes


def _token_requests(requests: list[Any]) -> Iterator[tuple[str, Cause]]:
    """``validateTokenRequests``: audiences unique, expirations from 10 minutes to 2^32 s."""
    audiences: set[str] = set()
    for index, request in enumerate(requests):
        where = f"spec.tokenRequests[{index}]"
        audience = str((request or {}).get("audience") or "")
        if audience in audiences:
            yield duplicate(f"{where}.audience", audience)
            continue
        audiences.add(audience)
        seconds = (request or {}).get("expirationSeconds")
        if seconds is None:
            continue
        if int(seconds) < _MIN_EXPIRATION:
            detail = "may not specify a duration less than 10 minutes"
            yield invalid(f"{where}.expirationSeconds", str(seconds), detail)
        if int(seconds) > _MAX_EXPIRATION:
            detail = "may not specify a duration larger than 2^32 seconds"
            yield invalid(f"{where}.expirationSeconds", str(seconds), detail)


def _csi_driver(obj: Mapping[str, Any]) -> Causes:
    """``ValidateCSIDriver`` beyond the metadata."""
    return _csi_driver_spec(obj.get("spec") or {})


def _csi_driver_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateCSIDriverUpdate``: the spec, then its immutable fields (``attachRequired``,
    named ``attachedRequired``, and the lifecycle modes)."""
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    causes = _csi_driver_spec(spec)
    if spec.get("attachRequired") != before.get("attachRequired"):
        shown = go_marshalled(spec.get("attachRequired"))
        causes.append(invalid("spec.attachedRequired", shown, _IMMUTABLE))
    modes, old_modes = spec.get("volumeLifecycleModes"), before.get("volumeLifecycleModes")
    causes += _immutable("spec.volumeLifecycleModes", modes, old_modes)
    return causes


# -- dispatch -----------------------------------------------------------------------------------

DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {
    (_GROUP, "StorageClass"): _storage_class_defaults,
    (_GROUP, "CSIDriver"): _csi_driver_defaults,
}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (_GROUP, "StorageClass"): _storage_class,
    (_GROUP, "VolumeAttributesClass"): _attributes_class,
    (_GROUP, "CSIDriver"): _csi_driver,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (_GROUP, "StorageClass"): storage_class_update_causes,
    (_GROUP, "VolumeAttributesClass"): _attributes_class_update,
    (_GROUP, "CSIDriver"): _csi_driver_update,
}
