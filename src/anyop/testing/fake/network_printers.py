"""The cells of network kinds' Table rows (Endpoints, EndpointSlices, Ingresses, IngressClasses,
ServiceCIDRs, IPAddresses), as kube-apiserver's printers compute them.

Pure, as :mod:`~anyop.testing.fake.printers` (whose helpers they share).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.printers import Age, Printed, member

__all__ = ["NETWORK_PRINTERS"]

_SHOWN = 3  # how many addresses, ports or hosts a cell lists before "+ N more..."
_DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"


def _name(obj: Mapping[str, Any]) -> str:
    return str(member(obj, "metadata", "name") or "")


def _age(obj: Mapping[str, Any], age: Age) -> str:
    return age(member(obj, "metadata", "creationTimestamp"))


def _listed(items: list[str], count: int, *, empty: str = "<unset>") -> str:
    """At most three items, then ``+ N more...`` (``listWithMoreString``)."""
    text = ",".join(items[:_SHOWN])
    if count > _SHOWN:
        return f"{text} + {count - _SHOWN} more..."
    return text or empty


def _host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _endpoints(obj: Mapping[str, Any], age: Age) -> Printed:
    subsets = obj.get("subsets") or []
    found: list[str] = []
    for subset in subsets:
        ips = [str(address.get("ip", "")) for address in subset.get("addresses") or ()]
        ports = subset.get("ports") or []
        if not ports:
            found.extend(ips)
        for port in ports:
            found.extend(_host_port(ip, port.get("port", 0)) for ip in ips)
    text = _listed(found, len(found), empty="") if subsets else "<none>"
    return [_name(obj), text, _age(obj, age)], []


def _slice_port(port: Mapping[str, Any]) -> str:
    """A port's number, else its name (defaulted to "" when stored: Go's "*" for neither does
    not happen)."""
    if port.get("port") is not None:
        return str(port["port"])
    return str(port.get("name") or "")


def _endpoint_slice(obj: Mapping[str, Any], age: Age) -> Printed:
    ports = [_slice_port(port) for port in obj.get("ports") or ()]
    addresses = [str(a) for e in obj.get("endpoints") or () for a in e.get("addresses") or ()]
    cells = [_name(obj), str(obj.get("addressType") or ""), _listed(ports, len(ports)),
             _listed(addresses, len(addresses)), _age(obj, age)]  # fmt: skip
    return cells, []


def _hosts(rules: list[Mapping[str, Any]]) -> str:
    hosts: list[str] = []
    more = False
    for rule in rules:
        more = more or len(hosts) == _SHOWN
        if not more and rule.get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - _SHOWN} more..." if more else "")


def _ingress(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    balanced = member(obj, "status", "loadBalancer", "ingress") or []
    addresses = {item.get("ip") or item.get("hostname") for item in balanced}
    address = ",".join(sorted(a for a in addresses if a))
    ports = "80, 443" if spec.get("tls") else "80"
    cells = [_name(obj), spec.get("ingressClassName") or "<none>",
             _hosts(spec.get("rules") or []), address, ports, _age(obj, age)]  # fmt: skip
    return cells, []


def _ingress_class(obj: Mapping[str, Any], age: Age) -> Printed:
    name = _name(obj)
    if (member(obj, "metadata", "annotations") or {}).get(_DEFAULT_CLASS) == "true":
        name += " (default)"
    parameters = member(obj, "spec", "parameters")
    shown = "<none>"
    if parameters is not None:
        group = f".{parameters['apiGroup']}" if parameters.get("apiGroup") is not None else ""
        shown = f"{parameters.get('kind', '')}{group}/{parameters.get('name', '')}"
    controller = str(member(obj, "spec", "controller") or "")
    return [name, controller, shown, _age(obj, age)], []


def _service_cidr(obj: Mapping[str, Any], age: Age) -> Printed:
    cidrs = ",".join(member(obj, "spec", "cidrs") or ())
    return [_name(obj), cidrs, _age(obj, age)], []


def _ip_address(obj: Mapping[str, Any], age: Age) -> Printed:
    ref = member(obj, "spec", "parentRef")
    parent = "<none>"
    if ref is not None:
        group = f".{ref['group']}" if ref.get("group") else ""
        parent = f"{ref.get('resource', '')}{group}".lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name', '')}"
    return [_name(obj), parent, _age(obj, age)], []


NETWORK_PRINTERS: dict[tuple[str, str], Callable[[Mapping[str, Any], Age], Printed]] = {
    ("", "endpoints"): _endpoints,
    ("discovery.k8s.io", "endpointslices"): _endpoint_slice,
    ("networking.k8s.io", "ingresses"): _ingress,
    ("networking.k8s.io", "ingressclasses"): _ingress_class,
    ("networking.k8s.io", "servicecidrs"): _service_cidr,
    ("networking.k8s.io", "ipaddresses"): _ip_address,
}
"""Printers by (group, plural), as :data:`~anyop.testing.fake.printers.PRINTERS`."""
