"""What kube-apiserver's Go code does to HorizontalPodAutoscalers: their defaults and the checks
of ``ValidateHorizontalPodAutoscaler`` (and of its update, which checks the same), with its
messages and in its order.

Pure. An ``autoscaling/v1`` object is judged as the API server judges it, through the internal
form its conversion makes (:mod:`~anyop.testing.fake.autoscaling_conversion`): its
``targetCPUUtilizationPercentage`` is the internal metric after those of its
``autoscaling.alpha.kubernetes.io/metrics`` annotation (a CPU ``Utilization`` target), which is
the path its errors name; its behaviour is its annotation's. The feature gates are those of
kube-apiserver 1.36.3's defaults: ``HPAScaleToZero`` off (``minReplicas`` of at least 1),
``HPAConfigurableTolerance`` on.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.autoscaling_conversion import hpa_to_v2
from anyop.testing.fake.field_errors import forbidden, path_segment_errors, required_because
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import dns_label_causes, invalid
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = ["hpa_causes", "hpa_defaults"]

Cause = dict[str, str]
Causes = Iterator[tuple[str, Cause]]

_DEFAULT_CPU = 80
_SOURCES = ("object", "external", "pods", "resource", "containerResource")
"""The metric sources in the order ``validateMetricSpec`` looks at them."""
_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_SOURCE_OF = {kind: kind[0].lower() + kind[1:] for kind in _SOURCE_TYPES}  # its field
_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
_SELECT_POLICIES = ("Disabled", "Max", "Min")
_POLICY_TYPES = ("Percent", "Pods")
_MAX_WINDOW, _MAX_PERIOD = 3600, 1800  # seconds
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"})  # fmt: skip
_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_QUOTA_PAGES = ("hugepages-", "requests.hugepages-", "limits.hugepages-")

_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15},
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}  # fmt: skip
_SCALE_DOWN = {"selectPolicy": "Max",
               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}  # fmt: skip
_RULE_FIELDS = ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance")


def _cpu_metric(utilization: Any) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _rules(given: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``copyHPAScalingRules``: the defaults, with each field the request set in their place."""
    rules = copy.deepcopy(dict(defaults))
    for field in _RULE_FIELDS if isinstance(given, Mapping) else ():
        if given.get(field) is not None:
            rules[field] = given[field]
    return {field: rules[field] for field in _RULE_FIELDS if field in rules}


def hpa_defaults(obj: dict[str, Any]) -> None:
    """Fill in, in place, the defaults an HPA gets when decoded: a ``minReplicas`` of 1; in
    ``autoscaling/v2`` (where its ``apiVersion`` says so), a CPU metric where none is given and
    each scaling rule of a behaviour completed from the defaults. (``autoscaling/v1``'s CPU
    target of 80% is its conversion's: see :mod:`~anyop.testing.fake.autoscaling_conversion`.)"""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if obj.get("apiVersion") != "autoscaling/v2":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [_cpu_metric(_DEFAULT_CPU)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _SCALE_DOWN)


def _json_string(text: str) -> str:
    """A string as Go's ``encoding/json`` writes it (field errors show values of named string
    types so): HTML characters and line separators escaped, other characters as they are."""
    shown = json.dumps(text, ensure_ascii=False)
    for char in ("<", ">", "&", "\u2028", "\u2029"):
        shown = shown.replace(char, f"\\u{ord(char):04x}")
    return shown


