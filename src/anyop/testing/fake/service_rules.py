"""The checks kube-apiserver makes of a Service, and what an update of one keeps of the old one,
with its messages.

Pure. The objects are decoded and defaulted already (a port's protocol and target port, the
type, the session affinity). Kubernetes' rules live in ``validateService`` and
``ValidateServiceUpdate`` (``pkg/apis/core/validation``) and in the Service storage's
``patchAllocatedValues``; here are those operators' Services meet: ports (names, numbers,
protocols, target ports, duplicates), the type and what it allows, the selector, the session
affinity, and cluster IPs that may not change.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import (
    label_causes,
)
from anyop.testing.fake.pod_rules import (
    PORT_RANGE,
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    required,
    unsupported,
)

__all__ = [
    "allocated",
    "port_name_errors",
    "kept_allocations",
    "service_causes",
    "service_update_causes",
]

Cause = dict[str, str]

_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES = ("ClientIP", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _shown(value: Any) -> str:
    """A value as ``field.Error`` shows it: a string quoted, a number as it is."""
    return go_quoted(value) if isinstance(value, str) else json.dumps(value)


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}


def _duplicate(field: str, shown: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {shown}"}


def _cluster_ips(spec: Mapping[str, Any]) -> list[str]:
    ips = spec.get("clusterIPs")
    if ips:
        return [str(ip) for ip in ips]
    return [str(spec["clusterIP"])] if spec.get("clusterIP") else []


def _headless(spec: Mapping[str, Any]) -> bool:
    ips = _cluster_ips(spec)
    return bool(ips) and ips[0] == "None"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def port_name_errors(name: str) -> list[str]:
    """``IsValidPortName``: an IANA service name."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not name or any(not ("a" <= c <= "z" or "0" <= c <= "9" or c == "-") for c in name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _port(
    port: Mapping[str, Any], where: str, *, require_name: bool, names: set[str]
) -> Iterator[tuple[str, Cause]]:
    """``validateServicePort``."""
    name = str(port.get("name") or "")
    if require_name and not name:
        yield required(f"{where}.name")
    elif name:
        yield from dns_label_causes(name, f"{where}.name")
        if name in names:
            yield _duplicate(f"{where}.name", go_quoted(name))
        names.add(name)
    number = port.get("port") or 0
    if not 1 <= number <= 65535:
        yield invalid(f"{where}.port", str(number), PORT_RANGE)
    protocol = str(port.get("protocol") or "")
    if not protocol:
        yield required(f"{where}.protocol")
    elif protocol not in _PROTOCOLS:
        yield unsupported(f"{where}.protocol", protocol, _PROTOCOLS)
    target = port.get("targetPort")
    if isinstance(target, str):
        for error in port_name_errors(target):
            yield invalid(f"{where}.targetPort", go_quoted(target), error)
    elif isinstance(target, int) and not 1 <= target <= 65535:
        yield invalid(f"{where}.targetPort", str(target), PORT_RANGE)


def _port_key(protocol: str, number: int) -> str:
    """The ``ServicePort`` a duplicate is reported with: Go's struct (no JSON tags) with only
    its protocol and port set."""
    key = {"Name": "", "Protocol": protocol, "AppProtocol": None, "Port": number,
           "TargetPort": 0, "NodePort": 0}  # fmt: skip
    return json.dumps(key, separators=(",", ":"))


