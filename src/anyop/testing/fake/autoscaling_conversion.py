"""How kube-apiserver converts HorizontalPodAutoscalers between ``autoscaling/v1`` and
``autoscaling/v2`` (its storage version), as Kubernetes' Go conversion functions do
(``pkg/apis/autoscaling/v1/conversion.go``).

Pure. The internal form is ``autoscaling/v2``'s layout; ``autoscaling/v1`` keeps what it has
no field for in annotations: the metrics beyond a CPU utilisation target
(``autoscaling.alpha.kubernetes.io/metrics``, Go's JSON of ``[]v1.MetricSpec``), the behaviour
(``.../behavior``, Go's JSON of the *internal* type: its fields' Go names), the current metrics
and the conditions of the status. Converting to ``v1`` drops those annotations the object had
and writes its own; converting from ``v1`` reads them (as Go's ``json.Unmarshal`` would, an
annotation that does not decode is ignored) and drops them, and a ``v1`` object without metrics
gets the CPU target of 80% there.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from anyop.testing.fake.go_json import GoJSONError, go_marshalled, loads
from anyop.testing.fake.quantities import QuantityError, canonical_quantity

__all__ = ["ROUND_TRIP_ANNOTATIONS", "hpa_converted", "hpa_to_v1", "hpa_to_v2"]

Body = dict[str, Any]
_PREFIX = "autoscaling.alpha.kubernetes.io/"
_METRICS, _STATUSES = f"{_PREFIX}metrics", f"{_PREFIX}current-metrics"
_BEHAVIOR, _CONDITIONS = f"{_PREFIX}behavior", f"{_PREFIX}conditions"
ROUND_TRIP_ANNOTATIONS = (
    _METRICS, _BEHAVIOR, f"{_PREFIX}scale-down-tolerance", f"{_PREFIX}scale-up-tolerance",
    _STATUSES, _CONDITIONS)  # fmt: skip
"""The annotations ``DropRoundTripHorizontalPodAutoscalerAnnotations`` removes."""
_DEFAULT_CPU = 80


class _Undecodable(Exception):
    """An annotation's JSON is not of its Go type (``json.Unmarshal`` fails)."""


# -- Go's json.Unmarshal of an annotation into its type ----------------------------------------
# A type is "str", "int32", "int64", "qty", "time", ("ptr", T), ("list", T), ("map", T) or a
# struct: a tuple of (JSON name, type). A struct decodes to a dict of every field (a missing
# one its zero value: "" or 0, "0" for a quantity, None for a pointer, list, map or time).

Type = Any


def _zero(kind: Type) -> Any:
    return (
        {"str": "", "int32": 0, "int64": 0, "qty": "0"}.get(kind)
        if isinstance(kind, str)
        else (None if kind[0] in ("ptr", "list", "map") else {name: _zero(t) for name, t in kind})
    )


