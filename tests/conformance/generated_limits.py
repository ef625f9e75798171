"""Generated requests on what a namespace's operator writes beside its workloads: a LimitRange
(``lr1``), an Endpoints (``ep1``), a ResourceQuota (``rq1``) and an EndpointSlice (``es1``);
valid and invalid values alike (see
:mod:`tests.conformance.generated_requests` for how a sequence is built and played).
"""

from __future__ import annotations

import random
from typing import Any

from tests.conformance.generated_requests import Maker, Step, _metadata, _value, objects_plan

__all__ = ["LIMITS_COLLECTIONS", "limits_plan"]

Choices = tuple[tuple[Any, ...], tuple[Any, ...]]

_QUANTITIES: Choices = (("100m", "1", "2", "512Mi", "1Gi"), ("-1", "1x", "0.5"))
_RESOURCES: Choices = (
    ("cpu", "memory", "ephemeral-storage"),
    ("pods", "storage", "example.com/gpu", "hugepages-2Mi", "bad name", "a/b/c"),
)
_TYPES: Choices = (("Container", "Pod", "PersistentVolumeClaim"), ("Nonsense", "", "x/y"))
_IPS: Choices = (
    ("10.1.2.3", "10.1.2.4", "fd00::1"),
    ("127.0.0.1", "0.0.0.0", "169.254.1.1", "010.1.2.3", "::ffff:10.1.2.3", "x", ""),
)


def _resources(rng: random.Random, *, bad: float) -> dict[str, Any]:
    valid, invalid = _RESOURCES  # a key: a name, valid or not, never another type
    name = rng.choice(invalid if rng.random() < bad else valid)
    return {name: _value(rng, _QUANTITIES, bad)}


def _limit(rng: random.Random, *, bad: float) -> dict[str, Any]:
    limit: dict[str, Any] = {"type": _value(rng, _TYPES, bad)}
    for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
        if rng.random() < 0.4:
            limit[field] = _resources(rng, bad=bad)
    if limit["type"] == "PersistentVolumeClaim" and rng.random() > bad:
        limit["max"] = {"storage": rng.choice(["1Gi", "10Gi"])}
    return limit


def _limit_range(rng: random.Random, *, bad: float) -> dict[str, Any]:
    limits = [_limit(rng, bad=bad) for _ in range(rng.randint(0, 2))]
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": _metadata(rng, "lr1", bad=bad),
            "spec": {"limits": limits}}  # fmt: skip


def _address(rng: random.Random, *, bad: float) -> dict[str, Any]:
    address: dict[str, Any] = {"ip": _value(rng, _IPS, bad)}
    if rng.random() < 0.3:
        address["hostname"] = _value(rng, (("h", "web-0"), ("Bad_Host", "-x")), bad)
    if rng.random() < 0.3:
        address["nodeName"] = _value(rng, (("node-1", "n.example"), ("Bad Node",)), bad)
    return address


def _endpoint_port(rng: random.Random, *, bad: float) -> dict[str, Any]:
    port: dict[str, Any] = {"port": _value(rng, ((80, 443, 8080), (0, 70000, -1)), bad)}
    if rng.random() < 0.6:
        port["name"] = _value(rng, (("http", "https", "metrics"), ("Bad", "")), bad)
    if rng.random() < 0.4:
        port["protocol"] = _value(rng, (("TCP", "UDP", "SCTP"), ("ICMP", "tcp")), bad)
    if rng.random() < 0.2:
        port["appProtocol"] = _value(rng, (("http", "example.com/proto"), ("a/b/c",)), bad)
    return port


def _subset(rng: random.Random, *, bad: float) -> dict[str, Any]:
    subset: dict[str, Any] = {}
    for field in ("addresses", "notReadyAddresses"):
        if rng.random() < (0.8 if field == "addresses" else 0.3):
            subset[field] = [_address(rng, bad=bad) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.8:
        subset["ports"] = [_endpoint_port(rng, bad=bad) for _ in range(rng.randint(1, 2))]
    return subset


def _endpoints(rng: random.Random, *, bad: float) -> dict[str, Any]:
    subsets = [_subset(rng, bad=bad) for _ in range(rng.randint(0, 2))]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": _metadata(rng, "ep1", bad=bad),
            "subsets": subsets}  # fmt: skip


