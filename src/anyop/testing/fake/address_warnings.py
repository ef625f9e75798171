"""The warnings apimachinery and Kubernetes' API helpers give of values that are valid but
deprecated or ambiguous: IP addresses and CIDRs in non-standard forms, deprecated node labels
in selectors.

Pure: each takes a field's path (as Go's ``field.Path`` writes it) and the value as decoded,
and gives the warnings' texts, in Go's order.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.object_meta import label_value_errors

__all__ = [
    "sloppy_ip",
    "DEPRECATED_NODE_LABELS",
    "cidr_warnings",
    "ip_warnings",
    "node_selector_term_warnings",
    "node_selector_warnings",
]

DEPRECATED_NODE_LABELS: Mapping[str, str] = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region":
        'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone":
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type":
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
    "app.kubernetes.io/created-by": "deprecated since v1.9",
    "scheduler.alpha.kubernetes.io/preferAvoidPods":
        "deprecated since v1.22; use Taints and Tolerations instead",
    "node-role.kubernetes.io/master": 'use "node-role.kubernetes.io/control-plane" instead',
}  # fmt: skip
"""``pkg/api/node``'s deprecated node labels and what each warning says of it."""

_OCTETS = re.compile(r"^[0-9]+(\.[0-9]+){3}$")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def sloppy_ip(text: str) -> Address | None:
    """What ``netutils.ParseIPSloppy`` reads: IPv4 octets may have leading zeros (read as
    decimal); no IPv6 zone."""
    if _OCTETS.match(text):
        parts = [int(part) for part in text.split(".")]
        if any(part > 255 for part in parts):
            return None
        return ipaddress.IPv4Address(".".join(str(part) for part in parts))
    if ":" not in text or "%" in text:
        return None
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        return None


def _strict_ip(text: str) -> Address | None:
    """What ``netip.ParseAddr`` reads (no leading zeros in IPv4 octets); ``None`` if not."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _go_ip_string(address: Address) -> str:
    """``net.IP.String()``: an IPv4-mapped IPv6 address as its IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _mapped(address: Address | None) -> bool:
    return isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None


def ip_warnings(path: str, value: str) -> list[str]:
    """``GetWarningsForIP``: an address with leading zeros or IPv4-mapped (use its standard
    form), or an IPv6 address not in RFC 5952's canonical form."""
    sloppy = sloppy_ip(value)
    if sloppy is None:
        return []
    strict = _strict_ip(value)
    if strict is None or _mapped(strict):
        standard = _go_ip_string(sloppy)
        return [f'{path}: non-standard IP address "{value}" is invalid: use "{standard}"']
    if isinstance(strict, ipaddress.IPv6Address) and str(strict) != value:
        canonical = f'should be in RFC 5952 canonical format ("{strict}")'
        return [f'{path}: IPv6 address "{value}" {canonical}']
    return []


def cidr_warnings(path: str, value: str) -> list[str]:
    """``GetWarningsForCIDR``: bits set beyond the prefix length (ambiguous), leading zeros or
    an IPv4-mapped address (use the standard form), else an IPv6 CIDR not in canonical form."""
    text, slash, bits = value.partition("/")
    address = sloppy_ip(text)
    if not slash or address is None or not bits.isascii() or not bits.isdigit():
        return []
    length = int(bits)
    try:
        network = ipaddress.ip_network(f"{address}/{length}", strict=False)
    except ValueError:
        return []
    warnings = []
    size = 32 if isinstance(address, ipaddress.IPv4Address) else 128
    if address != network.network_address:
        single = f"{_go_ip_string(address)}/{size}"
        warnings.append(
            f'{path}: CIDR value "{value}" is ambiguous in this context (should be '
            f'"{network}" or "{single}"?)'
        )
    strict = _strict_ip(text)
    strict_bits = bits == "0" or not bits.startswith("0")
    if strict is None or not strict_bits or _mapped(strict):
        warnings.append(f'{path}: non-standard CIDR value "{value}" is invalid: use "{network}"')
    canonical = f"{strict}/{length}"
    if not warnings and isinstance(strict, ipaddress.IPv6Address) and canonical != value:
        warnings.append(
            f'{path}: IPv6 CIDR value "{value}" should be in RFC 5952 canonical format '
            f'("{canonical}")'
        )
    return warnings


def node_selector_term_warnings(term: Any, *, check_values: bool, path: str) -> list[str]:
    """``GetWarningsForNodeSelectorTerm``: each match expression's deprecated node label key,
    and (``check_values``, a preferred term) each of its values that is no label value."""
    warnings: list[str] = []
    expressions = (term or {}).get("matchExpressions") if isinstance(term, Mapping) else None
    for index, expression in enumerate(expressions or ()):
        expression = expression if isinstance(expression, Mapping) else {}
        key = str(expression.get("key") or "")
        where = f"{path}.matchExpressions[{index}]"
        if key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{where}.key: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if not check_values:
            continue
        for position, value in enumerate(expression.get("values") or ()):
            text = "" if value is None else str(value)
            for message in label_value_errors(text):
                warnings.append(f"{where}.values[{position}]: {text} is invalid, {message}")
    return warnings


def node_selector_warnings(selector: Any, path: str) -> list[str]:
    """``GetWarningsForNodeSelector`` (a label selector of nodes): each match expression's
    deprecated node label key, then each match label's (in Go's map order: random, so one at
    most is foreseeable)."""
    if not isinstance(selector, Mapping):
        return []
    warnings: list[str] = []
    for index, expression in enumerate(selector.get("matchExpressions") or ()):
        key = str((expression or {}).get("key") or "")
        if key in DEPRECATED_NODE_LABELS:
            message = DEPRECATED_NODE_LABELS[key]
            warnings.append(f"{path}.matchExpressions[{index}].key: {key} is {message}")
    for label in selector.get("matchLabels") or {}:
        if label in DEPRECATED_NODE_LABELS:
            warnings.append(f"{path}.matchLabels.{label}: {DEPRECATED_NODE_LABELS[label]}")
    return warnings