def _field(given: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """A struct field's value as Go's decoder finds it: the key of the exact name, else one
    equal to it but for case (the last of those in the document)."""
    if name in given:
        return True, given[name]
    found = [key for key in given if key.casefold() == name.casefold()]
    return (True, given[found[-1]]) if found else (False, None)


def _decoded(value: Any, kind: Type) -> Any:
    if isinstance(kind, tuple) and kind[0] in ("ptr", "list", "map"):
        if value is None:
            return None
        if kind[0] == "ptr":
            return _decoded(value, kind[1])
        if kind[0] == "list":
            if not isinstance(value, list):
                raise _Undecodable
            return [_decoded(item, kind[1]) for item in value]
        if not isinstance(value, dict):
            raise _Undecodable
        return {key: _decoded(item, kind[1]) for key, item in value.items()}
    if value is None:
        return _zero(kind)
    if kind == "str":
        if not isinstance(value, str):
            raise _Undecodable
        return value
    if kind in ("int32", "int64"):
        limit = 2**31 if kind == "int32" else 2**63
        if not isinstance(value, int) or isinstance(value, bool) or not -limit <= value < limit:
            raise _Undecodable
        return value
    if kind == "qty":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise _Undecodable
        try:
            return canonical_quantity(value)
        except QuantityError:
            raise _Undecodable from None
    if kind == "time":
        return _time(value)
    if not isinstance(value, dict):
        raise _Undecodable
    result = {}
    for name, field_kind in kind:
        present, given = _field(value, name)
        result[name] = _decoded(given, field_kind) if present else _zero(field_kind)
    return result


def _time(value: Any) -> str:
    """A ``metav1.Time`` as Go reads it (RFC 3339) and writes it back (in UTC, to the second)."""
    if not isinstance(value, str):
        raise _Undecodable
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _Undecodable from None
    if moment.tzinfo is None or "T" not in value:
        raise _Undecodable
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_SELECTOR = ("ptr", (
    ("matchLabels", ("map", "str")),
    ("matchExpressions", ("list", (("key", "str"), ("operator", "str"),
                                   ("values", ("list", "str")))))))  # fmt: skip
_REFERENCE = (("kind", "str"), ("name", "str"), ("apiVersion", "str"))
_UTILIZATION = ("ptr", "int32")
_METRIC_SPEC = (
    ("type", "str"),
    ("object", ("ptr", (("target", _REFERENCE), ("metricName", "str"), ("targetValue", "qty"),
                        ("selector", _SELECTOR), ("averageValue", ("ptr", "qty"))))),
    ("pods", ("ptr", (("metricName", "str"), ("targetAverageValue", "qty"),
                      ("selector", _SELECTOR)))),
    ("resource", ("ptr", (("name", "str"), ("targetAverageUtilization", _UTILIZATION),
                          ("targetAverageValue", ("ptr", "qty"))))),
    ("containerResource", ("ptr", (("name", "str"), ("targetAverageUtilization", _UTILIZATION),
                                   ("targetAverageValue", ("ptr", "qty")),
                                   ("container", "str")))),
    ("external", ("ptr", (("metricName", "str"), ("metricSelector", _SELECTOR),
                          ("targetValue", ("ptr", "qty")),
                          ("targetAverageValue", ("ptr", "qty"))))),
)  # fmt: skip
"""``autoscaling/v1``'s ``MetricSpec``, in its fields' order."""
_METRIC_STATUS = (
    ("type", "str"),
    ("object", ("ptr", (("target", _REFERENCE), ("metricName", "str"), ("currentValue", "qty"),
                        ("selector", _SELECTOR), ("averageValue", ("ptr", "qty"))))),
    ("pods", ("ptr", (("metricName", "str"), ("currentAverageValue", "qty"),
                      ("selector", _SELECTOR)))),
    ("resource", ("ptr", (("name", "str"), ("currentAverageUtilization", _UTILIZATION),
                          ("currentAverageValue", "qty")))),
    ("containerResource", ("ptr", (("name", "str"), ("currentAverageUtilization", _UTILIZATION),
                                   ("currentAverageValue", "qty"), ("container", "str")))),
    ("external", ("ptr", (("metricName", "str"), ("metricSelector", _SELECTOR),
                          ("currentValue", "qty"), ("currentAverageValue", ("ptr", "qty"))))),
)  # fmt: skip
"""``autoscaling/v1``'s ``MetricStatus``, in its fields' order."""
_CONDITION = (("type", "str"), ("status", "str"), ("lastTransitionTime", ("ptr", "time")),
              ("reason", "str"), ("message", "str"))  # fmt: skip
_RULES = ("ptr", (
    ("StabilizationWindowSeconds", ("ptr", "int32")), ("SelectPolicy", ("ptr", "str")),
    ("Policies", ("list", (("Type", "str"), ("Value", "int32"), ("PeriodSeconds", "int32")))),
    ("Tolerance", ("ptr", "qty"))))  # fmt: skip
_BEHAVIOR_TYPE = (("ScaleUp", _RULES), ("ScaleDown", _RULES))
"""The internal ``HorizontalPodAutoscalerBehavior`` (no JSON tags: its fields' Go names)."""


def _annotation(annotations: Mapping[str, Any], key: str, kind: Type) -> Any:
    """An annotation decoded into its Go type, or ``None`` if absent or undecodable."""
    text = annotations.get(key)
    if not isinstance(text, str):
        return None
    try:
        return _decoded(loads(text), kind)
    except (GoJSONError, _Undecodable, RecursionError):
        return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# -- to the internal form (autoscaling/v2) -----------------------------------------------------


def _some(**fields: Any) -> Body:
    """The fields that are set (Go's ``omitempty`` of pointers), in the order given."""
    return {name: value for name, value in fields.items() if value is not None}


def _identifier(name: str, selector: Any) -> Body:
    return _some(name=name, selector=_selector(selector))


def _v2_target(kind: str, **values: Any) -> Body:
    return _some(type=kind, **values)


def _metric_to_v2(metric: Mapping[str, Any]) -> Body:
    result: Body = {"type": metric["type"]}
    if (source := metric["object"]) is not None:
        average = source["averageValue"]
        value = source["targetValue"] if average is None or source["targetValue"] != "0" else None
        result["object"] = {
            "describedObject": _reference(source["target"]),
            "target": _v2_target("Value" if average is None else "AverageValue",
                                 value=value, averageValue=average),
            "metric": _identifier(source["metricName"], source["selector"]),
        }  # fmt: skip
    if (source := metric["pods"]) is not None:
        result["pods"] = {
            "metric": _identifier(source["metricName"], source["selector"]),
            "target": _v2_target("AverageValue", averageValue=source["targetAverageValue"]),
        }
    for name in ("resource", "containerResource"):
        if (source := metric[name]) is not None:
            utilization = source["targetAverageUtilization"]
            target = _v2_target("AverageValue" if utilization is None else "Utilization",
                                averageValue=source["targetAverageValue"],
                                averageUtilization=utilization)  # fmt: skip
            result[name] = {"name": source["name"], "target": target}
            if name == "containerResource":
                result[name]["container"] = source["container"]
    if (source := metric["external"]) is not None:
        value = source["targetValue"]
        result["external"] = {
            "metric": _identifier(source["metricName"], source["metricSelector"]),
            "target": _v2_target("AverageValue" if value is None else "Value",
                                 value=value, averageValue=source["targetAverageValue"]),
        }  # fmt: skip
    return result


def _status_to_v2(metric: Mapping[str, Any]) -> Body:
    result: Body = {"type": metric["type"]}
    if (source := metric["object"]) is not None:
        result["object"] = {
            "metric": _identifier(source["metricName"], source["selector"]),
            "current": _some(value=source["currentValue"], averageValue=source["averageValue"]),
            "describedObject": _reference(source["target"]),
        }
    if (source := metric["pods"]) is not None:
        result["pods"] = {
            "metric": _identifier(source["metricName"], source["selector"]),
            "current": {"averageValue": source["currentAverageValue"]},
        }
    for name in ("resource", "containerResource"):
        if (source := metric[name]) is not None:
            current = _some(averageValue=source["currentAverageValue"],
                            averageUtilization=source["currentAverageUtilization"])  # fmt: skip
            result[name] = {"name": source["name"], "current": current}
            if name == "containerResource":
                result[name]["container"] = source["container"]
    if (source := metric["external"]) is not None:
        result["external"] = {
            "metric": _identifier(source["metricName"], source["metricSelector"]),
            "current": _some(value=source["currentValue"],
                             averageValue=source["currentAverageValue"]),
        }  # fmt: skip
    return result


def _reference(ref: Mapping[str, Any]) -> Body:
    result = {"kind": ref.get("kind", ""), "name": ref.get("name", "")}
    if ref.get("apiVersion"):
        result["apiVersion"] = ref["apiVersion"]
    return result


def _behavior_to_v2(behavior: Mapping[str, Any]) -> Body | None:
    def rules(given: Mapping[str, Any] | None) -> Body | None:
        if given is None:
            return None
        policies = [{"type": p["Type"], "value": p["Value"], "periodSeconds": p["PeriodSeconds"]}
                    for p in given["Policies"] or ()]  # fmt: skip
        return _some(stabilizationWindowSeconds=given["StabilizationWindowSeconds"],
                     selectPolicy=given["SelectPolicy"], policies=policies or None,
                     tolerance=given["Tolerance"])  # fmt: skip

    up, down = rules(behavior["ScaleUp"]), rules(behavior["ScaleDown"])
    return None if up is None and down is None else _some(scaleUp=up, scaleDown=down)


def _condition(condition: Mapping[str, Any]) -> Body:
    """A condition in Go's field order: the time written even when zero (``null``), the
    reason and message left out when empty."""
    result = {k: condition.get(k) for k in ("type", "status", "lastTransitionTime")}
    return result | {k: condition[k] for k in ("reason", "message") if condition.get(k)}


def _cpu(utilization: Any) -> Body:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _metadata_without_round_trips(metadata: Any) -> Body:
    result = dict(metadata) if isinstance(metadata, Mapping) else {}
    annotations = result.get("annotations")
    if isinstance(annotations, Mapping) and any(k in annotations for k in ROUND_TRIP_ANNOTATIONS):
        kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP_ANNOTATIONS}
        if kept:
            result["annotations"] = kept
        else:
            del result["annotations"]
    return result


