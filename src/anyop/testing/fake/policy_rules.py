"""The checks kube-apiserver makes of the objects that set policy around workloads: a
PodDisruptionBudget's budget, a NetworkPolicy's peers, ports and CIDRs, a Role's or a
ClusterRole's rules.

Pure: each takes the decoded object and gives its errors as ``(field, cause)`` pairs, in the
order of Kubernetes' validation (``pkg/apis/{policy,networking,rbac}/validation``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import (
    PERCENT,
    PERCENT_HINT,
)
from anyop.testing.fake.pod_rules import PORT_RANGE, invalid, required, unsupported
from anyop.testing.fake.selector_rules import label_selector_causes
from anyop.testing.fake.service_rules import port_name_errors

__all__ = [
    "cidr_errors",
    "int_or_percent_causes",
    "network_policy_causes",
    "network_policy_defaults",
    "pdb_causes",
    "role_causes",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]

_NEGATIVE = "must be greater than or equal to 0"
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_POLICY_TYPES = ("Ingress", "Egress")
_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _shown(value: Any) -> str:
    """A value as a field error shows it: a string quoted, anything else as Go's JSON (a
    struct's fields in the order given)."""
    if isinstance(value, str):
        return go_quoted(value)
    return go_marshalled(value, sort_keys=False)


def _go_selector(selector: Any) -> Any:
    """A label selector in its Go struct's order (as ``json.Marshal`` writes it): its labels
    (a map: by key), then its expressions, each as key, operator, values."""
    if not isinstance(selector, Mapping):
        return selector
    ordered = {key: selector[key] for key in ("matchLabels", "matchExpressions") if key in selector}
    if isinstance(ordered.get("matchLabels"), Mapping):
        ordered["matchLabels"] = dict(sorted(ordered["matchLabels"].items()))
    if isinstance(ordered.get("matchExpressions"), list):
        ordered["matchExpressions"] = [
            {key: item[key] for key in ("key", "operator", "values") if key in item}
            if isinstance(item, Mapping) else item
            for item in ordered["matchExpressions"]
        ]  # fmt: skip
    return ordered


def int_or_percent_causes(value: Any, path: str) -> Causes:
    """``ValidatePositiveIntOrPercent`` then ``IsNotMoreThan100Percent`` of an IntOrString."""
    if isinstance(value, str):
        if not PERCENT.match(value):
            return [invalid(path, go_quoted(value), PERCENT_HINT)]
        if int(value[:-1]) > 100:
            return [invalid(path, go_quoted(value), "must not be greater than 100%")]
        return []
    if isinstance(value, int) and value < 0:
        return [invalid(path, str(value), _NEGATIVE)]
    return []


