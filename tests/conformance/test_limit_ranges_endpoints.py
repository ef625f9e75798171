"""Conformance: what a namespace holds beside workloads: LimitRanges, Endpoints, EndpointSlices
and ResourceQuotas (their defaults, each check of their ``Validate<Kind>`` alone and several at
once, updates, a LimitRange created without a name), and an Indexed Job's name.

A check that walks a Go map (a limit's resources) is met here with one resource at a time:
kube-apiserver's order among several follows Go's map iteration, which differs per request.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import STRATEGIC, Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _limit_range(name: str, *limits: Body) -> Body:
    metadata = {"name": name} if name else {}
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": metadata,
        "spec": {"limits": list(limits)},
    }


def _endpoints(name: str, *subsets: Body) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name},
        "subsets": list(subsets),
    }


# -- LimitRanges --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limit",
    [
        {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}},
        {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}},
        {"type": "Container", "min": {"memory": "64Mi"}},
        {"type": "Container", "default": {"cpu": "500m"}, "max": {"cpu": "1"}},
        {"type": "Container", "defaultRequest": {"cpu": "50m"}, "max": {"cpu": "1"}},
        {"type": "Container", "default": {}, "defaultRequest": {}},
        {"type": "Pod", "max": {"cpu": "4"}, "min": {"memory": "1Mi"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}},
        {"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
    ],
    ids=["max", "max-min", "min", "default", "request", "empty-maps", "pod", "claim", "ratio"],
)
async def test_a_limit_range_is_defaulted_as_go_does(conform: Conform, limit: Body) -> None:
    async def scenario(t: Target) -> None:
        path = t.core("limitranges")
        await t.post(path, _limit_range("lr", limit))
        await t.get(t.core("limitranges", "lr"))

    await conform(scenario)


@pytest.mark.parametrize(
    "limits",
    [
        [{"type": "Nonsense"}],
        [{"type": "example.com/Custom", "max": {"example.com/gpu": "1"}}],
        [{"type": "bad type!"}],
        [{"type": ""}],
        [{"type": "Container"}, {"type": "Container"}],
        [{"type": "Container", "max": {"nonsense": "1"}}],
        [{"type": "Container", "max": {"pods": "1"}}],
        [{"type": "Container", "max": {"example.com/gpu": "1"}}],
        [{"type": "Container", "max": {"bad/name/x": "1"}}],
        [{"type": "PersistentVolumeClaim", "max": {"nonsense": "1"}}],
        [{"type": "PersistentVolumeClaim", "max": {"requests.storage": "1"}}],
        [{"type": "PersistentVolumeClaim", "min": {"cpu": "1"}}],
        [{"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}],
        [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}],
        [{"type": "Container", "min": {"cpu": "2"}, "defaultRequest": {"cpu": "1"}}],
        [{"type": "Container", "max": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}],
        [{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}],
        [{"type": "Container", "min": {"cpu": "2"}, "default": {"cpu": "1"}}],
        [{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "2"}}],
        [{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}],
        [
            {
                "type": "Pod",
                "min": {"cpu": "1"},
                "max": {"cpu": "2"},
                "maxLimitRequestRatio": {"cpu": "3"},
            }
        ],
        [
            {
                "type": "Pod",
                "min": {"memory": "1Mi"},
                "max": {"memory": "10Mi"},
                "maxLimitRequestRatio": {"memory": "1500m"},
            }
        ],
        [
            {
                "type": "Pod",
                "min": {"cpu": "0"},
                "max": {"cpu": "2"},
                "maxLimitRequestRatio": {"cpu": "3"},
            }
        ],
        [
            {
                "type": "Container",
                "default": {"hugepages-2Mi": "2Mi"},
                "defaultRequest": {"hugepages-2Mi": "1Mi"},
            }
        ],
        [
            {
                "type": "Container",
                "default": {"example.com/gpu": "2"},
                "defaultRequest": {"example.com/gpu": "1"},
            }
        ],
        [
            {
                "type": "Container",
                "min": {"cpu": "3"},
                "max": {"cpu": "1"},
                "default": {"cpu": "2"},
                "maxLimitRequestRatio": {"cpu": "1"},
            }
        ],
        [{"type": "Nonsense", "max": {"nonsense": "1"}}, {"type": "Pod", "default": {"cpu": "1"}}],
    ],
)
async def test_a_limit_ranges_checks_and_their_order(conform: Conform, limits: list[Body]) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("limitranges"), _limit_range("lr", *limits))

    await conform(scenario)


async def test_a_limit_range_without_a_name_is_named_by_its_strategy(conform: Conform) -> None:
    def shown(document: Any) -> Any:
        name = (
            (document.get("metadata") or {}).get("name", "") if isinstance(document, dict) else ""
        )
        return {"code": document.get("code"), "uuid": bool(_UUID.fullmatch(name or ""))}

    async def scenario(t: Target) -> None:
        await t.post(t.core("limitranges"), _limit_range("", {"type": "Pod"}), record=shown)
        named = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
        await t.post(t.cm(), named)  # another kind: refused without a name

    await conform(scenario)


async def test_a_limit_range_update_is_checked_as_a_create(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.core("limitranges", "lr")
        made = await t.post(t.core("limitranges"), _limit_range("lr", {"type": "Container"}))
        await t.patch(path, {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}})
        await t.patch(path, {"spec": {"limits": [{"type": "Pod", "default": {"cpu": "1"}}]}})
        await t.patch(path, {"metadata": {"labels": {"a": "b"}}})
        made["metadata"]["labels"] = {"x": "y"}
        await t.put(path, made)  # an old resourceVersion
        del made["metadata"]["resourceVersion"]
        made["spec"]["limits"] = [{"type": "Container", "min": {"cpu": "1"}}]
        await t.put(path, made)  # unconditional
        await t.put(t.core("limitranges", "other"), _limit_range("other", {"type": "Pod"}))
        await t.patch(
            path, {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}, ct=STRATEGIC
        )

    await conform(scenario)


# -- Endpoints ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "subsets",
    [
        [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}],
        [
            {
                "addresses": [{"ip": "10.1.2.3", "hostname": "h", "nodeName": "n.example"}],
                "notReadyAddresses": [{"ip": "fd00::1"}],
                "ports": [
                    {"name": "a", "port": 80, "protocol": "UDP", "appProtocol": "http"},
                    {"name": "b", "port": 443},
                ],
            }
        ],
        [{"addresses": [{"ip": "10.1.2.3"}]}],
        [],
    ],
    ids=["one", "full", "no-ports", "no-subsets"],
)
async def test_endpoints_are_defaulted_as_go_does(conform: Conform, subsets: list[Body]) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("endpoints"), _endpoints("ep", *subsets))
        await t.get(t.core("endpoints", "ep"))

    await conform(scenario)


@pytest.mark.parametrize(
    "ip",
    [
        "nonsense",
        "",
        "010.1.2.3",
        "::ffff:10.1.2.3",
        "0.0.0.0",
        "::",
        "127.0.0.1",
        "::1",
        "169.254.1.1",
        "fe80::1",
        "224.0.0.5",
        "ff02::1",
        "300.1.2.3",
        "fe80::1%eth0",
        "::ffff:127.0.0.1",
        "2001:DB8::1",
        "224.0.1.1",
    ],
)
async def test_an_endpoints_ip_is_checked_as_go_does(conform: Conform, ip: str) -> None:
    async def scenario(t: Target) -> None:
        subset = {"addresses": [{"ip": ip}], "ports": [{"port": 80}]}
        await t.post(t.core("endpoints"), _endpoints("ep", subset))

    await conform(scenario)


@pytest.mark.parametrize(
    "subset",
    [
        {},
        {"ports": [{"port": 80}]},
        {"addresses": [{"ip": "10.1.2.3", "hostname": "Bad_Host"}]},
        {"addresses": [{"ip": "10.1.2.3", "nodeName": "Bad Node"}]},
        {"addresses": [{"ip": "10.1.2.3", "nodeName": ""}]},
        {"notReadyAddresses": [{"ip": "127.0.0.1", "hostname": "-x"}]},
        {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}, {"port": 81}]},
        {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"name": "Bad", "port": 0}]},
        {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 70000, "protocol": "ICMP"}]},
        {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80, "appProtocol": "a/b/c"}]},
        {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80, "appProtocol": ""}]},
        {
            "addresses": [{"ip": "x", "hostname": "B", "nodeName": "C"}],
            "ports": [{"port": -1, "protocol": "tcp"}, {"name": "a", "port": 1}],
        },
    ],
)
async def test_endpoints_checks_and_their_order(conform: Conform, subset: Body) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("endpoints"), _endpoints("ep", subset))

    await conform(scenario)


async def test_endpoints_updates_check_changed_subsets_only(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        good = {"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}
        path = t.core("endpoints", "ep")
        await t.post(t.core("endpoints"), _endpoints("ep", good))
        await t.patch(path, {"subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]})
        await t.patch(path, {"metadata": {"labels": {"a": "b"}}})
        await t.patch(
            path, {"subsets": [{"addresses": [{"ip": "10.1.2.4"}], "ports": [{"port": 8}]}]}
        )
        await t.put(t.core("endpoints", "new"), _endpoints("new", good))  # created by a PUT
        await t.put(t.core("endpoints", "bad"), _endpoints("bad", {}))

    await conform(scenario)


# -- ResourceQuotas ---------------------------------------------------------------------------


def _quota(name: str, spec: Body, **fields: Any) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": spec,
        **fields,
    }


@pytest.mark.parametrize(
    "spec",
    [
        {"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi"}},
        {"hard": {"nonsense": "1"}},
        {"hard": {"storage": "1Gi"}},
        {"hard": {"example.com/gpu": "1500m"}},
        {"hard": {"count/deployments.apps": "5"}},
        {"hard": {"requests.hugepages-2Mi": "4Mi"}},
        {"hard": {"pods": "1500m"}},
        {"hard": {"cpu": "-1"}},
        {"hard": {"bad name": "1"}},
        {"hard": {"requests.example.com/gpu": "2"}},
        {"hard": {"pods": "1"}, "scopes": ["BestEffort"]},
        {"hard": {"cpu": "1"}, "scopes": ["BestEffort"]},
        {"hard": {"cpu": "1"}, "scopes": ["Nonsense"]},
        {"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]},
        {"hard": {"persistentvolumeclaims": "1"}, "scopes": ["VolumeAttributesClass"]},
        {"hard": {"secrets": "1"}, "scopes": ["PriorityClass"]},
        {"scopes": ["BestEffort", "NotBestEffort", "Terminating", "NotTerminating"]},
        {
            "hard": {"pods": "1"},
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                ]
            },
        },
        {
            "hard": {"cpu": "1"},
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "BestEffort", "operator": "In", "values": ["x"]}]
            },
        },
        {
            "hard": {"pods": "1"},
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]
            },
        },
        {
            "hard": {"pods": "1"},
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]}
                ]
            },
        },
        {
            "hard": {"pods": "1"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "Nonsense", "operator": "Near"}]},
        },
        {
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "Terminating", "operator": "Exists"},
                    {"scopeName": "NotTerminating", "operator": "Exists"},
                ]
            }
        },
        {"scopeSelector": {}},
    ],
)
async def test_a_resource_quotas_checks_and_their_order(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        status = {"hard": {"pods": "3"}, "used": {"pods": "-1"}}
        await t.post(t.core("resourcequotas"), _quota("q", spec, status=status))
        await t.get(t.core("resourcequotas", "q"))

    await conform(scenario)


async def test_a_resource_quotas_scopes_may_not_change(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.core("resourcequotas", "q")
        await t.post(t.core("resourcequotas"), _quota("q", {"hard": {"pods": "1"}}))
        await t.patch(path, {"spec": {"scopes": ["NotBestEffort"]}})
        await t.patch(path, {"spec": {"hard": {"pods": "2", "cpu": "-1"}}})
        await t.patch(path, {"spec": {"hard": {"pods": "3"}}, "status": {"used": {"pods": "1"}}})
        await t.patch(f"{path}/status", {"status": {"hard": {"pods": "-3"}}})
        made = await t.post(
            t.core("resourcequotas"), _quota("s", {"hard": {"pods": "1"}, "scopes": ["BestEffort"]})
        )
        made["spec"]["scopes"] = ["BestEffort", "BestEffort"]
        await t.put(t.core("resourcequotas", "s"), made)
        made["spec"]["scopes"] = []
        await t.put(t.core("resourcequotas", "s"), made)

    await conform(scenario)


# -- EndpointSlices -----------------------------------------------------------------------------

_SLICES = "discovery.k8s.io/v1"


def _slice(
    name: str, address_type: Any, endpoints: list[Body], ports: list[Body] | None = None
) -> Body:
    body: Body = {
        "apiVersion": _SLICES,
        "kind": "EndpointSlice",
        "metadata": {"name": name},
        "addressType": address_type,
        "endpoints": endpoints,
    }
    if ports is not None:
        body["ports"] = ports
    return body


@pytest.mark.parametrize(
    ("address_type", "addresses"),
    [
        ("IPv4", ["10.1.2.3"]),
        ("IPv4", ["010.1.2.3"]),
        ("IPv4", ["fd00::1"]),
        ("IPv4", ["127.0.0.1", "169.254.0.1"]),
        ("IPv4", ["nonsense"]),
        ("IPv6", ["fd00::1"]),
        ("IPv6", ["FD00::1"]),
        ("IPv6", ["fd00:0:0:0:0:0:0:1"]),
        ("IPv6", ["10.1.2.3"]),
        ("IPv6", ["::1"]),
        ("IPv6", ["::ffff:10.1.2.3"]),
        ("FQDN", ["example.com"]),
        ("FQDN", ["example.com."]),
        ("FQDN", ["example"]),
        ("FQDN", ["Example.com"]),
        ("FQDN", ["a..b"]),
        ("FQDN", ["-a.com"]),
        ("IPv4", []),
        ("Nonsense", ["x"]),
        ("", ["10.1.2.3"]),
    ],
)
async def test_an_endpoint_slices_addresses_are_checked_by_its_type(
    conform: Conform, address_type: str, addresses: list[str]
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_SLICES, "endpointslices")
        await t.post(path, _slice("s", address_type, [{"addresses": addresses}]))

    await conform(scenario)


@pytest.mark.parametrize(
    ("endpoint", "ports"),
    [
        ({"addresses": ["10.1.2.3"], "nodeName": "Bad Node", "hostname": "Bad_Host"}, None),
        ({"addresses": ["10.1.2.3"], "deprecatedTopology": {"bad key!": "v", "k": "-bad-"}}, None),
        (
            {
                "addresses": ["10.1.2.3"],
                "hints": {"forZones": [{"name": "a"}, {"name": "a"}, {"name": "-x"}]},
            },
            None,
        ),
        ({"addresses": ["10.1.2.3"], "hints": {"forNodes": [{"name": "n"}, {"name": "n"}]}}, None),
        ({"addresses": ["10.1.2.3"], "conditions": {"ready": True}}, [{"port": 80}, {"port": 81}]),
        ({"addresses": ["10.1.2.3"]}, [{"name": "http", "port": 80}, {"name": "http"}]),
        (
            {"addresses": ["10.1.2.3"]},
            [{"name": "Bad", "protocol": "ICMP", "appProtocol": "a/b/c"}],
        ),
        ({"addresses": ["10.1.2.3"]}, [{"name": "", "port": 70000}]),
    ],
)
async def test_an_endpoint_slices_checks_and_their_order(
    conform: Conform, endpoint: Body, ports: list[Body] | None
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_SLICES, "endpointslices")
        await t.post(path, _slice("s", "IPv4", [endpoint], ports))
        await t.get(t.apis(_SLICES, "endpointslices", "s"))

    await conform(scenario)


async def test_an_endpoint_slice_update_keeps_its_type(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_SLICES, "endpointslices", "s")
        made = await t.post(
            t.apis(_SLICES, "endpointslices"), _slice("s", "IPv4", [{"addresses": ["10.1.2.3"]}])
        )
        await t.patch(path, {"addressType": "IPv6"})
        await t.patch(path, {"endpoints": [{"addresses": ["127.0.0.1"]}]})
        await t.patch(path, {"metadata": {"labels": {"a": "b"}}})
        made["endpoints"] = [{"addresses": ["10.9.9.9"]}]
        made["ports"] = [{"name": "Bad"}]
        await t.put(path, made)

    await conform(scenario)


# -- An Indexed Job's name ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "completions", "mode"),
    [
        ("a.b", 3, "Indexed"),
        ("a" * 62, 10, "Indexed"),
        ("a" * 62, 9, "Indexed"),
        ("a.b", 3, "NonIndexed"),
        ("a.b", 0, "Indexed"),
    ],
)
async def test_an_indexed_jobs_name_must_make_pod_hostnames(
    conform: Conform, name: str, completions: int, mode: str
) -> None:
    async def scenario(t: Target) -> None:
        pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
        spec = {
            "completions": completions,
            "parallelism": 1,
            "completionMode": mode,
            "template": pod,
        }
        body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}
        await t.post(t.apis("batch/v1", "jobs"), body, record=_code_and_causes)
        if completions > 1:
            body["metadata"] = {"name": "fine"}
            made = await t.post(t.apis("batch/v1", "jobs"), body, record=_code_and_causes)
            if made.get("kind") == "Job":
                await t.patch(
                    t.apis("batch/v1", "jobs", "fine"),
                    {"metadata": {"labels": {}}},
                    record=_code_and_causes,
                )

    await conform(scenario)


def _code_and_causes(document: Any) -> Any:
    """A Job's answer without the fields the servers fill differently (its selector's uid)."""
    if isinstance(document, dict) and document.get("kind") == "Status":
        return document
    return {"kind": (document or {}).get("kind")} if isinstance(document, dict) else document
