"""What kube-apiserver's Go code checks of ResourceQuotas (``v1``) beyond their schema, with its
messages and in its order.

Pure. :func:`resource_quota_causes` is ``ValidateResourceQuota`` beyond the metadata (the
spec's hard limits, its scopes and scope selector, then the status's limits; the strategy
empties the status of a create before); :func:`resource_quota_update_causes` is
``ValidateResourceQuotaUpdate`` beyond the metadata: the spec as a create checks it, then its
scopes, which may not change; :func:`resource_quota_status_causes` is
``ValidateResourceQuotaStatusUpdate`` beyond the metadata. The hard limits are a Go map,
walked in random order by kube-apiserver: here by sorted names. The objects are decoded
(typed) already, their quantities canonical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.field_errors import required_because
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.pod_rules import invalid
from anyop.testing.fake.quantities import QuantityError, quantity_value
from anyop.testing.fake.resource_names import (
    QUOTA_RESOURCES,
    is_huge_pages,
    is_integer,
    quota_resource_name_causes,
)
from anyop.testing.fake.statuses import Cause

__all__ = ["resource_quota_causes", "resource_quota_status_causes", "resource_quota_update_causes"]

Causes = list[tuple[str, Cause]]

_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
           "VolumeAttributesClass", "CrossNamespacePodAffinity")  # fmt: skip
_POD_COUNT = ("pods",)
_POD_COMPUTE = ("cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")
_CLAIMS = ("persistentvolumeclaims", "requests.storage")
_CONFLICTS = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_ONLY = ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating",
                "CrossNamespacePodAffinity")  # fmt: skip
_FOR = "for scope selector"
_EXISTS_DETAIL = (
    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
    "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
)


def resource_quota_causes(obj: Mapping[str, Any]) -> Causes:
    """``ValidateResourceQuota`` beyond the metadata: the spec's, then the status's limits."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    causes = _spec_causes(spec)
    for field in ("hard", "used"):
        causes += _limits(status.get(field) or {}, f"status.{field}")
    return causes


def resource_quota_status_causes(new: Mapping[str, Any]) -> Causes:
    """``ValidateResourceQuotaStatusUpdate`` beyond the metadata: a resource version, then the
    status's limits (the spec is the stored one)."""
    causes: Causes = []
    if not (new.get("metadata") or {}).get("resourceVersion"):
        causes.append(required_because("resourceVersion"))
    status = new.get("status") or {}
    for field in ("hard", "used"):
        causes += _limits(status.get(field) or {}, f"status.{field}")
    return causes


def resource_quota_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> Causes:
    """``ValidateResourceQuotaUpdate`` beyond the metadata: the spec, then its scopes, which
    may not change (compared as sets). ``raw``: the object as sent, before decoding, where
    scopes sent empty are an empty list (shown ``[]``), not none."""
    spec = new.get("spec") or {}
    causes = _spec_causes(spec)
    scopes = spec.get("scopes") or []
    if set(scopes) != set((old.get("spec") or {}).get("scopes") or []):
        sent: Any = raw.get("spec") if raw is not None and is_map(raw) else None
        empty = is_map(sent) and sent.get("scopes") == []
        shown = go_marshalled(spec.get("scopes") or ([] if empty else None))
        causes.append(invalid("spec.scopes", shown, "field is immutable"))
    return causes


def _spec_causes(spec: Mapping[str, Any]) -> Causes:
    """``ValidateResourceQuotaSpec``: the hard limits, the scopes, the scope selector."""
    hard = spec.get("hard") or {}
    causes = _limits(hard, "spec.hard")
    causes += _scope_causes(spec.get("scopes") or [], sorted(hard))
    if spec.get("scopeSelector") is not None:
        causes += _selector_causes(spec, sorted(hard))
    return causes


