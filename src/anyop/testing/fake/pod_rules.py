"""The checks kube-apiserver makes of a pod template's containers, and of the workloads around
them (a Deployment's replicas, selector and strategy), with its messages and in its order.

Pure. The objects are decoded (typed) already: quantities canonical, defaults set. Not every
rule of Kubernetes' pod validation is here: those that operators' objects meet (a container
without an image, a port out of range, an environment variable without a name, a negative
resource, a selector its template's labels do not match).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.label_selectors import selects
from anyop.testing.fake.object_meta import DNS_LABEL, DNS_LABEL_HINT
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = ["workload_causes"]

Cause = dict[str, str]

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_NEGATIVE = "must be greater than or equal to 0"


def _required(field: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueRequired", "message": "Required value"}


def _invalid(field: str, shown: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def _unsupported(field: str, value: str, supported: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(json.dumps(item) for item in supported)
    message = f"Unsupported value: {go_quoted(value)}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _ports(ports: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    for index, port in enumerate(ports):
        if not isinstance(port, Mapping):
            continue
        where = f"{path}[{index}]"
        number = port.get("containerPort") or 0
        if number == 0:
            yield _required(f"{where}.containerPort")
        elif not 1 <= number <= 65535:
            yield _invalid(f"{where}.containerPort", str(number),
                           "must be between 1 and 65535, inclusive")  # fmt: skip
        protocol = port.get("protocol") or ""
        if not protocol:
            yield _required(f"{where}.protocol")
        elif protocol not in _PROTOCOLS:
            yield _unsupported(f"{where}.protocol", protocol, _PROTOCOLS)


def _env(variables: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    for index, variable in enumerate(variables):
        if not isinstance(variable, Mapping):
            continue
        name = str(variable.get("name") or "")
        if not name:
            yield _required(f"{path}[{index}].name")
        elif "=" in name or not all(" " <= char <= "~" for char in name):
            detail = (
                "a valid environment variable name must consist only of printable ASCII "
                "characters other than '='"
            )
            yield _invalid(f"{path}[{index}].name", go_quoted(name), detail)


def _resources(resources: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    for bag, quantities in (("limits", limits), ("requests", requests)):
        for name, quantity in sorted(quantities.items()):
            try:
                negative = quantity_value(quantity) < 0
            except QuantityError:
                continue  # refused when decoded
            if negative:
                yield _invalid(f"{path}.{bag}[{name}]", go_quoted(str(quantity)), _NEGATIVE)
    for name, quantity in sorted(requests.items()):
        if name not in limits:
            continue
        try:
            above = quantity_value(quantity) > quantity_value(limits[name])
        except QuantityError:
            continue
        if above:
            detail = f"must be less than or equal to {name} limit of {limits[name]}"
            yield _invalid(f"{path}.requests", go_quoted(str(quantity)), detail)


def _containers(containers: list[Any], path: str) -> Iterator[tuple[str, Cause]]:
    seen: set[str] = set()
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        where = f"{path}[{index}]"
        name = str(container.get("name") or "")
        if not name:
            yield _required(f"{where}.name")
        elif len(name) > 63 or not DNS_LABEL.match(name):
            hint = "must be no more than 63 characters" if len(name) > 63 else DNS_LABEL_HINT
            yield _invalid(f"{where}.name", go_quoted(name), hint)
        if not container.get("image"):
            yield _required(f"{where}.image")
        yield from _ports(list(container.get("ports") or ()), f"{where}.ports")
        yield from _env(list(container.get("env") or ()), f"{where}.env")
        yield from _resources(container.get("resources") or {}, f"{where}.resources")
        if name and name in seen:
            message = f"Duplicate value: {go_quoted(name)}"
            yield f"{where}.name", {"reason": "FieldValueDuplicate", "message": message}
        seen.add(name)


def _pod_spec(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    containers = spec.get("containers")
    if not containers:
        yield _required(f"{path}.containers")
        return
    yield from _containers(list(containers), f"{path}.containers")


def workload_causes(kind: str, obj: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a Deployment's, ReplicaSet's, StatefulSet's or DaemonSet's spec (after
    its metadata's), or of a Pod's."""
    if kind == "Pod":
        return list(_pod_spec(obj.get("spec") or {}, "spec"))
    spec = obj.get("spec") or {}
    causes: list[tuple[str, Cause]] = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(_invalid("spec.replicas", str(replicas), _NEGATIVE))
    selector = spec.get("selector") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and not selects(selector, labels):
        shown = json.dumps(labels, separators=(",", ":"), sort_keys=True)
        detail = "`selector` does not match template `labels`"
        causes.append(_invalid("spec.template.metadata.labels", shown, detail))
    causes += _pod_spec(template.get("spec") or {}, "spec.template.spec")
    strategy = spec.get("strategy") or {}
    if kind == "Deployment" and strategy.get("type") not in (None, "Recreate", "RollingUpdate"):
        # The value shown is Go's internal strategy struct, as JSON without tags.
        rolling = strategy.get("rollingUpdate")
        struct = {"Type": strategy.get("type"), "RollingUpdate": None if rolling is None else
                 {"MaxUnavailable": rolling.get("maxUnavailable"),
                  "MaxSurge": rolling.get("maxSurge")}}  # fmt: skip
        listed = '"Recreate", "RollingUpdate"'
        message = (f"Unsupported value: {json.dumps(struct, separators=(',', ':'))}: "
                   f"supported values: {listed}")  # fmt: skip
        causes.append(("spec.strategy", {"reason": "FieldValueNotSupported", "message": message}))
    return causes
