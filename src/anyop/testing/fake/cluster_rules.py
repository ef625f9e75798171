"""What kube-apiserver's Go code does to cluster-scoped built-in kinds beyond their schemas:
PriorityClasses, IngressClasses, PersistentVolumes (from :mod:`.volume_rules`) and Namespaces,
with its messages and in its order.

Pure. :data:`CLUSTER_DEFAULTERS` fill in what the kinds' ``SetDefaults_*`` functions set (a
PriorityClass's preemption policy, an IngressClass's parameters' scope, a PersistentVolume's
reclaim policy, volume mode and host path type); :func:`cluster_causes` lists the errors of a
new object (``Validate<Kind>``, beyond its metadata's) and :func:`cluster_update_causes` those
of an update (``Validate<Kind>Update`` and what it calls of ``Validate<Kind>``, in its order).
The objects are decoded (typed) already.

Not here: the Priority admission plugin's refusal of a second ``globalDefault`` PriorityClass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import (
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    required,
    unsupported,
)
from anyop.testing.fake.volume_rules import (
    volume_causes,
    volume_defaults,
    volume_update_causes,
)

__all__ = ["CLUSTER_DEFAULTERS", "cluster_causes", "cluster_update_causes"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_USER_PRIORITY_LIMIT = 1000000000
_SYSTEM_PREFIX = "system-"
_SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_PREEMPTION = ("PreemptLowerPriority", "Never")
_SCOPES = ("Cluster", "Namespace")
_IMMUTABLE = "field is immutable"
_DOMAIN_PATH = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"


def _path_segment_errors(name: str) -> list[str]:
    """``content.IsPathSegmentName``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in name]


# -- PriorityClass ------------------------------------------------------------------------------


def _priority_class_defaults(obj: Body) -> None:
    """``SetDefaults_PriorityClass``."""
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def _priority_class(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidatePriorityClass``: a name with the system prefix must be a system class's (its
    value and default flag), another's value may not exceed the users' limit."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    value, default = int(obj.get("value") or 0), bool(obj.get("globalDefault"))
    if name.startswith(_SYSTEM_PREFIX):
        error = _system_class_error(name, value, default)
        if error:
            detail = (
                f"priority class names with '{_SYSTEM_PREFIX}' prefix are reserved for system "
                f"use only. error: {error}"
            )
            yield forbidden("metadata.name", detail)
    elif value > _USER_PRIORITY_LIMIT:
        detail = f"maximum allowed value of a user defined priority is {_USER_PRIORITY_LIMIT}"
        yield forbidden("value", detail)
    policy = obj.get("preemptionPolicy")
    if policy is not None:
        yield from _preemption_policy(str(policy))


def _system_class_error(name: str, value: int, default: bool) -> str:
    """``IsKnownSystemPriorityClass``'s error, or ``""``."""
    if name not in _SYSTEM_CLASSES:
        return f"{name} is not a known system priority class"
    if _SYSTEM_CLASSES[name] != value:
        return f"value of {name} PriorityClass must be {_SYSTEM_CLASSES[name]}"
    if default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def _preemption_policy(policy: str) -> Iterator[tuple[str, Cause]]:
    """``ValidatePreemptionPolicy``."""
    if not policy:
        yield required("preemptionPolicy")
    elif policy not in _PREEMPTION:
        yield unsupported("preemptionPolicy", policy, _PREEMPTION)


def _priority_class_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidatePriorityClassUpdate``: the value and the preemption policy may not change (it
    does not check the object as a create does)."""
    causes: Causes = []
    if int(new.get("value") or 0) != int(old.get("value") or 0):
        causes.append(forbidden("value", "may not be changed in an update."))
    policy = new.get("preemptionPolicy")
    if policy != old.get("preemptionPolicy"):
        causes.append(invalid("preemptionPolicy", go_marshalled(policy), _IMMUTABLE))
    return causes


# -- IngressClass -------------------------------------------------------------------------------


def _ingress_class_defaults(obj: Body) -> None:
    """``SetDefaults_IngressClass``: parameters without a scope are the cluster's."""
    parameters = (obj.get("spec") or {}).get("parameters")
    if isinstance(parameters, dict) and parameters.get("scope") is None:
        parameters["scope"] = "Cluster"


def _ingress_class(obj: Mapping[str, Any]) -> Causes:
    """``validateIngressClassSpec``: the controller, then the parameters."""
    spec = obj.get("spec") or {}
    controller = str(spec.get("controller") or "")
    causes: Causes = []
    if len(controller.encode()) > 250:
        causes.append(too_long("spec.controller", 250))
    causes += _domain_prefixed_path("spec.controller", controller)
    parameters = spec.get("parameters")
    if isinstance(parameters, Mapping):
        causes += _ingress_parameters(parameters, "spec.parameters")
    return causes


