"""The cells of built-in kinds' Table rows, as kube-apiserver's printers compute them.

Pure. Each printer takes an object (JSON, as served) and a function that turns a timestamp into
an age (``5s``, ``3m20s``, ``<unknown>``) on the server's clock, and returns the row's cells,
the wide ones included (the server always prints wide; ``priority`` 1 columns are the wide ones),
and the row's conditions if any. The column definitions themselves are not here: they are the real
server's, in ``data/tables.json`` (see ``scripts/fake_tables.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "PRINTERS",
    "Age",
    "Printed",
    "containers_of",
    "format_labels",
    "label_selector_text",
    "member",
]

Age = Callable[[Any], str]
"""A timestamp (RFC 3339 text, or ``None``) -> its age on the server's clock."""
Printed = tuple[list[Any], list[dict[str, Any]]]
"""A row's cells and its conditions."""
_ROLE_PREFIX = "node-role.kubernetes.io/"
_ROLE_LABEL = "kubernetes.io/role"


def member(obj: Any, *path: str | int) -> Any:
    """The value at ``path`` (keys and list indices), or ``None`` where it stops."""
    for step in path:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and len(obj) > step else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def _name(obj: Mapping[str, Any]) -> str:
    return str(member(obj, "metadata", "name") or "")


def _created(obj: Mapping[str, Any]) -> Any:
    return member(obj, "metadata", "creationTimestamp")


def format_labels(labels: Any) -> str:
    """``k=v,k2=v2`` sorted by key, ``<none>`` when empty (``labels.FormatLabels``)."""
    if not labels:
        return "<none>"
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def label_selector_text(selector: Any) -> str:
    """A ``LabelSelector`` as ``labels.Selector.String()`` writes it (requirements by key)."""
    if not isinstance(selector, Mapping):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(set(expression.get("values") or ())))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(operator, "")  # fmt: skip
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))


def containers_of(spec: Any) -> list[str]:
    """A pod spec's container names and images, each comma-separated."""
    containers = member(spec, "containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return [names, images]


def _namespace(obj: Mapping[str, Any], age: Age) -> Printed:
    return [_name(obj), str(member(obj, "status", "phase") or ""), age(_created(obj))], []


def _config_map(obj: Mapping[str, Any], age: Age) -> Printed:
    size = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), size, age(_created(obj))], []


def _secret(obj: Mapping[str, Any], age: Age) -> Printed:
    cells = [_name(obj), str(obj.get("type") or ""), len(obj.get("data") or {})]
    return [*cells, age(_created(obj))], []


def _service_account(obj: Mapping[str, Any], age: Age) -> Printed:
    return [_name(obj), age(_created(obj))], []


def _lease(obj: Mapping[str, Any], age: Age) -> Printed:
    holder = str(member(obj, "spec", "holderIdentity") or "")
    return [_name(obj), holder, age(_created(obj))], []


def _deployment(obj: Mapping[str, Any], age: Age) -> Printed:
    status = obj.get("status") or {}
    desired = int(member(obj, "spec", "replicas") or 0)
    cells = [_name(obj), f"{int(status.get('readyReplicas') or 0)}/{desired}",
             int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0),
             age(_created(obj))]  # fmt: skip
    template = member(obj, "spec", "template", "spec")
    return [
        *cells,
        *containers_of(template),
        label_selector_text(member(obj, "spec", "selector")),
    ], []


def _replica_set(obj: Mapping[str, Any], age: Age) -> Printed:
    status = obj.get("status") or {}
    counts = [int(member(obj, "spec", "replicas") or 0), int(status.get("replicas") or 0),
              int(status.get("readyReplicas") or 0)]  # fmt: skip
    selector = label_selector_text(member(obj, "spec", "selector")) or "<none>"
    template = member(obj, "spec", "template", "spec")
    return [_name(obj), *counts, age(_created(obj)), *containers_of(template), selector], []


def _ports(ports: Any) -> str:
    pieces = []
    for port in ports or ():
        protocol = port.get("protocol", "")
        node_port = port.get("nodePort") or 0
        middle = f":{node_port}" if node_port > 0 else ""
        pieces.append(f"{port.get('port', 0)}{middle}/{protocol}")
    return ",".join(pieces)


def _balancer(status: Any) -> str:
    found = {ing.get("ip") or ing.get("hostname") for ing in member(status, "ingress") or ()}
    return ",".join(sorted(address for address in found if address))