def hpa_to_v2(obj: Mapping[str, Any]) -> Body:
    """An ``autoscaling/v1`` object in the internal form (``autoscaling/v2``), as
    ``Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`` makes it
    (without ``autoscaling/v2``'s defaults, which its storage then applies)."""
    metadata = obj.get("metadata")
    annotations = (metadata.get("annotations") if isinstance(metadata, Mapping) else None) or {}
    spec = _mapping(obj.get("spec"))
    status = _mapping(obj.get("status"))
    metrics = [_cpu(spec["targetCPUUtilizationPercentage"])] if spec.get(
        "targetCPUUtilizationPercentage") is not None else []  # fmt: skip
    others = _annotation(annotations, _METRICS, ("list", _METRIC_SPEC))
    if others is not None:
        metrics = [_metric_to_v2(metric) for metric in others] + metrics[:1]
    new_spec: Body = {"scaleTargetRef": _reference(spec.get("scaleTargetRef") or {})}
    new_spec |= _some(minReplicas=spec.get("minReplicas"))
    new_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    new_spec["metrics"] = metrics or [_cpu(_DEFAULT_CPU)]
    behavior = _annotation(annotations, _BEHAVIOR, _BEHAVIOR_TYPE)
    if behavior is not None and (converted := _behavior_to_v2(behavior)) is not None:
        new_spec["behavior"] = converted
    new_status = _some(observedGeneration=status.get("observedGeneration"),
                       lastScaleTime=status.get("lastScaleTime"))  # fmt: skip
    if status.get("currentReplicas"):
        new_status["currentReplicas"] = status["currentReplicas"]
    new_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = status.get("currentCPUUtilizationPercentage")
    current_metrics: list[Body] | None = None
    if current is not None:
        resource = {"name": "cpu", "current": {"averageUtilization": current}}
        current_metrics = [{"type": "Resource", "resource": resource}]
    statuses = _annotation(annotations, _STATUSES, ("list", _METRIC_STATUS))
    if statuses is not None:
        current_metrics = [_status_to_v2(metric) for metric in statuses]
    new_status["currentMetrics"] = current_metrics
    conditions = _annotation(annotations, _CONDITIONS, ("list", _CONDITION))
    if conditions:
        new_status["conditions"] = [_condition(condition) for condition in conditions]
    result = {k: v for k, v in obj.items() if k not in ("metadata", "spec", "status")}
    result["apiVersion"] = "autoscaling/v2"
    return {**result, "metadata": _metadata_without_round_trips(metadata), "spec": new_spec,
            "status": new_status}  # fmt: skip


