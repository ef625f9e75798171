"""What kube-apiserver's Go code checks of ServiceCIDRs and IPAddresses
(``networking.k8s.io/v1``) beyond their schemas, with its messages and in its order.

Pure. :data:`CREATES` is ``ValidateServiceCIDR`` (one or two CIDRs, each valid and canonical,
two of different families) and ``ValidateIPAddress`` (a parent reference: its resource and
name path segments, its group a subdomain) beyond the metadata (an IPAddress's name is an IP
address in canonical form: :mod:`.object_names`); :data:`UPDATES` their ``ValidateUpdate``: a
ServiceCIDR's CIDRs unchanged but for a second added to the first, an IPAddress's parent
reference unchanged. The objects are decoded (typed) already.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anyop.testing.fake.endpoints_rules import ip_errors
from anyop.testing.fake.field_errors import path_segment_errors, required_because
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import dns_subdomain_errors
from anyop.testing.fake.pod_rules import invalid, required
from anyop.testing.fake.policy_rules import cidr_errors

__all__ = ["CREATES", "DEFAULTERS", "UPDATES", "ip_name_errors"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_IMMUTABLE = "field is immutable"
_FAMILIES = (
    "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
)


def ip_name_errors(name: str, prefix: bool) -> list[str]:
    """``ValidateIPAddressName``: an IP address in canonical form (a ``generateName`` too:
    an IPAddress's name is never generated)."""
    del prefix
    return ip_errors(name, strict=True)


def _cidr_causes(cidr: str, where: str) -> Causes:
    """``IsValidCIDR``: valid (strictly), then canonical."""
    errors = cidr_errors(cidr)
    if errors:
        return [invalid(where, go_quoted(cidr), error) for error in errors]
    canonical = str(ipaddress.ip_network(cidr, strict=False))
    if canonical != cidr:
        return [
            invalid(where, go_quoted(cidr), f"must be in canonical form ({go_quoted(canonical)})")
        ]
    return []


def _family(cidr: str) -> int | None:
    try:
        return ipaddress.ip_network(cidr, strict=False).version
    except ValueError:
        return None


def _cidrs(cidrs: list[Any]) -> Causes:
    """``validateServiceCIDRSpec``."""
    where = "spec.cidrs"
    if not cidrs:
        return [required_because(where, "at least one CIDR required")]
    if len(cidrs) > 2:
        shown = json.dumps({"CIDRs": cidrs}, separators=(",", ":"))
        return [invalid(where, shown, "may only hold up to 2 values")]
    causes: Causes = []
    for index, cidr in enumerate(cidrs):
        causes += _cidr_causes(str(cidr), f"{where}[{index}]")
    families = [_family(str(cidr)) for cidr in cidrs]
    if len(cidrs) == 2 and families[0] == families[1] and families[0] is not None:
        causes.append(invalid(where, go_marshalled(list(cidrs)), _FAMILIES))
    return causes


def _service_cidr(obj: Mapping[str, Any]) -> Causes:
    return _cidrs(list((obj.get("spec") or {}).get("cidrs") or ()))


def _service_cidr_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateServiceCIDRUpdate``: the CIDRs may not change, but a second one be added."""
    before = list((old.get("spec") or {}).get("cidrs") or ())
    after = list((new.get("spec") or {}).get("cidrs") or ())
    if len(before) == len(after):
        return [invalid(f"spec.cidrs[{index}]", go_quoted(str(cidr)), _IMMUTABLE)
                for index, (cidr, was) in enumerate(zip(after, before, strict=True))
                if cidr != was]  # fmt: skip
    if len(before) == 1 and len(after) == 2:
        causes: Causes = []
        if after[0] != before[0]:
            causes.append(invalid("spec.cidrs[0]", go_quoted(str(after[0])), _IMMUTABLE))
        return causes + _cidrs(after)
    return [invalid("spec.cidrs", go_marshalled(after or None), _IMMUTABLE)]


def _ip_address(obj: Mapping[str, Any]) -> Causes:
    """``validateIPAddressParentReference``."""
    ref = (obj.get("spec") or {}).get("parentRef")
    if ref is None:
        return [required("spec.parentRef")]
    where = "spec.parentRef"
    causes: Causes = []
    group = str(ref.get("group") or "")
    causes += [invalid(f"{where}.group", go_quoted(group), error)
               for error in (dns_subdomain_errors(group) if group else ())]  # fmt: skip
    for field in ("resource", "name", "namespace"):
        value = str(ref.get(field) or "")
        if not value and field != "namespace":
            causes.append(required(f"{where}.{field}"))
        elif value:
            causes += [invalid(f"{where}.{field}", go_quoted(value), error)
                       for error in path_segment_errors(value)]  # fmt: skip
    return causes


def _ip_address_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateIPAddressUpdate``: the parent reference unchanged (and no other check)."""
    ref = (new.get("spec") or {}).get("parentRef")
    if ref == (old.get("spec") or {}).get("parentRef"):
        return []
    # Shown as Go's internal struct, as JSON without tags: its fields' names, in its order.
    fields = ("group", "resource", "namespace", "name")
    shown = "null" if ref is None else "{" + ",".join(
        f'"{field.capitalize()}":{go_marshalled(str(ref.get(field) or ""))}' for field in fields
    ) + "}"  # fmt: skip
    return [invalid("spec.parentRef", shown, _IMMUTABLE)]


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {}
"""(``networking.k8s.io/v1`` defaults neither.)"""
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[Any]]] = {
    ("networking.k8s.io", "ServiceCIDR"): _service_cidr,
    ("networking.k8s.io", "IPAddress"): _ip_address,
}
UPDATES: dict[tuple[str, str], Callable[..., Iterable[Any]]] = {
    ("networking.k8s.io", "ServiceCIDR"): _service_cidr_update,
    ("networking.k8s.io", "IPAddress"): _ip_address_update,
}
