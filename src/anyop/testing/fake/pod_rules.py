"""The checks kube-apiserver makes of a pod template's containers, of the workloads around
them (a Deployment's replicas, selector and strategy), and of a Pod's update (what may change),
with its messages and in its order.

Pure. The objects are decoded (typed) already: quantities canonical, defaults set. Not every
rule of Kubernetes' pod validation is here: those that operators' objects meet (a container
without an image, a port out of range, an environment variable without a name, a negative
resource, a selector its template's labels do not match, a restart policy or toleration out of
its values, a spec change beyond images, deadline and tolerations).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.apparmor_rules import (
    annotation_causes,
    match_causes,
    profile_causes,
)
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.label_selectors import selects
from anyop.testing.fake.object_meta import (
    DNS_LABEL,
    DNS_LABEL_HINT,
    PERCENT,
    PERCENT_HINT,
    dns_label_errors,
    dns_subdomain_errors,
    label_causes,
    label_key_errors,
    label_value_errors,
    meta_annotation_causes,
)
from anyop.testing.fake.quantities import QuantityError, quantity_value
from anyop.testing.fake.selector_rules import label_selector_causes

__all__ = [
    "PORT_RANGE",
    "dns_label_causes",
    "dns_subdomain_causes",
    "invalid",
    "required",
    "toleration_causes",
    "stateful_set_update_causes",
    "template_causes",
    "unsupported",
    "workload_causes",
]

Cause = dict[str, str]

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_NEGATIVE = "must be greater than or equal to 0"


PORT_RANGE = "must be between 1 and 65535, inclusive"


def required(field: str) -> tuple[str, Cause]:
    """``field.Required``."""
    return field, {"reason": "FieldValueRequired", "message": "Required value"}


def invalid(field: str, shown: str, detail: str) -> tuple[str, Cause]:
    """``field.Invalid``, the value ``shown`` as Go shows it."""
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def dns_label_causes(value: str, field: str) -> list[tuple[str, Cause]]:
    """``ValidateDNS1123Label``: its length, then its form."""
    return [invalid(field, go_quoted(value), error) for error in dns_label_errors(value)]


def dns_subdomain_causes(value: str, field: str) -> list[tuple[str, Cause]]:
    """``ValidateDNS1123Subdomain``: its length, then its form."""
    return [invalid(field, go_quoted(value), error) for error in dns_subdomain_errors(value)]


def unsupported(field: str, value: str, supported: tuple[str, ...]) -> tuple[str, Cause]:
    """``field.NotSupported``, with the values supported (in the order Kubernetes gives)."""
    return unsupported_shown(field, go_quoted(value), supported)


def unsupported_shown(field: str, shown: str, supported: tuple[str, ...]) -> tuple[str, Cause]:
    """``field.NotSupported`` of a value ``shown`` as Go shows it."""
    listed = ", ".join(json.dumps(item) for item in supported)
    message = f"Unsupported value: {shown}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _ports(ports: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    for index, port in enumerate(ports):
        if not isinstance(port, Mapping):
            continue
        where = f"{path}[{index}]"
        number = port.get("containerPort") or 0
        if number == 0:
            yield required(f"{where}.containerPort")
        elif not 1 <= number <= 65535:
            yield invalid(f"{where}.containerPort", str(number), PORT_RANGE)
        protocol = port.get("protocol") or ""
        if not protocol:
            yield required(f"{where}.protocol")
        elif protocol not in _PROTOCOLS:
            yield unsupported(f"{where}.protocol", protocol, _PROTOCOLS)


def _env(variables: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    for index, variable in enumerate(variables):
        if not isinstance(variable, Mapping):
            continue
        name = str(variable.get("name") or "")
        if not name:
            yield required(f"{path}[{index}].name")
        elif "=" in name or not all(" " <= char <= "~" for char in name):
            detail = (
                "a valid environment variable name must consist only of printable ASCII "
                "characters other than '='"
            )
            yield invalid(f"{path}[{index}].name", go_quoted(name), detail)


def _resources(resources: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    for bag, quantities in (("limits", limits), ("requests", requests)):
        for name, quantity in sorted(quantities.items()):
            try:
                negative = quantity_value(quantity) < 0
            except QuantityError:
                continue  # refused when decoded
            if negative:
                yield invalid(f"{path}.{bag}[{name}]", go_quoted(str(quantity)), _NEGATIVE)
    for name, quantity in sorted(requests.items()):
        if name not in limits:
            continue
        try:
            above = quantity_value(quantity) > quantity_value(limits[name])
        except QuantityError:
            continue
        if above:
            detail = f"must be less than or equal to {name} limit of {limits[name]}"
            yield invalid(f"{path}.requests", go_quoted(str(quantity)), detail)


def _containers(containers: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    seen: set[str] = set()
    for index, container in enumerate(containers):
        if not is_map(container):
            continue
        where = f"{path}[{index}]"
        name = str(container.get("name") or "")
        if not name:
            yield required(f"{where}.name")
        elif len(name) > 63 or not DNS_LABEL.match(name):
            hint = "must be no more than 63 characters" if len(name) > 63 else DNS_LABEL_HINT
            yield invalid(f"{where}.name", go_quoted(name), hint)
        if not container.get("image"):
            yield required(f"{where}.image")
        yield from _ports(list(container.get("ports") or ()), f"{where}.ports")
        yield from _env(list(container.get("env") or ()), f"{where}.env")
        yield from _resources(container.get("resources") or {}, f"{where}.resources")
        yield from _apparmor(container, where)
        if name and name in seen:
            message = f"Duplicate value: {go_quoted(name)}"
            yield f"{where}.name", {"reason": "FieldValueDuplicate", "message": message}
        seen.add(name)


_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_INT32_MAX = 2**31 - 1


def toleration_causes(tolerations: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateTolerations``: the key, the operator and its value, the effect."""
    for index, toleration in enumerate(tolerations):
        if not isinstance(toleration, Mapping):
            continue
        where = f"{path}[{index}]"
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        for error in label_key_errors(key) if key else ():
            yield invalid(f"{where}.key", go_quoted(key), error)
        if not key and operator != "Exists":
            detail = ('operator must be Exists when `key` is empty, which means "match all '
                      'values and all keys"')  # fmt: skip
            yield invalid(f"{where}.operator", go_quoted(operator), detail)
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            yield invalid(f"{where}.effect", go_quoted(effect), detail)
        if operator in ("Equal", ""):
            if errors := label_value_errors(value):
                yield invalid(f"{where}.operator", go_quoted(value), ";".join(errors))
        elif operator == "Exists":
            if value:
                detail = "value must be empty when `operator` is 'Exists'"
                yield invalid(f"{where}.operator", go_quoted(value), detail)
        elif operator in ("Lt", "Gt"):
            yield unsupported(f"{where}.operator", operator, ("Equal", "Exists", "Lt", "Gt"))
        else:
            yield unsupported(f"{where}.operator", operator, ("Equal", "Exists"))
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            effects = ("NoSchedule", "PreferNoSchedule", "NoExecute")
            yield unsupported(f"{where}.effect", effect, effects)