# -- to autoscaling/v1 -------------------------------------------------------------------------


def _quantity(value: Any) -> Any:
    try:
        return canonical_quantity(value) if value is not None else None
    except QuantityError:
        return value


def _selector(selector: Any) -> Any:
    """A label selector in Go's field order (its labels' keys sorted, as Go writes a map)."""
    if not isinstance(selector, Mapping):
        return None
    result: Body = {}
    if selector.get("matchLabels"):
        result["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        result["matchExpressions"] = [
            {"key": e.get("key", ""), "operator": e.get("operator", ""),
             **({"values": list(e["values"])} if e.get("values") else {})}
            for e in selector["matchExpressions"] if isinstance(e, Mapping)]  # fmt: skip
    return result


def _reference_v1(ref: Any) -> Body:
    return _reference(ref if isinstance(ref, Mapping) else {})


def _get(node: Any, *path: str) -> Any:
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _object_and_pods_to_v1(metric: Mapping[str, Any], side: str) -> Body:
    """A metric's type and its object and pods sources in v1, of the spec (``side``
    ``target``) or of the status (``current``): v1 names their values after the side."""
    result: Body = {"type": metric.get("type", "")}
    if isinstance(source := metric.get("object"), Mapping):
        result["object"] = {
            "target": _reference_v1(source.get("describedObject")),
            "metricName": _get(source, "metric", "name") or "",
            f"{side}Value": _quantity(_get(source, side, "value")) or "0",
        } | _some(selector=_selector(_get(source, "metric", "selector")),
                  averageValue=_quantity(_get(source, side, "averageValue")))  # fmt: skip
    if isinstance(source := metric.get("pods"), Mapping):
        result["pods"] = {
            "metricName": _get(source, "metric", "name") or "",
            f"{side}AverageValue": _quantity(_get(source, side, "averageValue")) or "0",
        } | _some(selector=_selector(_get(source, "metric", "selector")))
    return result


