"""Discovery documents (``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>[/<version>]``) and
the server's own (``/version``).

``/api`` and ``/apis`` also answer as aggregated discovery (``apidiscovery.k8s.io/v2``
``APIGroupDiscoveryList``: every group's versions and resources in one document, with an ETag),
which client-go and kubectl ask for first.

Pure: each function builds one document from the kinds being served.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from anyop.testing.fake.bootstrap import group_priorities
from anyop.testing.fake.json_copy import compact_json
from anyop.testing.fake.kinds import Kind

__all__ = [
    "AGGREGATED",
    "VERSION",
    "aggregated",
    "aggregated_headers",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "version_key",
]

VERSION: dict[str, str] = {
    "major": "1",
    "minor": "36",
    "emulationMajor": "1",
    "emulationMinor": "36",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "35",
    "gitVersion": "v1.36.3",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}
"""``/version``: the Kubernetes version whose definitions the fake serves (the local control
plane's), as kube-apiserver answers it."""
_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY = {"alpha": 0, "beta": 1, None: 2}


def version_key(version: str) -> tuple[int, int, int, int, str]:
    """Sort key of Kubernetes version priority: GA over beta over alpha, higher first.

    Sorting ascending by this key puts the preferred version first.
    """
    match = _VERSION.match(version)
    if match is None:
        return (1, 0, 0, 0, version)  # non-Kubernetes versions go last, alphabetically
    major, stability, minor = match.groups()
    return (0, -_STABILITY[stability], -int(major), -int(minor or 0), version)


def api_versions(address: str) -> dict[str, Any]:
    """``/api``: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group_versions(kinds: Iterable[Kind], group: str) -> list[str]:
    versions = {kind.version for kind in kinds if kind.group == group}
    return sorted(versions, key=version_key)


_CUSTOM_PRIORITY = 1000
"""The ``groupPriorityMinimum`` of the APIServices kube-apiserver registers for CRDs' groups."""
_AGGREGATOR = "apiregistration.k8s.io"


def _named_groups(kinds: list[Kind]) -> list[str]:
    """The named groups, in kube-apiserver's order: ``apiregistration.k8s.io`` first, then by
    their APIServices (``<version>.<group>``): the highest ``groupPriorityMinimum``, then the
    first name, as the aggregator sorts them."""
    best: dict[str, tuple[int, str]] = {}
    priorities = group_priorities()
    for kind in kinds:
        if not kind.group:
            continue
        priority = priorities.get((kind.group, kind.version), _CUSTOM_PRIORITY)
        key = (-priority, f"{kind.version}.{kind.group}")
        if kind.group == _AGGREGATOR:
            key = (-(2**31), "")
        best[kind.group] = min(best.get(kind.group, key), key)
    return sorted(best, key=best.__getitem__)


def api_group(kinds: Iterable[Kind], group: str) -> dict[str, Any] | None:
    """``/apis/<group>``, or ``None`` if no kind of that group is served."""
    versions = _group_versions(list(kinds), group)
    if not versions:
        return None
    entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def api_group_list(kinds: Iterable[Kind]) -> dict[str, Any]:
    """``/apis``: every named group, in kube-apiserver's order."""
    served = list(kinds)
    groups: list[dict[str, Any]] = []
    for name in _named_groups(served):
        group = api_group(served, name)
        if group is not None:
            groups.append({key: group[key] for key in ("name", "versions", "preferredVersion")})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resource_list(kinds: Iterable[Kind], group: str, version: str) -> dict[str, Any] | None:
    """``/api/v1`` or ``/apis/<group>/<version>``, or ``None`` if nothing is served there."""
    chosen = [kind for kind in kinds if kind.group == group and kind.version == version]
    if not chosen:
        return None
    if not any(kind.custom for kind in chosen):  # built-ins by name; CRDs' as they came
        chosen.sort(key=_by_plural)
    resources = [entry for kind in chosen for entry in kind.discovery()]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _by_plural(kind: Kind) -> str:
    return kind.plural


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of aggregated discovery, as the answer names it."""


def aggregated(kinds: Iterable[Kind], *, core: bool) -> dict[str, Any]:
    """``/api`` (``core``) or ``/apis`` as an ``APIGroupDiscoveryList``: each group (the core
    group unnamed), its versions by priority, each version's resources with their
    subresources."""
    served = list(kinds)
    names = [""] if core else _named_groups(served)
    items = []
    for group in names:
        versions = [
            {
                "version": version,
                "resources": _aggregated_resources(served, group, version),
                "freshness": "Current",
            }
            for version in _group_versions(served, group)
        ]
        if versions:
            items.append({"metadata": {"name": group} if group else {}, "versions": versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def aggregated_headers(document: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The quoted ETag of an aggregated document (SHA-512 of its JSON, as kube-apiserver
    computes it), and the headers it is answered with."""
    etag = '"' + hashlib.sha512(compact_json(document)).hexdigest().upper() + '"'
    return etag, {"ETag": etag, "Vary": "Accept", "Cache-Control": "public"}


def _aggregated_resources(kinds: list[Kind], group: str, version: str) -> list[dict[str, Any]]:
    """A group version's ``APIResourceList`` entries, each subresource under its resource."""
    listed = api_resource_list(kinds, group, version)
    resources: dict[str, dict[str, Any]] = {}
    for entry in listed["resources"] if listed is not None else []:
        name, _, subresource = entry["name"].partition("/")
        kind = {
            "group": entry.get("group", ""),
            "version": entry.get("version", ""),
            "kind": entry["kind"],
        }
        if subresource:
            parent = resources.setdefault(name, {"resource": name})
            parent.setdefault("subresources", []).append(
                {"subresource": subresource, "responseKind": kind, "verbs": entry["verbs"]}
            )
            continue
        resource = resources.setdefault(name, {"resource": name})
        resource.update(
            responseKind=kind,
            scope="Namespaced" if entry["namespaced"] else "Cluster",
            singularResource=entry["singularName"],
            verbs=entry["verbs"],
        )
        for key in ("shortNames", "categories"):
            if key in entry:
                resource[key] = entry[key]
    for resource in resources.values():
        if "subresources" in resource:  # last, by name, as Go's encoder and sort put them
            resource["subresources"] = sorted(
                resource.pop("subresources"), key=lambda s: str(s["subresource"])
            )
    return list(resources.values())