def _pod_spec(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    containers = spec.get("containers")
    if not containers:
        yield required(f"{path}.containers")
    else:
        yield from _containers(list(containers), f"{path}.containers")
    for index, container in enumerate(spec.get("initContainers") or ()):
        yield from _apparmor(container, f"{path}.initContainers[{index}]")
    restart = str(spec.get("restartPolicy") or "")
    if not restart:
        yield required(f"{path}.restartPolicy")
    elif restart not in _RESTART_POLICIES:
        yield unsupported(f"{path}.restartPolicy", restart, _RESTART_POLICIES)
    yield from _apparmor(spec, path)
    yield from toleration_causes(list(spec.get("tolerations") or ()), f"{path}.tolerations")
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _INT32_MAX:
        detail = f"must be between 1 and {_INT32_MAX}, inclusive"
        yield invalid(f"{path}.activeDeadlineSeconds", str(deadline), detail)


def _apparmor(holder: Any, path: str) -> list[tuple[str, Cause]]:
    """A container's (or a pod spec's) ``securityContext.appArmorProfile``'s errors."""
    security = holder.get("securityContext") if isinstance(holder, Mapping) else None
    if not isinstance(security, Mapping):
        return []
    where = f"{path}.securityContext.appArmorProfile"
    return profile_causes(security.get("appArmorProfile"), where)


def template_causes(template: Mapping[str, Any], path: str) -> list[tuple[str, Cause]]:
    """``ValidatePodTemplateSpec``'s checks the fake makes, of a template at ``path``: its
    labels, its annotations, its AppArmor annotations, its pod spec, its AppArmor annotations
    against their fields."""
    metadata, spec = template.get("metadata") or {}, template.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    causes = [*label_causes(metadata.get("labels") or {}, f"{path}.labels"),
              *meta_annotation_causes(annotations, f"{path}.annotations")]  # fmt: skip
    causes += annotation_causes(metadata.get("annotations"), spec, f"{path}.annotations")
    causes += _pod_spec(spec, f"{path}.spec")
    return causes + match_causes(metadata, spec, f"{path}.spec")


def workload_causes(kind: str, obj: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a Deployment's, ReplicaSet's, StatefulSet's or DaemonSet's spec (after
    its metadata's), or of a Pod's."""
    if kind == "Pod":
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        found = annotation_causes(metadata.get("annotations"), spec, "metadata.annotations")
        found += _pod_spec(spec, "spec")
        return found + match_causes(metadata, spec, "spec")
    spec = obj.get("spec") or {}
    causes: list[tuple[str, Cause]] = []
    given = spec.get("selector")  # (none: it selects nothing)
    selector = given or {}
    template = spec.get("template") or {}
    meta = template.get("metadata") or {}
    labels = meta.get("labels") or {}
    problems: list[tuple[str, Cause]] = []  # (a selector that does not convert matches nothing)
    if kind == "StatefulSet":  # its own checks first, its selector's last
        causes += _stateful_set(spec)
        problems = [cause for cause in causes if cause[0].startswith("spec.selector.")]
    elif kind in ("Deployment", "ReplicaSet"):
        causes += _counts(spec, ("replicas", "minReadySeconds") if kind == "ReplicaSet" else
                          ("replicas",))  # fmt: skip
        problems = list(_required_selector(given, "deployment"))
        causes += problems
        problems = [cause for cause in problems if cause[0].startswith("spec.selector.")]
    else:  # a DaemonSet's selector is checked first
        problems = list(label_selector_causes(selector, "spec.selector"))
        causes += problems
    if not problems and (given is None or (selector and not selects(selector, labels))):
        shown = json.dumps(labels, separators=(",", ":"), sort_keys=True) if labels else "null"
        detail = "`selector` does not match template `labels`"
        causes.append(invalid("spec.template.metadata.labels", shown, detail))
    if (
        kind == "DaemonSet"
        and isinstance(spec.get("selector"), Mapping)
        and not (selector.get("matchLabels") or selector.get("matchExpressions"))
    ):
        shown = json.dumps(selector, separators=(",", ":"))
        causes.append(invalid("spec.selector", shown, "empty selector is invalid for daemonset"))
    pod_spec = template.get("spec") or {}
    causes += template_causes(template, "spec.template")
    if kind == "StatefulSet":  # (its template's labels and annotations are checked again)
        causes += label_causes(labels, "spec.template.labels")
        causes += meta_annotation_causes(meta.get("annotations") or {}, "spec.template.annotations")
    restart = str(pod_spec.get("restartPolicy") or "")
    if restart != "Always":
        causes.append(unsupported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        owner = "ReplicaSet" if kind == "Deployment" else kind
        detail = f"activeDeadlineSeconds in {owner} is not Supported"
        causes.append(_forbidden("spec.template.spec.activeDeadlineSeconds", detail))
    strategy = spec.get("strategy") or {}
    if kind == "Deployment" and strategy.get("type") not in (None, "Recreate", "RollingUpdate"):
        # The value shown is Go's internal strategy struct, as JSON without tags.
        rolling = strategy.get("rollingUpdate")
        struct = {"Type": strategy.get("type"), "RollingUpdate": None if rolling is None else
                 {"MaxUnavailable": _zero_int(rolling.get("maxUnavailable")),
                  "MaxSurge": _zero_int(rolling.get("maxSurge"))}}  # fmt: skip
        listed = '"Recreate", "RollingUpdate"'
        message = (f"Unsupported value: {json.dumps(struct, separators=(',', ':'))}: "
                   f"supported values: {listed}")  # fmt: skip
        causes.append(("spec.strategy", {"reason": "FieldValueNotSupported", "message": message}))
    if kind == "Deployment":
        causes += _deployment(spec)
    if kind == "DaemonSet":
        causes += _daemon_set(spec)
    return causes


def _daemon_set(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidateDaemonSetSpec``'s checks after its template's: the counts, then the update
    strategy (``ValidateDaemonSetUpdateStrategy``), then the history kept."""
    for field in ("minReadySeconds", "templateGeneration"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            yield invalid(f"spec.{field}", str(value), _NEGATIVE)
    strategy = spec.get("updateStrategy") or {}
    path = "spec.updateStrategy"
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "RollingUpdate" and not isinstance(rolling, Mapping):
        yield required(f"{path}.rollingUpdate")
    elif kind == "RollingUpdate" and isinstance(rolling, Mapping):
        yield from _daemon_rolling(rolling, f"{path}.rollingUpdate")
    elif kind != "OnDelete":
        # The value shown is Go's internal strategy struct, as JSON without tags.
        struct = {"Type": kind, "RollingUpdate": None if not isinstance(rolling, Mapping) else
                  {"MaxUnavailable": _zero_int(rolling.get("maxUnavailable")),
                   "MaxSurge": _zero_int(rolling.get("maxSurge"))}}  # fmt: skip
        yield unsupported_shown(path, json.dumps(struct, separators=(",", ":")),
                                ("RollingUpdate", "OnDelete"))  # fmt: skip
    history = spec.get("revisionHistoryLimit")
    if isinstance(history, int) and history < 0:
        yield invalid("spec.revisionHistoryLimit", str(history), _NEGATIVE)


def _daemon_rolling(rolling: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateRollingUpdateDaemonSet``: each value, their bounds, then exactly one set."""
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    yield from _int_or_percent_causes(rolling, path)
    for field, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
        if isinstance(value, str) and PERCENT.match(value) and int(value[:-1]) > 100:
            yield invalid(f"{path}.{field}", json.dumps(value), "must not be greater than 100%")
    has_unavailable, has_surge = _int_or_percent(unavailable) != 0, _int_or_percent(surge) != 0
    if has_unavailable and has_surge:
        detail = "may not be set when maxUnavailable is non-zero"
        yield invalid(f"{path}.maxSurge", json.dumps(surge), detail)
    elif not has_unavailable and not has_surge:
        message = "Required value: cannot be 0 when maxSurge is 0"
        yield f"{path}.maxUnavailable", {"reason": "FieldValueRequired", "message": message}


def _deployment(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidateDeploymentSpec``'s checks after its template's: the strategy's rolling update
    (``ValidateDeploymentStrategy``), then the spec's counts."""
    strategy = spec.get("strategy") or {}
    rolling, path = strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate"
    if strategy.get("type") == "Recreate" and rolling is not None:
        yield _forbidden(path, "may not be specified when strategy `type` is 'Recreate'")
    elif strategy.get("type") == "RollingUpdate" and isinstance(rolling, Mapping):
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        yield from _int_or_percent_causes(rolling, path)
        if _int_or_percent(unavailable) == 0 and _int_or_percent(surge) == 0:
            detail = "may not be 0 when `maxSurge` is 0"
            yield invalid(f"{path}.maxUnavailable", json.dumps(unavailable), detail)
        percent = isinstance(unavailable, str) and PERCENT.match(unavailable)
        if percent and _int_or_percent(unavailable) > 100:
            detail = "must not be greater than 100%"
            yield invalid(f"{path}.maxUnavailable", json.dumps(unavailable), detail)
    ready = spec.get("minReadySeconds")
    ready = ready if isinstance(ready, int) else 0
    for field in ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            yield invalid(f"spec.{field}", str(value), _NEGATIVE)
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= ready:
        yield invalid(
            "spec.progressDeadlineSeconds", str(deadline), "must be greater than minReadySeconds"
        )


def _int_or_percent_causes(rolling: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidatePositiveIntOrPercent`` of a rolling update's ``maxUnavailable`` and
    ``maxSurge``: a percent string, or a count not below 0."""
    for field in ("maxUnavailable", "maxSurge"):
        value = rolling.get(field)
        if isinstance(value, str) and not PERCENT.match(value):
            yield invalid(f"{path}.{field}", json.dumps(value), PERCENT_HINT)
        elif isinstance(value, int) and value < 0:
            yield invalid(f"{path}.{field}", str(value), _NEGATIVE)


def _zero_int(value: Any) -> Any:
    """An internal (non-pointer) ``IntOrString`` as Go writes it: an unset one is ``0``."""
    return 0 if value is None else value


_ATOI = re.compile("^[+-]?[0-9]+$")


def _int_or_percent(value: Any) -> int:
    """apps validation's ``getIntOrPercentValue``: a percent's number, an integer's value, and
    0 for anything else (an IntOrString's ``IntValue`` of a string that is no integer)."""
    if isinstance(value, str):
        if PERCENT.match(value):
            return int(value[:-1])
        return int(value) if _ATOI.match(value) else 0
    return value if isinstance(value, int) else 0


def _rolling_struct(rolling: Mapping[str, Any]) -> dict[str, Any]:
    """A StatefulSet's rolling update as Go's internal struct writes it (no JSON tags)."""
    return {"Partition": rolling.get("partition") or 0,
            "MaxUnavailable": rolling.get("maxUnavailable")}  # fmt: skip


def _stateful_set(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``ValidateStatefulSetSpec``'s own checks (its template's are the workloads')."""
    policy = str(spec.get("podManagementPolicy") or "")
    if not policy:
        yield required("spec.podManagementPolicy")
    elif policy not in ("OrderedReady", "Parallel"):
        detail = "must be 'OrderedReady' or 'Parallel'"
        yield invalid("spec.podManagementPolicy", go_quoted(policy), detail)
    strategy = spec.get("updateStrategy") or {}
    kind, rolling = str(strategy.get("type") or ""), strategy.get("rollingUpdate")
    if not kind:
        yield required("spec.updateStrategy")
    elif kind == "OnDelete" and rolling is not None:
        detail = "only allowed for updateStrategy 'RollingUpdate'"
        shown = json.dumps(_rolling_struct(rolling), separators=(",", ":"))
        yield invalid("spec.updateStrategy.rollingUpdate", shown, detail)
    elif kind not in ("OnDelete", "RollingUpdate"):
        # The value shown is Go's internal strategy struct, as JSON without tags.
        update = None if rolling is None else _rolling_struct(rolling)
        struct = {"Type": kind, "RollingUpdate": update}
        detail = "must be 'RollingUpdate' or 'OnDelete'"
        yield invalid("spec.updateStrategy", json.dumps(struct, separators=(",", ":")), detail)
    yield from _counts(spec, ("replicas", "minReadySeconds"))
    service = str(spec.get("serviceName") or "")
    if service:
        yield from dns_label_causes(service, "spec.serviceName")
    yield from _required_selector(spec.get("selector"), "statefulset")


def _counts(spec: Mapping[str, Any], fields: tuple[str, ...]) -> Iterator[tuple[str, Cause]]:
    """``ValidateNonnegativeField`` of each field."""
    for field in fields:
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            yield invalid(f"spec.{field}", str(value), _NEGATIVE)


def _required_selector(selector: Any, owner: str) -> Iterator[tuple[str, Cause]]:
    """A workload's selector: given, valid (``ValidateLabelSelector``), not empty (a
    ReplicaSet's error says ``deployment``, as Go's)."""
    if selector is None:
        yield required("spec.selector")
        return
    yield from label_selector_causes(selector, "spec.selector")
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        shown = json.dumps(selector, separators=(",", ":"))
        yield invalid("spec.selector", shown, f"empty selector is invalid for {owner}")


_STATEFUL_MUTABLE = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                     "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy")  # fmt: skip


def stateful_set_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[tuple[str, Cause]]:
    """``ValidateStatefulSetUpdate``'s own check: only a few fields of the spec may change."""

    def fixed(obj: Mapping[str, Any]) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        return {k: v for k, v in spec.items() if k not in _STATEFUL_MUTABLE}

    if fixed(old) == fixed(new):
        return []
    listed = "', '".join(("replicas", "ordinals", "template", "updateStrategy",
                          "revisionHistoryLimit",
                          "persistentVolumeClaimRetentionPolicy"))  # fmt: skip
    detail = (f"updates to statefulset spec for fields other than '{listed}' and "
              "'minReadySeconds' are forbidden")  # fmt: skip
    return [_forbidden("spec", detail)]


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}
