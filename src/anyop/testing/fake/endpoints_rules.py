"""What kube-apiserver's Go code does with Endpoints (``v1``) beyond their schema: the default of
a port's protocol, and ``ValidateEndpoints``' checks with their messages, in its order.

Pure. An update checks the subsets only where they changed (``ValidateEndpointsUpdate``:
stored subsets that older servers took are not refused again); the fake's update path skips
the kind's checks of an unchanged object, which is the same for Endpoints, whose one field
beyond the metadata is ``subsets``. IP addresses are read as kube-apiserver 1.36 reads them:
sloppily first (IPv4 octets with leading zeros), then strictly (``StrictIPCIDRValidation`` is
on by default): neither leading zeros nor IPv4-mapped IPv6 addresses are taken.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.address_warnings import sloppy_ip
from anyop.testing.fake.field_errors import required_because
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.object_meta import (
    dns_label_errors,
    dns_subdomain_errors,
    label_key_errors,
    label_value_errors,
)
from anyop.testing.fake.pod_rules import (
    PORT_RANGE,
    dns_label_causes,
    invalid,
    required,
    unsupported,
)
from anyop.testing.fake.statuses import Cause

__all__ = [
    "endpoint_ip_causes",
    "endpoint_slice_causes",
    "endpoint_slice_defaults",
    "endpoints_causes",
    "endpoints_defaults",
    "ip_errors",
    "legacy_ip_causes",
    "strict_ip_causes",
]

Causes = list[tuple[str, Cause]]
Body = dict[str, Any]
IP = ipaddress.IPv4Address | ipaddress.IPv6Address

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_ANY_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def endpoints_defaults(obj: Body) -> None:
    """``SetDefaults_Endpoints``: a port without a protocol is TCP; in place."""
    for subset in obj.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"


def endpoints_causes(obj: Mapping[str, Any]) -> Causes:
    """``validateEndpointSubsets``: each subset's addresses, then its ports."""
    causes: Causes = []
    for index, subset in enumerate(obj.get("subsets") or []):
        subset = subset or {}
        path = f"subsets[{index}]"
        addresses, not_ready = subset.get("addresses") or [], subset.get("notReadyAddresses") or []
        if not addresses and not not_ready:
            causes.append(required_because(path, "must specify `addresses` or `notReadyAddresses`"))
        for name, listed in (("addresses", addresses), ("notReadyAddresses", not_ready)):
            for number, address in enumerate(listed):
                causes += _address_causes(address or {}, f"{path}.{name}[{number}]")
        ports = subset.get("ports") or []
        for number, port in enumerate(ports):
            causes += _port_causes(port or {}, f"{path}.ports[{number}]", named=len(ports) > 1)
    return causes


def _address_causes(address: Mapping[str, Any], path: str) -> Causes:
    """``validateEndpointAddress``: the IP as a legacy field, the hostname, the node's name,
    then the IP as an endpoint's."""
    ip = str(address.get("ip") or "")
    causes = legacy_ip_causes(ip, f"{path}.ip")
    if hostname := address.get("hostname"):
        causes += dns_label_causes(str(hostname), f"{path}.hostname")
    if (node := address.get("nodeName")) is not None:
        shown = go_marshalled(str(node))
        causes += [
            invalid(f"{path}.nodeName", shown, error) for error in dns_subdomain_errors(node)
        ]
    return causes + endpoint_ip_causes(ip, f"{path}.ip")


def _port_causes(port: Mapping[str, Any], path: str, *, named: bool) -> Causes:
    """``validateEndpointPort``: the name (required where the subset has several ports), the
    number, the protocol, the application protocol."""
    causes: Causes = []
    name = str(port.get("name") or "")
    if named and not name:
        causes.append(required(f"{path}.name"))
    elif name:
        causes += dns_label_causes(name, f"{path}.name")
    number = port.get("port") or 0
    if not 1 <= number <= 65535:
        causes.append(invalid(f"{path}.port", str(number), PORT_RANGE))
    protocol = str(port.get("protocol") or "")
    if not protocol:
        causes.append(required(f"{path}.protocol"))
    elif protocol not in _PROTOCOLS:
        causes.append(unsupported(f"{path}.protocol", protocol, _PROTOCOLS))
    if (app := port.get("appProtocol")) is not None:
        shown = go_marshalled(str(app))
        causes += [invalid(f"{path}.appProtocol", shown, error) for error in label_key_errors(app)]
    return causes


