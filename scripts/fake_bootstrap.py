"""Regenerate the objects FakeCluster starts with, from those a fresh kube-apiserver makes.

Usage::

    python scripts/fake_bootstrap.py

A fresh kube-apiserver makes objects for itself before it is ready: the default RBAC roles and
bindings (``kubernetes.io/bootstrapping: rbac-defaults``), the system PriorityClasses, the
``default/kubernetes`` Service with its Endpoints, EndpointSlice, ServiceCIDR and IPAddress,
API Priority and Fairness' configuration, and the local APIServices.
This starts a bare local control plane (no controller-manager: what its own controllers would
make later is not wanted), waits until the API server has made them, and writes them to
``src/anyop/testing/fake/data/bootstrap.json.gz`` as ``{"source": <gitVersion>, "objects":
[...]}``: compact JSON, the objects in the order of :data:`RESOURCES`, then by namespace and
name (as the server lists them), each with its ``apiVersion`` and ``kind`` and its fields in
the server's order (its Go structs'; maps' keys sorted), so that the fake shows them so. The
fake must read each as it is (its decoder and defaults change nothing), else this fails.

What each server makes anew is left out: ``uid``, ``resourceVersion``, ``creationTimestamp``
and ``generation``; the times it stamps (the ``time`` of ``managedFields`` entries, a
condition's ``lastTransitionTime``) read ``"$now"``, and the port the API server listens on
(the Service's ``targetPort``, the Endpoints' and EndpointSlice's ports) reads ``"$port"``:
the fake fills them in (see :mod:`anyop.testing.fake.bootstrap`).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from anyop.kube.transport import KubeTransport
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake.bootstrap import filled
from anyop.testing.fake.builtin_rules import defaulted
from anyop.testing.fake.json_copy import same_json
from anyop.testing.fake.kinds import BUILTIN_KINDS
from anyop.testing.fake.service_allocation import SERVICE_CIDR, first_service_ip
from anyop.testing.fake.typed_decoding import decode

OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/bootstrap.json.gz"
RESOURCES = (
    ("scheduling.k8s.io/v1", "priorityclasses"),
    ("networking.k8s.io/v1", "servicecidrs"),
    ("rbac.authorization.k8s.io/v1", "clusterroles"),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    ("rbac.authorization.k8s.io/v1", "roles"),
    ("rbac.authorization.k8s.io/v1", "rolebindings"),
    ("networking.k8s.io/v1", "ipaddresses"),
    ("v1", "services"),
    ("v1", "endpoints"),
    ("discovery.k8s.io/v1", "endpointslices"),
    ("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations"),
    ("flowcontrol.apiserver.k8s.io/v1", "flowschemas"),
    ("apiregistration.k8s.io/v1", "apiservices"),
)
"""What is taken, in about the order the API server makes it (the fake's resourceVersions)."""
_KUBERNETES = {"services", "endpoints", "endpointslices"}
"""Of these, only ``default/kubernetes`` is the API server's own."""
_MADE_ANEW = ("uid", "resourceVersion", "creationTimestamp", "generation")
_TIMEOUT = 120.0


def _path(api_version: str, plural: str) -> str:
    return f"/api/v1/{plural}" if api_version == "v1" else f"/apis/{api_version}/{plural}"


async def _listed(api: httpx.AsyncClient, api_version: str, plural: str) -> list[Any]:
    """The bootstrap objects of one resource, each with its apiVersion and kind."""
    answer = await api.get(_path(api_version, plural))
    answer.raise_for_status()
    document = answer.json()
    kind = document["kind"].removesuffix("List")
    items = document["items"]
    if plural in _KUBERNETES:
        items = [item for item in items if _key(item) == ("default", "kubernetes")]
    return [{"apiVersion": api_version, "kind": kind, **item} for item in items]


def _key(item: Any) -> tuple[str, str]:
    metadata = item["metadata"]
    return metadata.get("namespace", ""), metadata["name"]


async def _settled(api: httpx.AsyncClient) -> list[Any]:
    """Every object once the API server is ready and its own Service has its endpoints (the
    last it makes) and the lists stay the same a second later."""
    deadline = time.monotonic() + _TIMEOUT
    previous: list[Any] | None = None
    while time.monotonic() < deadline:
        ready = (await api.get("/readyz")).status_code == 200
        found = [item for resource in RESOURCES for item in await _listed(api, *resource)]
        kinds = {item["kind"] for item in found}
        if ready and {"Endpoints", "EndpointSlice", "IPAddress"} <= kinds:
            names = [(item["kind"], _key(item)) for item in found]
            if previous == names:
                return found
            previous = names
        await anyio.sleep(1)
    raise SystemExit(f"the API server did not make its objects within {_TIMEOUT} s")


def _stripped(item: dict[str, Any], port: int) -> dict[str, Any]:
    """The object without what each server makes anew; its times and port as placeholders."""
    metadata = {k: v for k, v in item["metadata"].items() if k not in _MADE_ANEW}
    for entry in metadata.get("managedFields") or ():
        entry["time"] = "$now"
    result = {**item, "metadata": metadata}
    for condition in (result.get("status") or {}).get("conditions") or ():
        condition["lastTransitionTime"] = "$now"
    match item["kind"]:
        case "Service":
            for service_port in result["spec"]["ports"]:
                service_port["targetPort"] = _port_of(service_port["targetPort"], port)
        case "Endpoints":
            for subset in result["subsets"]:
                for endpoint_port in subset["ports"]:
                    endpoint_port["port"] = _port_of(endpoint_port["port"], port)
        case "EndpointSlice":
            for slice_port in result["ports"]:
                slice_port["port"] = _port_of(slice_port["port"], port)
    return result


def _port_of(value: Any, port: int) -> str:
    if value != port:
        raise SystemExit(f"expected the API server's port {port}, found {value!r}")
    return "$port"


def _check(objects: list[Any]) -> None:
    """The fake stores the objects as they are: its decoder and defaults must keep them so, and
    it allocates Service addresses in its own network, which must be the real one's."""
    kinds = {(kind.group, kind.version, kind.kind): kind for kind in BUILTIN_KINDS}
    for item in objects:
        body = filled(item, "2026-01-01T00:00:00Z")
        group, _, version = body["apiVersion"].rpartition("/")
        kind = kinds[(group, version, body["kind"])]
        if not same_json(defaulted(kind, decode(group, version, kind.kind, body)), body):
            raise SystemExit(f"the fake does not read {item['kind']} {_key(item)} as it is")
    cidrs = [item["spec"]["cidrs"] for item in objects if item["kind"] == "ServiceCIDR"]
    if cidrs != [[SERVICE_CIDR]]:
        raise SystemExit(f"the ServiceCIDRs are {cidrs}, the fake's network is {SERVICE_CIDR}")
    services = [item["spec"]["clusterIP"] for item in objects if item["kind"] == "Service"]
    if services != [first_service_ip()]:
        raise SystemExit(f"the kubernetes Service's address is {services}")


async def _fetch() -> tuple[str, list[Any]]:
    async with LocalControlPlane(controllers=False, nodes=False) as plane:
        port = int(plane.server.rsplit(":", 1)[1])
        transport = KubeTransport(plane.ssl_context())
        async with httpx.AsyncClient(base_url=plane.server, transport=transport, timeout=30) as api:
            source = (await api.get("/version")).json()["gitVersion"]
            found = await _settled(api)
    return source, [_stripped(item, port) for item in found]


def main() -> None:
    source, objects = anyio.run(_fetch)
    _check(objects)
    document = {"source": source, "objects": objects}
    text = json.dumps(document, separators=(",", ":")) + "\n"  # fields in the server's order
    OUT.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    counts: dict[str, int] = {}
    for item in objects:
        counts[item["kind"]] = counts.get(item["kind"], 0) + 1
    print(f"wrote {OUT} from {source}: {counts}")


if __name__ == "__main__":
    main()