def _not_supported(field: str, shown: str, supported: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(json.dumps(item) for item in supported)
    message = f"Unsupported value: {shown}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _named(value: str, field: str, detail: str) -> Causes:
    if not value:
        yield required_because(field, detail)
    for error in path_segment_errors(value) if value else ():
        yield invalid(field, go_quoted(value), error)


def _reference(ref: Mapping[str, Any], path: str, *, empty_group: bool) -> Causes:
    """``ValidateCrossVersionObjectReference``: kind, name, then the API version (which must
    name a group unless ``empty_group``)."""
    yield from _named(_text(ref.get("kind")), f"{path}.kind", "")
    yield from _named(_text(ref.get("name")), f"{path}.name", "")
    api_version = _text(ref.get("apiVersion"))
    group = api_version.partition("/")[0] if "/" in api_version else ""  # ParseGroupVersion
    error = ""
    if api_version.count("/") > 1:
        error = f"unexpected GroupVersion string: {api_version}"
    elif not empty_group and not group:
        error = "apiVersion must specify API group"
    if error:
        yield invalid(f"{path}.apiVersion", go_quoted(api_version), error)


def _sign(quantity: Any) -> int:
    try:
        value = quantity_value(quantity)
    except QuantityError:
        return 1  # refused when decoded
    return (value > 0) - (value < 0)


def _target(target: Mapping[str, Any], path: str) -> Causes:
    """``validateMetricTarget``."""
    kind = _text(target.get("type"))
    if not kind:
        yield required_because(f"{path}.type", "must specify a metric target type")
    if kind not in _TARGET_TYPES:
        detail = "must be either Utilization, Value, or AverageValue"
        yield invalid(f"{path}.type", _json_string(kind), detail)
    for field in ("value", "averageValue"):
        quantity = target.get(field)
        if quantity is not None and _sign(quantity) != 1:
            yield invalid(f"{path}.{field}", _json_string(str(quantity)), "must be positive")
    utilization = target.get("averageUtilization")
    if utilization is not None and _int(utilization) < 1:
        yield invalid(f"{path}.averageUtilization", str(utilization), "must be greater than 0")


def _metric_name(metric: Mapping[str, Any], path: str) -> Causes:
    """``validateMetricIdentifier``."""
    yield from _named(_text(metric.get("name")), f"{path}.name", "must specify a metric name")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object_source(source: Mapping[str, Any], path: str) -> Causes:
    described = _mapping(source.get("describedObject"))
    yield from _reference(described, f"{path}.describedObject", empty_group=True)
    yield from _metric_name(_mapping(source.get("metric")), f"{path}.metric")
    target = _mapping(source.get("target"))
    yield from _target(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        detail = "must set either a target value or averageValue"
        yield required_because(f"{path}.target.averageValue", detail)


def _external_source(source: Mapping[str, Any], path: str) -> Causes:
    yield from _metric_name(_mapping(source.get("metric")), f"{path}.metric")
    target = _mapping(source.get("target"))
    yield from _target(target, f"{path}.target")
    value, average = target.get("value"), target.get("averageValue")
    if value is None and average is None:
        detail = "must set either a target value for metric or a per-pod target"
        yield required_because(f"{path}.target.averageValue", detail)
    if value is not None and average is not None:
        detail = "may not set both a target value for metric and a per-pod target"
        yield forbidden(f"{path}.target.value", detail)


def _pods_source(source: Mapping[str, Any], path: str) -> Causes:
    yield from _metric_name(_mapping(source.get("metric")), f"{path}.metric")
    target = _mapping(source.get("target"))
    yield from _target(target, f"{path}.target")
    if target.get("averageValue") is None:
        detail = "must specify a positive target averageValue"
        yield required_because(f"{path}.target.averageValue", detail)


def _utilization_or_value(target: Mapping[str, Any], path: str) -> Causes:
    utilization, average = target.get("averageUtilization"), target.get("averageValue")
    if utilization is None and average is None:
        detail = "must set either a target raw value or a target utilization"
        yield required_because(f"{path}.averageUtilization", detail)
    if utilization is not None and average is not None:
        detail = "may not set both a target raw value and a target utilization"
        yield forbidden(f"{path}.averageValue", detail)


def _resource_source(source: Mapping[str, Any], path: str) -> Causes:
    if not _text(source.get("name")):
        yield required_because(f"{path}.name", "must specify a resource name")
    target = _mapping(source.get("target"))
    yield from _target(target, f"{path}.target")
    yield from _utilization_or_value(target, f"{path}.target")


def _container_resource_name(name: str, path: str) -> Causes:
    """``ValidateContainerResourceName``: a qualified name; without a domain, a standard
    resource (when qualified) and a container's; with one not Kubernetes', an extended one."""
    errors = label_key_errors(name)  # a qualified name is what a label key is
    for error in errors:
        yield invalid(path, go_quoted(name), error)
    if "/" not in name:
        if not errors and name not in _STANDARD_RESOURCES and not name.startswith(_QUOTA_PAGES):
            detail = "must be a standard resource type or fully qualified"
            yield invalid(path, _json_string(name), detail)
        if name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            yield invalid(path, _json_string(name), "must be a standard resource for containers")
    elif "kubernetes.io/" not in name and (
        name.startswith("requests.") or label_key_errors(f"requests.{name}")
    ):
        detail = "doesn't follow extended resource name standard"
        yield invalid(path, _json_string(name), detail)


def _container_resource_source(source: Mapping[str, Any], path: str) -> Causes:
    name, container = _text(source.get("name")), _text(source.get("container"))
    if not name:
        yield required_because(f"{path}.name", "must specify a resource name")
    else:
        yield from _container_resource_name(name, f"{path}.name")
    if not container:
        yield required_because(f"{path}.container", "must specify a container")
    else:
        yield from dns_label_causes(container, f"{path}.container")
    target = _mapping(source.get("target"))
    yield from _target(target, f"{path}.target")
    yield from _utilization_or_value(target, f"{path}.target")


_SOURCE_CHECKS = {
    "object": _object_source,
    "external": _external_source,
    "pods": _pods_source,
    "resource": _resource_source,
    "containerResource": _container_resource_source,
}


def _metric(metric: Mapping[str, Any], path: str) -> Causes:
    """``validateMetricSpec``: its type, the first source it gives, the source its type needs,
    and no other source."""
    kind = _text(metric.get("type"))
    if not kind:
        yield required_because(f"{path}.type", "must specify a metric source type")
    if kind not in _SOURCE_TYPES:
        yield _not_supported(f"{path}.type", _json_string(kind), _SOURCE_TYPES)
    given = [name for name in _SOURCES if isinstance(metric.get(name), Mapping)]
    if given:
        yield from _SOURCE_CHECKS[given[0]](metric[given[0]], f"{path}.{given[0]}")
    expected = _SOURCE_OF.get(kind, "")
    if not expected:
        yield _not_supported(f"{path}.type", _json_string(kind), _SOURCE_TYPES)
    elif expected not in given:
        detail = "must populate information for the given metric source"
        yield required_because(f"{path}.{expected}", detail)
    if len(given) > 1:  # (Go walks the others in its map order: several, in any order)
        for name in sorted(set(given) - {expected}):
            yield forbidden(f"{path}.{name}", "must populate the given metric source only")


def _metrics(metrics: list[Any], min_replicas: Any) -> Causes:
    for index, metric in enumerate(metrics):
        yield from _metric(_mapping(metric), f"spec.metrics[{index}]")
    if min_replicas == 0:
        kinds = {_mapping(metric).get("type") for metric in metrics}
        if not kinds & {"Object", "External"}:
            detail = ("must specify at least one Object or External metric to support scaling "
                      "to zero replicas")  # fmt: skip
            yield forbidden("spec.metrics", detail)


def _policy(policy: Mapping[str, Any], path: str) -> Causes:
    kind = _text(policy.get("type"))
    if kind not in _POLICY_TYPES:
        yield _not_supported(f"{path}.type", _json_string(kind), _POLICY_TYPES)
    value, period = _int(policy.get("value")), _int(policy.get("periodSeconds"))
    if value <= 0:
        yield invalid(f"{path}.value", str(value), "must be greater than zero")
    if period <= 0:
        yield invalid(f"{path}.periodSeconds", str(period), "must be greater than zero")
    if period > _MAX_PERIOD:
        detail = f"must be less than or equal to {_MAX_PERIOD}"
        yield invalid(f"{path}.periodSeconds", str(period), detail)


def _scaling_rules(rules: Mapping[str, Any], path: str) -> Causes:
    """``validateScalingRules``: the window, the policy selected, the policies, the tolerance."""
    window = rules.get("stabilizationWindowSeconds")
    if window is not None and _int(window) < 0:
        detail = "must be greater than or equal to zero"
        yield invalid(f"{path}.stabilizationWindowSeconds", str(window), detail)
    if window is not None and _int(window) > _MAX_WINDOW:
        detail = f"must be less than or equal to {_MAX_WINDOW}"
        yield invalid(f"{path}.stabilizationWindowSeconds", str(window), detail)
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        shown = _json_string(_text(select))
        yield _not_supported(f"{path}.selectPolicy", shown, _SELECT_POLICIES)
    policies = rules.get("policies") or []
    if not policies:
        yield required_because(f"{path}.policies", "must specify at least one Policy")
    for index, policy in enumerate(policies):
        yield from _policy(_mapping(policy), f"{path}.policies[{index}]")
    tolerance = rules.get("tolerance")
    if tolerance is not None and _sign(tolerance) < 0:
        shown = go_quoted(str(tolerance))
        yield invalid(f"{path}.tolerance", shown, "must be greater than or equal to 0")


def _behavior(behavior: Any) -> Causes:
    if not isinstance(behavior, Mapping):
        return
    for rules in ("scaleUp", "scaleDown"):
        if isinstance(behavior.get(rules), Mapping):
            yield from _scaling_rules(behavior[rules], f"spec.behavior.{rules}")


def _replicas(spec: Mapping[str, Any]) -> Causes:
    least, most = spec.get("minReplicas"), _int(spec.get("maxReplicas"))
    if least is not None and _int(least) < 1:
        yield invalid("spec.minReplicas", str(least), "must be greater than or equal to 1")
    if most == 0:
        yield required_because("spec.maxReplicas", "must be set and greater than 0")
    elif most < 0:
        yield invalid("spec.maxReplicas", str(most), "must be greater than or equal to 1")
    if least is not None and most < _int(least):
        detail = "must be greater than or equal to `minReplicas`"
        yield invalid("spec.maxReplicas", str(most), detail)


def _sent_empty_policies(obj: Mapping[str, Any], raw: Mapping[str, Any] | None) -> Any:
    """The behaviour, with the policies of a rule sent as ``[]`` empty: the defaults complete
    a rule's nil policies only (the decoded object tells neither from a list left out)."""
    behavior = _mapping(obj.get("spec")).get("behavior")
    sent = _mapping(_mapping(_mapping(raw).get("spec")).get("behavior"))
    if not isinstance(behavior, Mapping):
        return behavior
    result = dict(behavior)
    for rules in ("scaleUp", "scaleDown"):
        given = _mapping(sent.get(rules)).get("policies")
        if isinstance(given, list) and not given and isinstance(result.get(rules), Mapping):
            result[rules] = {**result[rules], "policies": []}
    return result


def hpa_causes(
    obj: Mapping[str, Any], *, version: str, raw: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """The errors of a HorizontalPodAutoscaler of ``autoscaling/<version>`` (defaulted), beyond
    its metadata's, as a create and an update check it: its replicas, the reference to what it
    scales, its metrics, its behaviour, of the internal form (an ``autoscaling/v1`` object
    converted: its metrics and behaviour from its annotations too). (An update that keeps the
    reference's kind and API version skips the API version's check; the stored one was checked
    when created.) ``raw``: the object as sent (where a rule's policies sent empty are not
    left out)."""
    if version == "v1":
        obj = hpa_to_v2(obj)
    spec = _mapping(obj.get("spec"))
    ref = _mapping(spec.get("scaleTargetRef"))
    empty_group = ref.get("kind") == "ReplicationController"
    return [
        *_replicas(spec),
        *_reference(ref, "spec.scaleTargetRef", empty_group=empty_group),
        *_metrics(list(spec.get("metrics") or ()), spec.get("minReplicas")),
        *_behavior(spec.get("behavior") if version == "v1" else _sent_empty_policies(obj, raw)),
    ]