def ip_errors(text: str, *, strict: bool) -> list[str]:
    """The details of ``IsValidIPForLegacyField`` (strict): an IP address, no leading zeros,
    not an IPv4 address mapped into IPv6; ``strict``: ``IsValidIP``'s, its canonical form too."""
    ip = sloppy_ip(text)
    if ip is None:
        return [_ANY_IP]
    errors: list[str] = []
    if isinstance(ip, ipaddress.IPv4Address) and str(ip) != text:
        errors.append("must not have leading 0s")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        errors.append("must not be an IPv4-mapped IPv6 address")
    if strict and not errors:
        canonical = str(ip.ipv4_mapped or ip) if isinstance(ip, ipaddress.IPv6Address) else str(ip)
        if canonical != text:
            errors.append(f"must be in canonical form ({go_marshalled(canonical)})")
    return errors


def legacy_ip_causes(text: str, where: str) -> Causes:
    """``IsValidIPForLegacyField`` (strict), as causes (see :func:`ip_errors`)."""
    return [invalid(where, go_marshalled(text), e) for e in ip_errors(text, strict=False)]


def endpoint_ip_causes(text: str, where: str) -> Causes:
    """``ValidateEndpointIP``: an IP address that is neither unspecified, nor loopback, nor
    link-local (unicast or multicast)."""
    ip = sloppy_ip(text)
    shown = go_marshalled(text)
    if ip is None:
        return [invalid(where, shown, "must be a valid IP address")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # Go's net.IP reads it as the IPv4 address
    causes: Causes = []
    if ip.is_unspecified:
        causes.append(invalid(where, shown, f"may not be unspecified ({text})"))
    if ip.is_loopback:
        causes.append(
            invalid(where, shown, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
        )
    if _link_local_unicast(ip):
        causes.append(
            invalid(where, shown, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        )
    if _link_local_multicast(ip):
        detail = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
        causes.append(invalid(where, shown, detail))
    return causes


def _link_local_unicast(ip: IP) -> bool:
    """Go's ``IsLinkLocalUnicast``: 169.254.0.0/16, fe80::/10."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip.packed[:2] == b"\xa9\xfe"
    return ip.packed[0] == 0xFE and ip.packed[1] & 0xC0 == 0x80


def _link_local_multicast(ip: IP) -> bool:
    """Go's ``IsLinkLocalMulticast``: 224.0.0.0/24, and IPv6 multicast of link-local scope."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip.packed[:3] == b"\xe0\x00\x00"
    return ip.packed[0] == 0xFF and ip.packed[1] & 0x0F == 0x02


# -- EndpointSlices (discovery.k8s.io/v1) -------------------------------------------------------

_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
_MAX_ENDPOINTS, _MAX_ADDRESSES, _MAX_HINTS = 1000, 100, 8


def endpoint_slice_defaults(obj: Body) -> None:
    """``SetDefaults_EndpointPort`` (a port's name ``""``, its protocol TCP), and the
    strategy's ``dropTopologyOnV1``: ``v1`` requests' ``deprecatedTopology`` is dropped (only
    ``v1`` is served, so no stored object has any); in place."""
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("name", "")
            if port.get("protocol") is None:
                port["protocol"] = "TCP"
    for endpoint in obj.get("endpoints") or []:
        if isinstance(endpoint, dict):
            endpoint.pop("deprecatedTopology", None)


def _too_many(field: str, count: int, limit: int) -> tuple[str, Cause]:
    """``field.TooMany``."""
    message = f"Too many: {count}: must have at most {limit} items"
    return field, {"reason": "FieldValueTooMany", "message": message}


def endpoint_slice_causes(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> Causes:
    """``ValidateEndpointSlice`` beyond the metadata: the address type, the ports, then the
    endpoints (not checked again on an update that leaves them as they were); on an update,
    the address type that may not change, last."""
    address_type = str(obj.get("addressType") or "")
    causes: Causes = []
    if not address_type:
        causes.append(required("addressType"))
    elif address_type not in _ADDRESS_TYPES:
        causes.append(unsupported("addressType", address_type, _ADDRESS_TYPES))
    causes += _slice_ports(obj.get("ports") or [])
    endpoints = obj.get("endpoints") or []
    if old is None or endpoints != (old.get("endpoints") or []):
        causes += _slice_endpoints(endpoints, address_type)
    if old is not None and address_type != str(old.get("addressType") or ""):
        causes.append(invalid("addressType", go_marshalled(address_type), "field is immutable"))
    return causes


def _slice_ports(ports: list[Any]) -> Causes:
    """``validatePorts``: names (DNS labels, each once), protocols, application protocols."""
    causes: Causes = []
    names: list[str] = []
    for index, port in enumerate(ports):
        port, path = port or {}, f"ports[{index}]"
        name = str(port.get("name") or "")
        if name:
            causes += dns_label_causes(name, f"{path}.name")
        if name in names:
            duplicate = f"Duplicate value: {go_marshalled(name)}"
            causes.append((f"{path}.name", {"reason": "FieldValueDuplicate", "message": duplicate}))
        else:
            names.append(name)
        protocol = port.get("protocol")
        if protocol is None:
            causes.append(required(f"{path}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(unsupported(f"{path}.protocol", str(protocol), _PROTOCOLS))
        if (app := port.get("appProtocol")) is not None:
            shown = go_marshalled(str(app))
            causes += [
                invalid(f"{path}.appProtocol", shown, error) for error in label_key_errors(app)
            ]
    return causes


def _slice_endpoints(endpoints: list[Any], address_type: str) -> Causes:
    """``validateEndpoints``: each endpoint's addresses by the slice's type, node name,
    hostname and hints (its topology labels are dropped before, see
    :func:`endpoint_slice_defaults`)."""
    if len(endpoints) > _MAX_ENDPOINTS:
        return [_too_many("endpoints", len(endpoints), _MAX_ENDPOINTS)]
    causes: Causes = []
    for index, endpoint in enumerate(endpoints):
        endpoint, path = endpoint or {}, f"endpoints[{index}]"
        addresses = endpoint.get("addresses") or []
        if not addresses:
            causes.append(required_because(f"{path}.addresses", "must contain at least 1 address"))
        elif len(addresses) > _MAX_ADDRESSES:
            causes.append(_too_many(f"{path}.addresses", len(addresses), _MAX_ADDRESSES))
        for number, address in enumerate(addresses):
            text = "" if address is None else str(address)  # a null reads as ""
            causes += _slice_address(text, address_type, f"{path}.addresses", number)
        if (node := endpoint.get("nodeName")) is not None:
            shown = go_marshalled(str(node))
            errors = dns_subdomain_errors(str(node))
            causes += [invalid(f"{path}.nodeName", shown, error) for error in errors]
        if (hostname := endpoint.get("hostname")) is not None:
            causes += dns_label_causes(str(hostname), f"{path}.hostname")
        if (hints := endpoint.get("hints")) is not None:
            causes += _hints(hints or {}, f"{path}.hints")
    return causes


def _slice_address(address: str, address_type: str, path: str, number: int) -> Causes:
    """One address as its slice's type reads it: an IPv4 one as a legacy field, an IPv6 one
    strictly, each then of its family and an endpoint's; an FQDN; an unknown type's not."""
    where = f"{path}[{number}]"
    if address_type == "FQDN":
        return _fqdn_causes(address, where)
    if address_type not in _IP_TYPES:
        return []
    parsed, family = _IP_TYPES[address_type]
    if causes := parsed(address, where):
        return causes
    if not isinstance(sloppy_ip(address), family):
        causes.append(invalid(path, go_marshalled(address), f"must be an {address_type} address"))
    return causes + endpoint_ip_causes(address, where)


def strict_ip_causes(text: str, where: str) -> Causes:
    """``validation.IsValidIP``: :func:`legacy_ip_causes`, then the canonical form."""
    return [invalid(where, go_marshalled(text), e) for e in ip_errors(text, strict=True)]


_IP_TYPES: dict[str, tuple[Callable[[str, str], Causes], type]] = {
    "IPv4": (legacy_ip_causes, ipaddress.IPv4Address),
    "IPv6": (strict_ip_causes, ipaddress.IPv6Address),
}
"""How an EndpointSlice's address type reads its addresses: the check, then the family."""


def _fqdn_causes(name: str, where: str) -> Causes:
    """``IsFullyQualifiedDomainName``: a subdomain (a final dot allowed) of two labels or more."""
    if not name:
        return [required(where)]
    name = name.removesuffix(".")
    if errors := dns_subdomain_errors(name):
        return [invalid(where, go_marshalled(name), ",".join(errors))]
    if len(name.split(".")) < 2:
        detail = "should be a domain with at least two segments separated by dots"
        return [invalid(where, go_marshalled(name), detail)]
    for label in name.split("."):
        if errors := dns_label_errors(label):
            return [invalid(where, go_marshalled(label), ",".join(errors))]
    return []


def _hints(hints: Mapping[str, Any], path: str) -> Causes:
    """``validateHints``: zones (label values, each once), then nodes (node names, each once)."""
    causes: Causes = []
    for field, check in (("forZones", label_value_errors), ("forNodes", dns_subdomain_errors)):
        items = hints.get(field) or []
        if len(items) > _MAX_HINTS:
            return [*causes, _too_many(f"{path}.{field}", len(items), _MAX_HINTS)]
        seen: list[str] = []
        for index, item in enumerate(items):
            name, where = str((item or {}).get("name") or ""), f"{path}.{field}[{index}].name"
            if name in seen:
                duplicate = f"Duplicate value: {go_marshalled(name)}"
                causes.append((where, {"reason": "FieldValueDuplicate", "message": duplicate}))
            else:
                seen.append(name)
            causes += [invalid(where, go_marshalled(name), error) for error in check(name)]
    return causes
