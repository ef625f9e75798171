"""What kube-apiserver's Go code does with LimitRanges (``v1``) beyond their schema: its
defaults, and its checks with their messages.

Pure. :func:`limit_range_defaults` is ``SetDefaults_LimitRangeItem`` (a Container limit's
default is its max, its default request the default, else its min); :func:`limit_range_causes`
is ``ValidateLimitRange`` beyond the metadata, which the strategy runs on creates and updates
alike (an update checks the metadata as a create does). The strategy's ``PrepareForCreate``
names a LimitRange sent without a name (``writes.create``). The checks of one limit walk Go maps,
whose order is random in kube-apiserver; here each map is walked by sorted keys. The objects
are decoded (typed) already, their quantities canonical.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import invalid
from anyop.testing.fake.quantities import QuantityError, quantity_value
from anyop.testing.fake.resource_names import (
    HUGE_PAGES,
    container_resource_name_causes,
    is_native,
    resource_name_causes,
)
from anyop.testing.fake.statuses import Cause

__all__ = ["limit_range_causes", "limit_range_defaults"]

Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_MAX_MILLI = 2**63 // 1000  # resource.MaxMilliValue
_MAPS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def limit_range_defaults(obj: Body) -> None:
    """``SetDefaults_LimitRangeItem`` of every limit of type ``Container``, in place."""
    for limit in (obj.get("spec") or {}).get("limits") or []:
        if not isinstance(limit, dict) or limit.get("type") != "Container":
            continue
        default = dict(limit.get("default") or {})
        request = dict(limit.get("defaultRequest") or {})
        for name, quantity in (limit.get("max") or {}).items():
            default.setdefault(name, quantity)
        for name, quantity in default.items():
            request.setdefault(name, quantity)
        for name, quantity in (limit.get("min") or {}).items():
            request.setdefault(name, quantity)
        for key, value in (("default", default), ("defaultRequest", request)):
            if value:
                limit[key] = value


def limit_range_causes(obj: Mapping[str, Any]) -> Causes:
    """``ValidateLimitRange`` beyond the metadata, in its order."""
    causes: Causes = []
    seen: set[str] = set()
    for index, limit in enumerate((obj.get("spec") or {}).get("limits") or []):
        causes += _limit_causes(limit or {}, f"spec.limits[{index}]", seen)
    return causes


def _limit_causes(limit: Mapping[str, Any], path: str, seen: set[str]) -> Causes:
    """The checks of one limit: its type, its resource names, then each resource's values."""
    kind = limit.get("type") or ""
    causes = _type_causes(kind, f"{path}.type")
    if kind in seen:
        message = f"Duplicate value: {go_marshalled(kind)}"
        causes.append((f"{path}.type", {"reason": "FieldValueDuplicate", "message": message}))
    seen.add(kind)
    maps = {name: dict(limit.get(name) or {}) for name in _MAPS}
    for name in ("max", "min"):
        causes += _names(kind, maps[name], f"{path}.{name}")
    if kind == "Pod":
        for name in ("default", "defaultRequest"):
            if maps[name]:
                causes.append(
                    forbidden(f"{path}.{name}", "may not be specified when `type` is 'Pod'")
                )
                maps[name] = {}  # not compared below, as Go keeps them out of its maps
    else:
        for name in ("default", "defaultRequest"):
            causes += _names(kind, maps[name], f"{path}.{name}")
    if (
        kind == "PersistentVolumeClaim"
        and "storage" not in maps["min"]
        and "storage" not in maps["max"]
    ):
        detail = "either minimum or maximum storage value is required, but neither was provided"
        causes.append(required_because(f"{path}.limits", detail))
    causes += _names(kind, maps["maxLimitRequestRatio"], f"{path}.maxLimitRequestRatio")
    for resource in sorted({key for values in maps.values() for key in values}):
        causes += _value_causes(resource, maps, path)
    return causes