def _metric_to_v1(metric: Mapping[str, Any]) -> Body:
    result = _object_and_pods_to_v1(metric, "target")
    for name in ("resource", "containerResource"):
        if isinstance(source := metric.get(name), Mapping):
            result[name] = {"name": source.get("name", "")} | _some(
                targetAverageUtilization=_get(source, "target", "averageUtilization"),
                targetAverageValue=_quantity(_get(source, "target", "averageValue")),
            )
            if name == "containerResource":
                result[name]["container"] = source.get("container", "")
    if isinstance(source := metric.get("external"), Mapping):
        result["external"] = {"metricName": _get(source, "metric", "name") or ""} | _some(
            metricSelector=_selector(_get(source, "metric", "selector")),
            targetValue=_quantity(_get(source, "target", "value")),
            targetAverageValue=_quantity(_get(source, "target", "averageValue")),
        )
    return result


def _status_to_v1(metric: Mapping[str, Any]) -> Body:
    result = _object_and_pods_to_v1(metric, "current")
    for name in ("resource", "containerResource"):
        if isinstance(source := metric.get(name), Mapping):
            result[name] = {"name": source.get("name", "")} | _some(
                currentAverageUtilization=_get(source, "current", "averageUtilization")
            )
            average = _quantity(_get(source, "current", "averageValue")) or "0"
            result[name]["currentAverageValue"] = average
            if name == "containerResource":
                result[name]["container"] = source.get("container", "")
    if isinstance(source := metric.get("external"), Mapping):
        result["external"] = {"metricName": _get(source, "metric", "name") or ""} | _some(
            metricSelector=_selector(_get(source, "metric", "selector"))
        )
        result["external"]["currentValue"] = _quantity(_get(source, "current", "value")) or "0"
        result["external"] |= _some(
            currentAverageValue=_quantity(_get(source, "current", "averageValue"))
        )
    return result