_SCOPES: Choices = (
    (["BestEffort"], ["NotTerminating"], ["PriorityClass"], []),
    (["Nonsense"], ["Terminating", "NotTerminating"], ["BestEffort", "BestEffort"]),
)
_QUOTA_RESOURCES: Choices = (
    ("pods", "requests.cpu", "limits.memory", "persistentvolumeclaims", "count/deployments.apps"),
    ("storage", "nonsense", "example.com/gpu", "bad name"),
)
_SCOPE_EXPRESSIONS: Choices = (
    ({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
     {"scopeName": "BestEffort", "operator": "Exists"}),
    ({"scopeName": "PriorityClass", "operator": "In"},
     {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
     {"scopeName": "Nonsense", "operator": "Near"}),
)  # fmt: skip


def _resource_quota(rng: random.Random, *, bad: float) -> dict[str, Any]:
    valid, invalid = _QUOTA_RESOURCES
    hard = {rng.choice(invalid if rng.random() < bad else valid): _value(rng, _QUANTITIES, bad)
            for _ in range(rng.randint(0, 2))}  # fmt: skip
    spec: dict[str, Any] = {"hard": hard}
    if rng.random() < 0.4:
        spec["scopes"] = _value(rng, _SCOPES, bad)
    if rng.random() < 0.3:
        spec["scopeSelector"] = {"matchExpressions": [_value(rng, _SCOPE_EXPRESSIONS, bad)]}
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": _metadata(rng, "rq1", bad=bad), "spec": spec}  # fmt: skip


_SLICE_ADDRESSES = {
    "IPv4": (("10.1.2.3", "10.9.8.7"), ("010.1.2.3", "fd00::1", "127.0.0.1", "x")),
    "IPv6": (("fd00::1", "2001:db8::5"), ("FD00::1", "fd00:0:0:0:0:0:0:1", "10.1.2.3", "::1")),
    "FQDN": (("example.com", "a.example.com."), ("example", "Example.com", "a..b")),
}


def _endpoint_slice(rng: random.Random, *, bad: float) -> dict[str, Any]:
    address_type = _value(rng, (("IPv4", "IPv6", "FQDN"), ("Nonsense", "")), bad)
    known = address_type if isinstance(address_type, str) else "IPv4"  # (a wrong type too)
    choices = _SLICE_ADDRESSES.get(known, _SLICE_ADDRESSES["IPv4"])
    endpoints = []
    for _ in range(rng.randint(0, 2)):
        endpoint: dict[str, Any] = {"addresses": [_value(rng, choices, bad)]}
        if rng.random() < 0.3:
            endpoint["nodeName"] = _value(rng, (("node-1",), ("Bad Node",)), bad)
        if rng.random() < 0.3:
            endpoint["conditions"] = {"ready": rng.choice([True, False])}
        endpoints.append(endpoint)
    slice_: dict[str, Any] = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                              "metadata": _metadata(rng, "es1", bad=bad),
                              "addressType": address_type, "endpoints": endpoints}  # fmt: skip
    if rng.random() < 0.6:
        slice_["ports"] = [_endpoint_port(rng, bad=bad) for _ in range(rng.randint(1, 2))]
    return slice_


_LIMITS: dict[str, Maker] = {"lr1": _limit_range, "ep1": _endpoints, "rq1": _resource_quota,
                             "es1": _endpoint_slice}  # fmt: skip

LIMITS_COLLECTIONS = {"lr1": ("v1", "limitranges"), "ep1": ("v1", "endpoints"),
                      "rq1": ("v1", "resourcequotas"),
                      "es1": ("discovery.k8s.io/v1", "endpointslices")}  # fmt: skip
"""Where each object of the family lives, by its name."""


def limits_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on two of the family's objects (see :func:`objects_plan`)."""
    return objects_plan(seed, _LIMITS, steps=steps)