def _type_causes(kind: str, where: str) -> Causes:
    """``validateLimitRangeTypeName``: a qualified name, and standard unless qualified."""
    shown = go_marshalled(kind)
    causes = [invalid(where, shown, error) for error in label_key_errors(kind)]
    if not causes and "/" not in kind and kind not in _TYPES:
        causes.append(invalid(where, shown, "must be a standard limit type or fully qualified"))
    return causes


def _names(kind: str, values: Mapping[str, Any], where: str) -> Causes:
    """``validateLimitRangeResourceName`` of each key of one map (sorted)."""
    causes: Causes = []
    for name in sorted(values):
        place = f"{where}[{name}]"
        if kind in ("Pod", "Container"):
            causes += container_resource_name_causes(name, place, shown=go_marshalled(name))
        else:
            causes += resource_name_causes(name, place, shown=go_marshalled(name))
    return causes


def _value_causes(resource: str, maps: Mapping[str, Mapping[str, Any]], path: str) -> Causes:
    """The comparisons of one resource's min, max, default, default request and ratio."""
    high, low, default, request, ratio = (_value(maps[name].get(resource)) for name in _MAPS)
    max_, min_, default_, request_, ratio_ = (str(maps[name].get(resource)) for name in _MAPS)
    causes: Causes = []

    def refuse(where: str, shown: str, detail: str) -> None:
        causes.append(invalid(f"{path}.{where}[{resource}]", go_marshalled(shown), detail))

    if low is not None and high is not None and low > high:
        refuse("min", min_, f"min value {min_} is greater than max value {max_}")
    if request is not None and low is not None and low > request:
        detail = f"min value {min_} is greater than default request value {request_}"
        refuse("defaultRequest", request_, detail)
    if request is not None and high is not None and request > high:
        detail = f"default request value {request_} is greater than max value {max_}"
        refuse("defaultRequest", request_, detail)
    if request is not None and default is not None and request > default:
        detail = f"default request value {request_} is greater than default limit value {default_}"
        refuse("defaultRequest", request_, detail)
    if default is not None and low is not None and low > default:
        refuse("default", min_, f"min value {min_} is greater than default value {default_}")
    if default is not None and high is not None and default > high:
        refuse("default", max_, f"default value {default_} is greater than max value {max_}")
    if ratio is not None and ratio < 1:
        refuse("maxLimitRequestRatio", ratio_, f"ratio {ratio_} is less than 1")
    if ratio is not None and low is not None and high is not None:
        compared = _ratio_limit(ratio, low, high)
        if compared is not None and compared[0] > compared[1]:
            detail = f"ratio {ratio_} is greater than max/min = {compared[1]:f}"
            refuse("maxLimitRequestRatio", ratio_, detail)
    unequal = default is not None and request is not None and default != request
    if unequal and not _overcommitted(resource):  # huge pages and extended resources
        detail = f"default value {default_} must equal to defaultRequest value {request_} in "
        refuse("defaultRequest", request_, detail + resource)
    return causes


def _value(quantity: Any) -> Fraction | None:
    if quantity is None:
        return None
    try:
        return quantity_value(quantity)
    except QuantityError:
        return None  # refused when decoded


def _ratio_limit(ratio: Fraction, low: Fraction, high: Fraction) -> tuple[float, float] | None:
    """The ratio and max/min as Go compares them: in milli-units where all three fit, else in
    units (``Quantity.Value()``, rounded up); ``None`` where max/min divides by zero."""
    ratio_value, low_value, high_value = (_ceil(value) for value in (ratio, low, high))
    compared = float(ratio_value)
    if ratio_value < _MAX_MILLI and low_value < _MAX_MILLI and high_value < _MAX_MILLI:
        compared = _ceil(ratio * 1000) / 1000
        low_value, high_value = _ceil(low * 1000), _ceil(high * 1000)
    if low_value == 0:
        return None
    return compared, high_value / low_value


def _ceil(value: Fraction) -> int:
    return -(-value.numerator // value.denominator)


def _overcommitted(resource: str) -> bool:
    """``IsOvercommitAllowed``: a native resource that is not huge pages."""
    return is_native(resource) and not resource.startswith(HUGE_PAGES)
