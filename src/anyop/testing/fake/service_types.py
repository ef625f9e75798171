"""A Service's fields that depend on its type, as its update strategy drops them
(``dropTypeDependentFields`` in ``pkg/registry/core/service/strategy.go``). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NODE_TYPES", "needs_health_check", "node_ports", "type_dependent_dropped"]

Body = dict[str, Any]
NODE_TYPES = ("NodePort", "LoadBalancer")


def needs_health_check(spec: Mapping[str, Any]) -> bool:
    """A LoadBalancer with ``externalTrafficPolicy: Local`` has a health check node port."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def node_ports(spec: Mapping[str, Any], *, health: bool = False) -> set[int]:
    """The node ports of a Service's ports (``health``: and its health check node port)."""
    found = {int(port.get("nodePort") or 0) for port in spec.get("ports") or ()
             if isinstance(port, Mapping) and port.get("nodePort")}  # fmt: skip
    if health and spec.get("healthCheckNodePort"):
        found.add(int(spec["healthCheckNodePort"]))
    return found


def _needs_node_port(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def _externally_accessible(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type")
    return kind in NODE_TYPES or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


def type_dependent_dropped(old: Mapping[str, Any], new: Body) -> None:
    """``dropTypeDependentFields``: what an update to a type that does not use it leaves
    unchanged is dropped (node ports, the health check node port, ``externalTrafficPolicy``,
    ``allocateLoadBalancerNodePorts``, ``loadBalancerClass``); a Service that is no
    LoadBalancer has no load balancer status. ``new`` is the update's own: changed in place."""
    before, after = old.get("spec") or {}, new.get("spec")
    if not isinstance(after, dict):
        return
    unused = _needs_node_port(before) and not _needs_node_port(after)
    if unused and node_ports(after) <= node_ports(before):  # no port of the update's own
        for port in after.get("ports") or ():
            if isinstance(port, dict):
                port.pop("nodePort", None)
    unused = needs_health_check(before) and not needs_health_check(after)
    if unused and after.get("healthCheckNodePort") == before.get("healthCheckNodePort"):
        after.pop("healthCheckNodePort", None)
    if before.get("type") == "LoadBalancer" and after.get("type") != "LoadBalancer":
        for field in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if after.get(field) is not None and after.get(field) == before.get(field):
                after.pop(field)
    unused = _externally_accessible(before) and not _externally_accessible(after)
    if unused and after.get("externalTrafficPolicy") == before.get("externalTrafficPolicy"):
        after.pop("externalTrafficPolicy", None)
    if after.get("type") != "LoadBalancer" and isinstance(new.get("status"), dict):
        new["status"] = {**new["status"], "loadBalancer": {}}
