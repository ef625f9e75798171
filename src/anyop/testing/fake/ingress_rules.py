"""What kube-apiserver's Go code checks of an Ingress, with its messages.

Pure. ``ValidateIngressSpec`` as operators meet it: rules or a default backend; each rule's host
(a DNS name or a wildcard one, not an address), each path (its type, and an absolute path where
the type needs one) and its backend (a service by name, with a port by name or number); the TLS
hosts and secret names; the class name.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import (
    WILDCARD_SUBDOMAIN,
    WILDCARD_SUBDOMAIN_HINT,
)
from anyop.testing.fake.pod_rules import (
    PORT_RANGE,
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    required,
    unsupported,
)
from anyop.testing.fake.service_rules import port_name_errors

__all__ = ["ingress_causes"]

Cause = dict[str, str]

_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_BAD_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_BAD_SUFFIXES = ("/..", "/.")


def _host(host: str, where: str) -> Iterator[tuple[str, Cause]]:
    """A host of a rule or of TLS: a DNS subdomain, or a wildcard one."""
    if "*" in host:
        if len(host) > 253:
            yield invalid(where, go_quoted(host), "must be no more than 253 characters")
        if not WILDCARD_SUBDOMAIN.match(host):
            yield invalid(where, go_quoted(host), WILDCARD_SUBDOMAIN_HINT)
    else:
        yield from dns_subdomain_causes(host, where)


def _backend(backend: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        yield invalid(where, '""', "cannot set both resource and service backends")
        return
    if service is None:
        if resource is None:
            yield invalid(where, '""', "resource or service backend is required")
        return
    name = str(service.get("name") or "")
    if not name:
        yield required(f"{where}.service.name")
    else:
        yield from dns_label_causes(name, f"{where}.service.name")
    port = service.get("port") or {}
    port_name, number = str(port.get("name") or ""), port.get("number") or 0
    if port_name and number:
        yield invalid(where, '""', "cannot set both port name & port number")
    elif port_name:
        for error in port_name_errors(port_name):
            yield invalid(f"{where}.service.port.name", go_quoted(port_name), error)
    elif number:
        if not 1 <= number <= 65535:
            yield invalid(f"{where}.service.port.number", str(number), PORT_RANGE)
    else:
        message = "Required value: port name or number is required"
        yield where, {"reason": "FieldValueRequired", "message": message}


def _path(path: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    kind, value = path.get("pathType"), str(path.get("path") or "")
    if kind is None:
        message = "Required value: pathType must be specified"
        yield f"{where}.pathType", {"reason": "FieldValueRequired", "message": message}
        return
    if kind in ("Exact", "Prefix"):
        if not value.startswith("/"):
            yield invalid(f"{where}.path", go_quoted(value), "must be an absolute path")
        for sequence in _BAD_SEQUENCES if value else ():
            if sequence in value:
                yield invalid(f"{where}.path", go_quoted(value), f"must not contain '{sequence}'")
        for suffix in _BAD_SUFFIXES if value else ():
            if value.endswith(suffix):
                yield invalid(f"{where}.path", go_quoted(value), f"cannot end with '{suffix}'")
    elif kind == "ImplementationSpecific":
        if value and not value.startswith("/"):
            yield invalid(f"{where}.path", go_quoted(value), "must be an absolute path")
    else:
        yield unsupported(f"{where}.pathType", str(kind), _PATH_TYPES)
    yield from _backend(path.get("backend") or {}, f"{where}.backend")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def ingress_causes(
    ingress: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """The errors of an Ingress's spec, beyond its metadata's (``raw``: as sent, where rules
    sent empty show as ``[]``, left out as ``null``)."""
    spec = ingress.get("spec") or {}
    rules = [rule for rule in spec.get("rules") or () if isinstance(rule, Mapping)]
    causes: list[tuple[str, Cause]] = []
    if not rules and spec.get("defaultBackend") is None:
        sent = ((raw or {}).get("spec") or {}).get("rules") if isinstance(raw, Mapping) else None
        shown = "[]" if sent == [] else "null"
        causes.append(
            invalid("spec", shown, "either `defaultBackend` or `rules` must be specified")
        )
    if spec.get("defaultBackend") is not None:
        causes += _backend(spec["defaultBackend"], "spec.defaultBackend")
    for index, rule in enumerate(rules):
        where = f"spec.rules[{index}]"
        host = str(rule.get("host") or "")
        if host:
            if _is_address(host):
                causes.append(invalid(f"{where}.host", go_quoted(host),
                                      "must be a DNS name, not an IP address"))  # fmt: skip
            causes += _host(host, f"{where}.host")
        http = rule.get("http")
        if isinstance(http, Mapping):
            paths = list(http.get("paths") or ())
            if not paths:
                causes.append(required(f"{where}.http.paths"))
            for number, path in enumerate(paths):
                causes += _path(path, f"{where}.http.paths[{number}]")
    for index, tls in enumerate(spec.get("tls") or ()):
        for number, host in enumerate(tls.get("hosts") or ()):
            causes += _host(str(host), f"spec.tls[{index}].hosts[{number}]")
        if secret := str(tls.get("secretName") or ""):
            causes += dns_subdomain_causes(secret, f"spec.tls[{index}].secretName")
    if (name := spec.get("ingressClassName")) is not None:
        causes += dns_subdomain_causes(str(name), "spec.ingressClassName")
    return causes