def _behavior_internal(behavior: Mapping[str, Any]) -> Body:
    """The behaviour as Go writes the internal type: every field, by its Go name."""

    def rules(given: Any) -> Body | None:
        if not isinstance(given, Mapping):
            return None
        policies = given.get("policies")
        return {
            "StabilizationWindowSeconds": given.get("stabilizationWindowSeconds"),
            "SelectPolicy": given.get("selectPolicy"),
            "Policies": None if policies is None else [
                {"Type": p.get("type", ""), "Value": p.get("value", 0),
                 "PeriodSeconds": p.get("periodSeconds", 0)}
                for p in policies if isinstance(p, Mapping)],
            "Tolerance": _quantity(given.get("tolerance")),
        }  # fmt: skip

    return {
        "ScaleUp": rules(behavior.get("scaleUp")),
        "ScaleDown": rules(behavior.get("scaleDown")),
    }


def _is_cpu_utilization(metric: Any, side: str) -> bool:
    return (
        isinstance(metric, Mapping) and metric.get("type") == "Resource"
        and isinstance(metric.get("resource"), Mapping)
        and metric["resource"].get("name") == "cpu"
        and _get(metric, "resource", side, "averageUtilization") is not None
    )  # fmt: skip


def hpa_to_v1(obj: Mapping[str, Any]) -> Body:
    """An object of the internal form (``autoscaling/v2``) in ``autoscaling/v1``, as
    ``Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`` makes it."""
    spec = _mapping(obj.get("spec"))
    status = _mapping(obj.get("status"))
    metrics = [m for m in spec.get("metrics") or () if isinstance(m, Mapping)]
    new_spec: Body = {"scaleTargetRef": _reference_v1(spec.get("scaleTargetRef"))}
    new_spec |= _some(minReplicas=spec.get("minReplicas"))
    new_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = next((m for m in metrics if _is_cpu_utilization(m, "target")), None)
    if cpu is not None:
        new_spec["targetCPUUtilizationPercentage"] = _get(cpu, "resource", "target",
                                                          "averageUtilization")  # fmt: skip
    new_status = _some(observedGeneration=status.get("observedGeneration"),
                       lastScaleTime=status.get("lastScaleTime"))  # fmt: skip
    new_status["currentReplicas"] = status.get("currentReplicas", 0)
    new_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = [m for m in status.get("currentMetrics") or () if isinstance(m, Mapping)]
    for metric in current:
        if _is_cpu_utilization(metric, "current"):
            utilization = _get(metric, "resource", "current", "averageUtilization")
            new_status["currentCPUUtilizationPercentage"] = utilization
    added: dict[str, str] = {}
    others = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m, "target")]
    if others:
        added[_METRICS] = go_marshalled(others, sort_keys=False)
    if current:
        added[_STATUSES] = go_marshalled([_status_to_v1(m) for m in current], sort_keys=False)
    if isinstance(spec.get("behavior"), Mapping):
        added[_BEHAVIOR] = go_marshalled(_behavior_internal(spec["behavior"]), sort_keys=False)
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    if conditions:
        shown = [_condition(condition) for condition in conditions]
        added[_CONDITIONS] = go_marshalled(shown, sort_keys=False)
    metadata = _metadata_without_round_trips(obj.get("metadata"))
    if added:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **added}
    result = {k: v for k, v in obj.items() if k not in ("metadata", "spec", "status")}
    result["apiVersion"] = "autoscaling/v1"
    return {**result, "metadata": metadata, "spec": new_spec, "status": new_status}


def hpa_converted(obj: Mapping[str, Any], version: str) -> Body:
    """An object (of the version its ``apiVersion`` names; ``autoscaling/v2`` if it names
    neither) in ``autoscaling/<version>``: a new object; the one given if already so."""
    given = obj.get("apiVersion")
    source = "v1" if given == "autoscaling/v1" else "v2"
    if source == version:
        wanted = f"autoscaling/{version}"
        return obj if given == wanted and isinstance(obj, dict) else {**obj, "apiVersion": wanted}
    return hpa_to_v1(obj) if version == "v1" else hpa_to_v2(obj)