def _external_ip(spec: Mapping[str, Any], status: Any) -> str:
    external = [str(ip) for ip in spec.get("externalIPs") or ()]
    match spec.get("type"):
        case "ClusterIP" | "NodePort":
            return ",".join(external) if external else "<none>"
        case "LoadBalancer":
            balanced = _balancer(member(status, "loadBalancer"))
            if external:
                return ",".join([*(balanced.split(",") if balanced else []), *external])
            return balanced or "<pending>"
        case "ExternalName":
            return str(spec.get("externalName") or "")
    return "<unknown>"


def _service(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or []
    cells = [_name(obj), str(spec.get("type") or ""), cluster_ips[0] if cluster_ips else "<none>",
             _external_ip(spec, obj.get("status")), _ports(spec.get("ports")) or "<none>",
             age(_created(obj)), format_labels(spec.get("selector"))]  # fmt: skip
    return cells, []


def _node_status(obj: Mapping[str, Any]) -> str:
    conditions = {c.get("type"): c for c in member(obj, "status", "conditions") or ()}
    status = []
    if (ready := conditions.get("Ready")) is not None:
        status.append("Ready" if ready.get("status") == "True" else "NotReady")
    status = status or ["Unknown"]
    if member(obj, "spec", "unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_roles(labels: Mapping[str, str]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith(_ROLE_PREFIX) and key[len(_ROLE_PREFIX) :]:
            roles.add(key[len(_ROLE_PREFIX) :])
        elif key == _ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(obj: Mapping[str, Any], kind: str) -> str:
    for address in member(obj, "status", "addresses") or ():
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _node(obj: Mapping[str, Any], age: Age) -> Printed:
    info = member(obj, "status", "nodeInfo") or {}
    kernel = str(info.get("kernelVersion") or "<unknown>")
    if info.get("architecture"):
        kernel += f" ({info['architecture']})"
    roles = _node_roles(member(obj, "metadata", "labels") or {})
    cells = [_name(obj), _node_status(obj), roles, age(_created(obj)),
             str(info.get("kubeletVersion") or ""), _node_address(obj, "InternalIP"),
             _node_address(obj, "ExternalIP"), str(info.get("osImage") or "<unknown>"), kernel,
             str(info.get("containerRuntimeVersion") or "<unknown>")]  # fmt: skip
    return cells, []


def _event_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event's fields under their ``v1`` names (one printer for both)."""
    if "involvedObject" in obj or ("regarding" not in obj and "note" not in obj):
        return dict(obj)
    renamed = {"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
               "deprecatedFirstTimestamp": "firstTimestamp", "deprecatedCount": "count",
               "deprecatedLastTimestamp": "lastTimestamp"}  # fmt: skip
    return {renamed.get(key, key): value for key, value in obj.items()}


def _event(obj: Mapping[str, Any], age: Age) -> Printed:
    event = _event_fields(obj)
    first = age(event.get("firstTimestamp") or event.get("eventTime"))
    last = age(event["lastTimestamp"]) if event.get("lastTimestamp") else first
    count = int(event.get("count") or 0)
    if (series := event.get("series")) is not None:
        last, count = age(series.get("lastObservedTime")), int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = event.get("involvedObject") or {}
    target = str(involved.get("kind", "")).lower()
    if involved.get("name"):
        target += f"/{involved['name']}"
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingController") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    origin = f"{component}, {instance}" if instance else component
    cells = [last, str(event.get("type") or ""), str(event.get("reason") or ""), target,
             str(involved.get("fieldPath") or ""), origin,
             str(event.get("message") or "").strip(), first, count, _name(obj)]  # fmt: skip
    return cells, []


def _default(obj: Mapping[str, Any], age: Age) -> Printed:
    created = _created(obj) or "0001-01-01T00:00:00Z"
    return [_name(obj), created], []


PRINTERS: dict[tuple[str, str], Callable[[Mapping[str, Any], Age], Printed]] = {
    ("", "namespaces"): _namespace,
    ("", "configmaps"): _config_map,
    ("", "secrets"): _secret,
    ("", "serviceaccounts"): _service_account,
    ("", "services"): _service,
    ("", "nodes"): _node,
    ("", "events"): _event,
    ("events.k8s.io", "events"): _event,
    ("coordination.k8s.io", "leases"): _lease,
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("", "default"): _default,
}
"""Printers by (group, plural); ``("", "default")`` is the default convertor's (Name, Created
At), for the kinds the real server has no printer for. Pods are in :mod:`pod_printer`."""