def _limits(limits: Mapping[str, Any], path: str) -> Causes:
    """Each limit's name (``ValidateResourceQuotaResourceName``) and value
    (``ValidateResourceQuantityValue``: not negative, whole for counts and extended ones)."""
    causes: Causes = []
    for name in sorted(limits):
        where = f"{path}[{name}]"
        causes += quota_resource_name_causes(name, where, shown=go_marshalled(name))
        try:
            value = quantity_value(limits[name])
        except QuantityError:
            continue  # refused when decoded
        shown = go_marshalled(str(limits[name]))
        if value < 0:
            causes.append(invalid(where, shown, "must be greater than or equal to 0"))
        if is_integer(name) and (value * 1000) % 1000 != 0:
            causes.append(invalid(where, shown, "must be an integer"))
    return causes


def _valid_for(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):  # fmt: skip
        return resource in _POD_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_COUNT
    if scope == "VolumeAttributesClass":
        return resource in _CLAIMS
    return True


def _scope_causes(scopes: list[Any], hard: list[str]) -> Causes:
    """``validateResourceQuotaScopes``: each scope standard and valid for each hard limit, no
    conflicting pair (each error shows the whole list)."""
    if not scopes:
        return []
    shown = go_marshalled(scopes)
    causes: Causes = []
    for scope in scopes:
        if scope not in _SCOPES:
            causes.append(invalid("spec.scopes", shown, "unsupported scope"))
        for resource in hard:
            if _standard_quota(resource) and not _valid_for(scope, resource):
                causes.append(
                    invalid("spec.scopes", shown, "unsupported scope applied to resource")
                )
    for pair in _CONFLICTS:
        if all(scope in scopes for scope in pair):
            causes.append(invalid("spec.scopes", shown, "conflicting scopes"))
    return causes


def _selector_causes(spec: Mapping[str, Any], hard: list[str]) -> Causes:
    """``validateScopedResourceSelectorRequirement``: each expression's scope, operator and
    values; no conflicting pair of scopes."""
    path = "spec.scopeSelector.matchExpressions"
    selector = spec.get("scopeSelector") or {}
    causes: Causes = []
    names: list[str] = []
    for expression in selector.get("matchExpressions") or []:
        expression = expression or {}
        scope, operator = expression.get("scopeName") or "", expression.get("operator") or ""
        values = expression.get("values") or []
        if scope not in _SCOPES:
            causes.append(invalid(f"{path}.scopeName", go_marshalled(scope), "unsupported scope"))
        for resource in hard:
            if _standard_quota(resource) and not _valid_for(scope, resource):
                shown = go_marshalled(_selector_shown(selector), sort_keys=False)
                causes.append(invalid(path, shown, "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY and operator != "Exists":
            causes.append(invalid(f"{path}.operator", go_marshalled(operator), _EXISTS_DETAIL))
        if operator in ("In", "NotIn"):
            if not values:
                detail = f"must be at least one value when `operator` is 'In' or 'NotIn' {_FOR}"
                causes.append(required_because(f"{path}.values", detail))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                detail = f"must be no value when `operator` is 'Exist' or 'DoesNotExist' {_FOR}"
                causes.append(invalid(f"{path}.values", go_marshalled(values), detail))
        else:
            shown = go_marshalled(operator)
            causes.append(invalid(f"{path}.operator", shown, "not a valid selector operator"))
        names.append(scope)
    for pair in _CONFLICTS:
        if all(scope in names for scope in pair):
            shown = go_marshalled(spec.get("scopes") or None)
            causes.append(invalid(path, shown, "conflicting scopes"))
    return causes


def _standard_quota(resource: str) -> bool:
    """``IsStandardQuotaResourceName``: a standard quota resource, or huge pages'."""
    return resource in QUOTA_RESOURCES or is_huge_pages(resource)


def _selector_shown(selector: Mapping[str, Any]) -> Any:
    """A scope selector as ``json.Marshal`` writes the internal Go struct that validation
    holds, which has no JSON names: ``{"MatchExpressions":[{"ScopeName":..,"Operator":..,
    "Values":..}]}``, empty lists as ``null``."""
    expressions = [
        {"ScopeName": (expression or {}).get("scopeName") or "",
         "Operator": (expression or {}).get("operator") or "",
         "Values": (expression or {}).get("values") or None}
        for expression in selector.get("matchExpressions") or []
    ]  # fmt: skip
    return {"MatchExpressions": expressions or None}