def service_causes(obj: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a Service's spec (``validateService``), in Kubernetes' order."""
    spec = obj.get("spec") or {}
    kind = str(spec.get("type") or "")
    headless = _headless(spec)
    ports = [port for port in spec.get("ports") or () if isinstance(port, Mapping)]
    causes: list[tuple[str, Cause]] = []
    if not ports and not headless and kind != "ExternalName":
        causes.append(required("spec.ports"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        detail = f"may not be set to 'None' for {kind} services"
        causes.append(invalid("spec.clusterIPs[0]", '"None"', detail))
    elif kind == "ExternalName":
        if spec.get("clusterIPs"):  # (a create's lone clusterIP was made one: ``allocated``)
            causes.append(_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            causes.append(_forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy"):
            detail = "may not be set for ExternalName services"
            causes.append(_forbidden("spec.ipFamilyPolicy", detail))
        name = str(spec.get("externalName") or "").removesuffix(".")
        if not name:
            causes.append(required("spec.externalName"))
        else:
            causes += dns_subdomain_causes(name, "spec.externalName")
    names: set[str] = set()
    for index, port in enumerate(ports):
        causes += _port(port, f"spec.ports[{index}]", require_name=len(ports) > 1, names=names)
    selector = spec.get("selector")
    if isinstance(selector, Mapping):
        causes += label_causes(selector, "spec.selector")
    affinity = str(spec.get("sessionAffinity") or "")
    if not affinity:
        causes.append(required("spec.sessionAffinity"))
    elif affinity not in _AFFINITIES:
        causes.append(unsupported("spec.sessionAffinity", affinity, _AFFINITIES))
    if affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        detail = "must not be set when session affinity is None"
        causes.append(_forbidden("spec.sessionAffinityConfig", detail))
    if not kind:
        causes.append(required("spec.type"))
    elif kind not in _TYPES:
        causes.append(unsupported("spec.type", kind, _TYPES))
    if kind == "ClusterIP":
        for index, port in enumerate(ports):
            if port.get("nodePort"):
                detail = "may not be used when `type` is 'ClusterIP'"
                causes.append(_forbidden(f"spec.ports[{index}].nodePort", detail))
    node_ports: set[tuple[str, int]] = set()
    for index, port in enumerate(ports):
        node_port = port.get("nodePort") or 0
        if node_port:
            key = (str(port.get("protocol") or ""), node_port)
            if key in node_ports:
                causes.append(_duplicate(f"spec.ports[{index}].nodePort", str(node_port)))
            node_ports.add(key)
    seen: set[tuple[str, int]] = set()
    for index, port in enumerate(ports):
        pair = (str(port.get("protocol") or ""), int(port.get("port") or 0))
        if pair in seen:
            causes.append(_duplicate(f"spec.ports[{index}]", _port_key(*pair)))
        seen.add(pair)
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        detail = "may only be used when `type` is 'LoadBalancer'"
        causes.append(_forbidden("spec.allocateLoadBalancerNodePorts", detail))
    return causes


def _cluster_ip_causes(spec: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    causes = []
    for index, ip in enumerate(_cluster_ips(spec)):
        if (index > 0 or ip != "None") and not _is_ip(ip):
            detail = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            causes.append(invalid(f"spec.clusterIPs[{index}]", go_quoted(ip), detail))
    return causes


def allocated(
    spec: dict[str, Any], *, service_ip: Callable[[], str], creating: bool = True
) -> list[tuple[str, Cause]]:
    """What the Service storage's IP allocator does before anything is validated: a Service's
    spec (its write's own, filled in place) gets its cluster IPs (one from ``service_ip()``
    where it needs one and has none), IP family policy and families (``initIPFamilyFields``: a
    headless Service without a selector requires both families, this cluster serves IPv4
    alone). Returns the allocator's refusals: addresses that are none, families the cluster
    does not serve. A create's cluster IP given alone is made its list of them
    (``normalizeClusterIPs``; an update's are completed by :func:`kept_allocations`)."""
    if creating and spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    if spec.get("type") == "ExternalName":
        return []
    bare = spec.get("clusterIP") == "None" and not spec.get("selector")
    if not spec.get("ipFamilyPolicy"):
        spec["ipFamilyPolicy"] = "RequireDualStack" if bare else "SingleStack"
    if causes := _cluster_ip_causes(spec):
        return causes
    families = list(spec.get("ipFamilies") or ["IPv4"])
    if bare:
        if len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        return []
    causes = []
    if spec["ipFamilyPolicy"] == "RequireDualStack":
        detail = "this cluster is not configured for dual-stack services"
        causes.append(invalid("spec.ipFamilyPolicy", '"RequireDualStack"', detail))
    for index, family in enumerate(spec.get("ipFamilies") or ()):
        if family != "IPv4":
            detail = "not configured on this cluster"
            causes.append(invalid(f"spec.ipFamilies[{index}]", go_quoted(str(family)), detail))
    if causes:
        return causes
    spec["ipFamilies"] = families
    if not spec.get("clusterIP"):
        spec["clusterIP"] = service_ip()
        spec["clusterIPs"] = [spec["clusterIP"]]
    return []


def service_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[tuple[str, Cause]]:
    """What an update may not change (``validateUpgradeDowngradeClusterIPs``): the cluster IPs,
    but from or to an ExternalName Service, or between headless ones."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    if "ExternalName" in (before.get("type"), after.get("type")):
        return []
    if _headless(before) and _headless(after):
        return []
    old_ips, new_ips = _cluster_ips(before), _cluster_ips(after)
    shown = json.dumps(new_ips, separators=(",", ":")) if new_ips else "null"
    causes: list[tuple[str, Cause]] = []
    if len(old_ips) == len(new_ips):
        for index, ip in enumerate(old_ips):
            if ip != new_ips[index]:
                detail = "may not change once set"
                causes.append(invalid(f"spec.clusterIPs[{index}]", shown, detail))
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            detail = "primary clusterIP can not be unset"
            causes.append(invalid("spec.clusterIPs[0]", shown, detail))
        elif new_ips[0] != old_ips[0]:
            causes.append(invalid("spec.clusterIPs[0]", shown, "may not change once set"))
    return causes


def _needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def kept_allocations(old: Mapping[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A Service's update as its storage completes it before allocating
    (``patchAllocatedValues``, ``normalizeClusterIPs``): what the server allocated and the
    update leaves out (cluster IPs, node ports) taken from the old one, a changed cluster IP
    made the only one, the IP family policy kept; and what a type that turns ExternalName no
    longer needs dropped (``dropTypeDependentFields``). ``new`` is the update's own: filled in
    place."""
    before, after = old.get("spec") or {}, new.get("spec")
    if not isinstance(after, dict):
        return new
    if after.get("type") == "ExternalName" and before.get("type") != "ExternalName":
        ips = ("clusterIP", "clusterIPs")  # wiped together, where neither changed
        if all(after.get(field) == before.get(field) for field in ips):
            for field in ips:
                after.pop(field, None)
        for field in ("ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if after.get(field) == before.get(field):
                after.pop(field, None)
    if _needs_cluster_ip(before) and _needs_cluster_ip(after):
        if not after.get("clusterIP") and before.get("clusterIP"):
            after["clusterIP"] = before["clusterIP"]
        if not after.get("clusterIPs") and before.get("clusterIPs"):
            after["clusterIPs"] = list(before["clusterIPs"])
    node_types = ("NodePort", "LoadBalancer")
    if before.get("type") in node_types and after.get("type") in node_types:
        ports = [p for p in after.get("ports") or () if isinstance(p, dict)]
        used = {p.get("nodePort") for p in ports if p.get("nodePort")}
        by_name = {p.get("name") or "": p.get("nodePort") for p in before.get("ports") or ()}
        for port in ports:
            known = by_name.get(port.get("name") or "")
            if not port.get("nodePort") and known and known not in used:
                port["nodePort"] = known
    old_ip, new_ip = before.get("clusterIP") or "", after.get("clusterIP") or ""
    same = list(before.get("clusterIPs") or ()) == list(after.get("clusterIPs") or ())
    if before.get("clusterIPs") and not after.get("clusterIPs") and old_ip == new_ip:
        after["clusterIPs"] = list(before["clusterIPs"])
    elif old_ip != new_ip and same:
        if new_ip:
            after["clusterIPs"] = [new_ip]
        else:
            after.pop("clusterIPs", None)
    if (
        _needs_cluster_ip(after)
        and not after.get("ipFamilyPolicy")
        and before.get("ipFamilyPolicy")
    ):
        after["ipFamilyPolicy"] = before["ipFamilyPolicy"]
    return new