def pdb_causes(obj: Mapping[str, Any]) -> Causes:
    """``ValidatePodDisruptionBudgetSpec``."""
    spec = obj.get("spec") or {}
    causes: Causes = []
    available, unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if available is not None and unavailable is not None:
        # The value shown is Go's internal spec, as JSON without tags.
        struct = {"MinAvailable": available, "Selector": _go_selector(spec.get("selector")),
                  "MaxUnavailable": unavailable,
                  "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")}  # fmt: skip
        detail = "minAvailable and maxUnavailable cannot be both set"
        causes.append(invalid("spec", _shown(struct), detail))
    for field, value in (("minAvailable", available), ("maxUnavailable", unavailable)):
        if value is not None:
            causes += int_or_percent_causes(value, f"spec.{field}")
    causes += label_selector_causes(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        causes.append(
            unsupported("spec.unhealthyPodEvictionPolicy", str(policy), _EVICTION_POLICIES)
        )
    return causes


def network_policy_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_NetworkPolicy`` and its ports' (in place): a port's protocol is TCP, and
    the policy types, if none, are Ingress, and Egress where there are egress rules."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or ():
            for port in (rule.get("ports") or ()) if isinstance(rule, dict) else ():
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", *(("Egress",) if spec.get("egress") else ())]


def network_policy_causes(obj: Mapping[str, Any]) -> Causes:
    """``ValidateNetworkPolicySpec``: the pod selector, each ingress rule's ports and peers,
    each egress rule's, then the policy types."""
    spec = obj.get("spec") or {}
    causes: Causes = list(label_selector_causes(spec.get("podSelector") or {}, "spec.podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(spec.get(direction) or ()):
            where, rule = f"spec.{direction}[{index}]", rule or {}  # null: a zero rule
            for number, port in enumerate(rule.get("ports") or ()):
                causes += _port(port or {}, f"{where}.ports[{number}]")
            for number, peer in enumerate(rule.get(peers) or ()):
                causes += _peer(peer or {}, f"{where}.{peers}[{number}]")
    types = spec.get("policyTypes") or []
    if len(types) > len(_POLICY_TYPES):
        causes.append(
            invalid("spec.policyTypes", _shown(types), "may not specify more than two policyTypes")
        )
        return causes
    for index, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            causes.append(unsupported(f"spec.policyTypes[{index}]", str(kind), _POLICY_TYPES))
    return causes


def _port(port: Mapping[str, Any], where: str) -> Causes:
    """``ValidateNetworkPolicyPort``."""
    causes: Causes = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        causes.append(unsupported(f"{where}.protocol", str(protocol), _PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int):
        if not 1 <= number <= 65535:
            causes.append(invalid(f"{where}.port", str(number), PORT_RANGE))
        if end is not None:
            if end < number:
                detail = "must be greater than or equal to `port`"
                causes.append(invalid(f"{where}.endPort", str(number), detail))
            if not 1 <= end <= 65535:
                causes.append(invalid(f"{where}.endPort", str(end), PORT_RANGE))
    elif isinstance(number, str):
        if end is not None:
            detail = "may not be specified when `port` is non-numeric"
            causes.append(invalid(f"{where}.endPort", str(end), detail))
        causes += [invalid(f"{where}.port", go_quoted(number), e) for e in port_name_errors(number)]
    elif end is not None:
        detail = "may not be specified when `port` is not specified"
        causes.append(invalid(f"{where}.endPort", str(end), detail))
    return causes


def _peer(peer: Mapping[str, Any], where: str) -> Causes:
    """``ValidateNetworkPolicyPeer``: each selector, the IP block, then how many are given."""
    causes: Causes = []
    given = 0
    for field in ("podSelector", "namespaceSelector"):
        if peer.get(field) is not None:
            given += 1
            causes += label_selector_causes(peer[field], f"{where}.{field}")
    block = peer.get("ipBlock")
    if block is not None:
        given += 1
        causes += _ip_block(block, f"{where}.ipBlock")
    if given == 0:
        causes.append(required_because(where, "must specify a peer"))
    elif given > 1 and block is not None:
        causes.append(forbidden(where, "may not specify both ipBlock and another peer"))
    return causes


def _ip_block(block: Mapping[str, Any], where: str) -> Causes:
    """``ValidateIPBlock``: the CIDR, then each exception: a CIDR strictly inside it."""
    cidr = str(block.get("cidr") or "")
    if not cidr:
        return [required(f"{where}.cidr")]
    causes = [invalid(f"{where}.cidr", go_quoted(cidr), e) for e in cidr_errors(cidr)]
    outer = _sloppy_network(cidr)
    if outer is None:
        return causes
    for index, item in enumerate(block.get("except") or ()):
        path, text = f"{where}.except[{index}]", "" if item is None else str(item)
        causes += [invalid(path, go_quoted(text), e) for e in cidr_errors(text)]
        inner = _sloppy_network(text)
        if inner is None:
            continue
        inside = inner.version == outer.version and inner.network_address in outer
        if not inside or outer.prefixlen >= inner.prefixlen:
            causes.append(invalid(path, go_quoted(text), "must be a strict subset of `cidr`"))
    return causes


_OCTETS = re.compile(r"^[0-9]+(\.[0-9]+){3}$")


def _sloppy_network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """What ``netutils.ParseCIDRSloppy`` reads (leading zeros allowed), masked; else None."""
    address, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit():
        return None
    try:
        if _OCTETS.match(address):
            parts = [int(part) for part in address.split(".")]
            if any(part > 255 for part in parts):
                return None
            address = ".".join(str(part) for part in parts)
        elif ":" not in address:
            return None
        return ipaddress.ip_network(f"{address}/{int(bits)}", strict=False)
    except ValueError:
        return None


def cidr_errors(text: str) -> list[str]:
    """``IsValidCIDRForLegacyField`` with strict validation (the default since 1.36)."""
    network = _sloppy_network(text)
    if network is None:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    address, _, bits = text.partition("/")
    octets = address.split(".") if _OCTETS.match(address) else []
    if any(len(part) > 1 and part.startswith("0") for part in [*octets, bits]):
        return ["must not have leading 0s in IP or prefix length"]
    host = ipaddress.ip_address(address)
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped is not None:
        return ["must not have an IPv4-mapped IPv6 address"]
    if host != network.network_address:
        return ["must not have bits set beyond the prefix length"]
    return []


def role_causes(obj: Mapping[str, Any], *, namespaced: bool) -> Causes:
    """``ValidateRole``'s or ``ValidateClusterRole``'s: each rule (``ValidatePolicyRule``),
    then a ClusterRole's aggregation rule."""
    causes: Causes = []
    for index, rule in enumerate(obj.get("rules") or ()):
        if isinstance(rule, Mapping) or rule is None:  # a null item decodes as a zero rule
            causes += _rule(rule or {}, f"rules[{index}]", namespaced=namespaced)
    aggregation = obj.get("aggregationRule")
    if not namespaced and isinstance(aggregation, Mapping):
        selectors = aggregation.get("clusterRoleSelectors") or []
        where = "aggregationRule.clusterRoleSelectors"
        if not selectors:
            detail = "at least one clusterRoleSelector required if aggregationRule is non-nil"
            causes.append(required_because(where, detail))
        for index, selector in enumerate(selectors):
            problems = list(label_selector_causes(selector, f"{where}[{index}]"))
            causes += problems
            if problems:  # nor does it convert to a selector (which Go then shows, nil)
                causes.append(invalid(f"{where}[{index}]", "null", "invalid label selector."))
    return causes


def _rule(rule: Mapping[str, Any], where: str, *, namespaced: bool) -> Causes:
    causes: Causes = []
    if not rule.get("verbs"):
        causes.append(required_because(f"{where}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        shown = _shown(urls)
        if namespaced:
            detail = "namespaced rules cannot apply to non-resource URLs"
            causes.append(invalid(f"{where}.nonResourceURLs", shown, detail))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            detail = "rules cannot apply to both regular resources and non-resource URLs"
            causes.append(invalid(f"{where}.nonResourceURLs", shown, detail))
        return causes
    if not rule.get("apiGroups"):
        causes.append(
            required_because(
                f"{where}.apiGroups", "resource rules must supply at least one api group"
            )
        )
    if not rule.get("resources"):
        causes.append(
            required_because(
                f"{where}.resources", "resource rules must supply at least one resource"
            )
        )
    return causes