def _domain_prefixed_path(field: str, text: str) -> Causes:
    """``IsDomainPrefixedPath``: a DNS subdomain, ``/``, then an HTTP path."""
    if not text:
        return [required(field)]
    host, slash, path = text.partition("/")
    if not slash or not host or not path:
        detail = 'must be a domain-prefixed path (such as "acme.io/foo")'
        return [invalid(field, go_quoted(text), detail)]
    causes = dns_subdomain_causes(host, field)
    allowed = set("/-._~%!$&'()*+,;=:")
    if not all(char.isascii() and (char.isalnum() or char in allowed) for char in path):
        detail = f"Invalid path (regex used for validation is '{_DOMAIN_PATH}')"
        causes.append(invalid(field, go_quoted(path), detail))
    return causes


def _ingress_parameters(parameters: Mapping[str, Any], where: str) -> Causes:
    """``validateIngressClassParametersReference``."""
    causes: Causes = []
    group = parameters.get("apiGroup")
    if group is not None:
        causes += dns_subdomain_causes(str(group), f"{where}.apiGroup")
    for key in ("kind", "name"):
        value = str(parameters.get(key) or "")
        if not value:
            causes.append(required(f"{where}.{key}"))
        for error in _path_segment_errors(value) if value else ():
            causes.append(invalid(f"{where}.{key}", go_quoted(value), error))
    scope, namespace = parameters.get("scope"), parameters.get("namespace")
    if scope is None:
        return [*causes, required(f"{where}.scope")]
    if scope not in _SCOPES:
        causes.append(unsupported(f"{where}.scope", str(scope), _SCOPES))
    elif scope == "Namespace" and namespace is None:
        causes.append(
            required_because(f"{where}.namespace", "`parameters.scope` is set to 'Namespace'")
        )
    elif scope == "Namespace":
        causes += dns_label_causes(str(namespace), f"{where}.namespace")
    elif namespace is not None:
        causes.append(forbidden(f"{where}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return causes


def _ingress_class_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateIngressClassUpdate``: the controller may not change, then the object's
    checks."""
    causes: Causes = []
    before = str((old.get("spec") or {}).get("controller") or "")
    after = str((new.get("spec") or {}).get("controller") or "")
    if before != after:
        causes.append(invalid("spec.controller", go_quoted(after), _IMMUTABLE))
    return causes + _ingress_class(new)


# -- Namespace ----------------------------------------------------------------------------------


def _namespace(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidateNamespace`` beyond the metadata: each of ``spec.finalizers`` a qualified name,
    and one of Kubernetes' own if it has no ``/``."""
    for finalizer in (obj.get("spec") or {}).get("finalizers") or ():
        text = str(finalizer)
        for error in label_key_errors(text):
            yield invalid("spec.finalizers", go_quoted(text), error)
        if "/" not in text and text not in ("kubernetes", "orphan", "foregroundDeletion"):
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            yield invalid("spec.finalizers", go_quoted(text), detail)


# -- dispatch -----------------------------------------------------------------------------------

CLUSTER_DEFAULTERS: Mapping[tuple[str, str], Callable[[Body], None]] = {
    ("scheduling.k8s.io", "PriorityClass"): _priority_class_defaults,
    ("networking.k8s.io", "IngressClass"): _ingress_class_defaults,
    ("", "PersistentVolume"): volume_defaults,
}
"""The defaulting functions of the kinds here, by group and kind."""

_CREATES: Mapping[tuple[str, str], Callable[[Mapping[str, Any]], Any]] = {
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("networking.k8s.io", "IngressClass"): _ingress_class,
    ("", "PersistentVolume"): volume_causes,
    ("", "Namespace"): _namespace,
}
_UPDATES: Mapping[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    ("scheduling.k8s.io", "PriorityClass"): _priority_class_update,
    ("networking.k8s.io", "IngressClass"): _ingress_class_update,
    ("", "PersistentVolume"): volume_update_causes,
    ("", "Namespace"): lambda old, new: [],  # its spec and status are the stored ones
}


def cluster_causes(group: str, kind: str, obj: Mapping[str, Any]) -> Causes:
    """The errors of a new object of a kind here (beyond its metadata's), in Go's order."""
    check = _CREATES.get((group, kind))
    return [] if check is None else list(check(obj))


def cluster_update_causes(
    group: str, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> Causes | None:
    """The errors of an update of an object of a kind here (beyond its metadata's): those of
    the update and of the object as its ``ValidateUpdate`` orders them; ``None`` for another
    kind."""
    check = _UPDATES.get((group, kind))
    return None if check is None else check(old, new)
