"""What kube-apiserver's write path and its default admission plugins set on a built-in object
before it is stored: a Pod's priority, default tolerations and pending status, a claim's
and a persistent volume's protection finalizer and pending status, a DaemonSet's template
generation, a VolumeAttributesClass's protection finalizer.

Pure: each takes the decoded (and validated) object and gives the object to store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.autoscaling_conversion import hpa_to_v1, hpa_to_v2
from anyop.testing.fake.claim_rules import PROTECTION
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = ["admitted", "as_managed"]

Body = dict[str, Any]


_NOT_READY_TOLERATIONS = [
    {
        "key": f"node.kubernetes.io/{taint}",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    for taint in ("not-ready", "unreachable")
]


def _nonzero(quantities: Any) -> dict[str, Any]:
    """The quantities that are not zero (a zero request or limit counts as none)."""
    found = {}
    for name, quantity in (quantities or {}).items():
        try:
            if quantity_value(quantity) != 0:
                found[name] = quantity
        except QuantityError:
            found[name] = quantity
    return found


def _gated(since: Any) -> Body:
    """The condition of a Pod created with scheduling gates (its strategy's)."""
    message = "Scheduling is blocked due to non-empty scheduling gates"
    return {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
            "lastTransitionTime": since, "reason": "SchedulingGated",
            "message": message}  # fmt: skip


def _qos_class(spec: Mapping[str, Any]) -> str:
    resources = [
        {
            bag: _nonzero((container.get("resources") or {}).get(bag))
            for bag in ("requests", "limits")
        }
        for key in ("containers", "initContainers")
        for container in spec.get(key) or ()
        if isinstance(container, Mapping)
    ]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(name)
        and (r.get("requests") or {}).get(name, "") in ((r.get("limits") or {}).get(name), "")
        for r in resources
        for name in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def admitted(kind: Kind, obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> Body:
    """A built-in object, new or (``old``) updated, as the API server's write path and default
    admission plugins leave it: a Pod with its priority (an update's kept where it leaves it
    out), the not-ready and unreachable tolerations and (new) a pending status (with
    ``PodScheduled`` false while scheduling gates hold it); a DaemonSet with its template
    generation annotation; (new) claims, volumes and volume attributes
    classes with their protection finalizers. (A Service's cluster IPs: ``allocated``.)"""
    result = dict(obj)  # the write path's own object: filled in place
    if (kind.group, kind.kind) == ("", "Pod"):
        spec = result.setdefault("spec", {})
        before = (old or {}).get("spec") or {}
        for field, default in (("priority", 0), ("preemptionPolicy", "PreemptLowerPriority")):
            if spec.get(field) is None:
                value = default if old is None else before.get(field)
                if value is not None:
                    spec[field] = value
        spec["tolerations"] = _with_default_tolerations(list(spec.get("tolerations") or ()))
        if old is None:
            result["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
            if spec.get("schedulingGates"):  # the strategy's, as the scheduler would say it
                since = result["metadata"].get("creationTimestamp")
                result["status"]["conditions"] = [_gated(since)]
    elif (kind.group, kind.kind) == ("", "PersistentVolumeClaim") and old is None:
        _protected(result, PROTECTION)
        result["status"] = {"phase": "Pending"}
    elif (kind.group, kind.kind) == ("", "PersistentVolume") and old is None:
        _protected(result, _PV_PROTECTION)
        since = result["metadata"].get("creationTimestamp")  # the strategy's now
        result["status"] = {"phase": "Pending", "lastPhaseTransitionTime": since}
    elif (kind.group, kind.kind) == ("storage.k8s.io", "VolumeAttributesClass") and old is None:
        _protected(result, _VAC_PROTECTION)
    elif (kind.group, kind.kind) == ("apps", "DaemonSet"):
        metadata = result["metadata"] = dict(result["metadata"])
        annotations = metadata["annotations"] = dict(metadata.get("annotations") or {})
        annotations[_TEMPLATE_GENERATION] = str(_template_generation(result, old))
    return result


_PV_PROTECTION = "kubernetes.io/pv-protection"
_VAC_PROTECTION = "kubernetes.io/vac-protection"


def _protected(obj: Body, finalizer: str) -> None:
    """The StorageObjectInUseProtection plugin's, on a create: its finalizer added, if not
    there."""
    finalizers = list(obj["metadata"].get("finalizers") or ())
    if finalizer not in finalizers:
        obj["metadata"]["finalizers"] = [*finalizers, finalizer]


_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""Where ``apps/v1`` keeps a DaemonSet's internal ``spec.templateGeneration``."""


def _template_generation(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> int:
    """The DaemonSet strategy's: 1 at least for a new one (the annotation sent, if greater);
    an update's is the old one, plus one where the pod template changed."""
    if old is None:
        return max(_annotated_generation(new), 1)
    changed = (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
    return _annotated_generation(old) + (1 if changed else 0)


def as_managed(kind: Kind, obj: Body) -> Body:
    """A write's object as the field manager compares it: a DaemonSet's template generation
    annotation as ``apps/v1``'s conversion writes it from the internal field, which the
    request's annotation set (``"0"`` without one); the strategy then sets the stored value
    (:func:`admitted`). So the creator owns it, and a PUT that leaves it out changes it.
    An ``autoscaling/v1`` HorizontalPodAutoscaler as its conversion from the internal form
    writes it (its CPU target defaulted, its annotations of later versions' fields rewritten)."""
    if (kind.group, kind.kind, kind.version) == ("autoscaling", "HorizontalPodAutoscaler", "v1"):
        return hpa_to_v1(hpa_to_v2(obj))
    if (kind.group, kind.kind) == ("certificates.k8s.io", "CertificateSigningRequest"):
        return {key: value for key, value in obj.items() if key != "spec"}  # reset: not owned
    if (kind.group, kind.kind) != ("apps", "DaemonSet"):
        return obj
    metadata = dict(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    annotations[_TEMPLATE_GENERATION] = str(_annotated_generation(obj))
    return {**obj, "metadata": {**metadata, "annotations": annotations}}


def _annotated_generation(obj: Mapping[str, Any]) -> int:
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(_TEMPLATE_GENERATION)
    try:
        return int(str(text))
    except ValueError:
        return 0


def _with_default_tolerations(tolerations: list[Any]) -> list[Any]:
    """The DefaultTolerationSeconds plugin's: a Pod that does not tolerate a node not ready (or
    unreachable) for ``NoExecute`` does for 300 seconds."""
    for default in _NOT_READY_TOLERATIONS:
        if not any(
            isinstance(t, Mapping)
            and t.get("key") in (default["key"], "", None)
            and t.get("effect") in ("NoExecute", "", None)
            for t in tolerations
        ):
            tolerations.append(dict(default))
    return tolerations
