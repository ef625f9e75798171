"""Conformance: every kind the API server lets a client create, found by discovery, refuses
what its validation refuses: a dry-run create of each with no spec, an empty spec, a name that
is no subdomain, a bad label value, a ``generateName`` that makes none, a finalizer of no
domain, recorded as its code and message (a generated name's suffix left out).

Known differences, recorded by code alone: an access review's ``metadata`` is shown by
kube-apiserver as the JSON it received (with the time of its field manager's entry); an
IPAddress's ``generateName`` makes no name there (it supports none), and a DeviceClass's is not
checked (only the name it makes). Not sent: a Binding with a ``generateName``, which
kube-apiserver answers with a 500 (``target.name: Required value``), the fake with a 400.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
BODIES: dict[str, Body] = {
    "no spec": {"metadata": {"name": "sweep-x"}},
    "an empty spec": {"metadata": {"name": "sweep-x"}, "spec": {}},
    "a name of no subdomain": {"metadata": {"name": "Bad_Name.x"}},
    "a bad label value": {"metadata": {"name": "sweep-x", "labels": {"a": "bad value!"}}},
    "a generateName that makes no name": {"metadata": {"generateName": "Bad_"}},
    "a finalizer of no domain": {"metadata": {"name": "sweep-x", "finalizers": ["nodomain"]}},
}
_SUFFIX = re.compile(r"Bad_[a-z0-9]{5}\b")
_BY_CODE = {("authorization.k8s.io", plural) for plural in (
    "localsubjectaccessreviews", "selfsubjectaccessreviews", "subjectaccessreviews")}  # fmt: skip
_GENERATED = {("networking.k8s.io", "ipaddresses"), ("resource.k8s.io", "deviceclasses")}


async def _creatable(t: Target) -> list[tuple[str, str, str, str, bool]]:
    """(group, version, plural, kind, namespaced) of every resource discovery says a create
    of (its preferred version's)."""
    found = []
    core = (await t.api.get("/api/v1")).json()
    listed = [("", "v1", core)]
    for group in (await t.api.get("/apis")).json()["groups"]:
        version = group["preferredVersion"]["version"]
        listed.append((group["name"], version,
                       (await t.api.get(f"/apis/{group['name']}/{version}")).json()))  # fmt: skip
    for group_name, version, document in listed:
        for resource in document.get("resources") or ():
            if "/" not in resource["name"] and "create" in resource.get("verbs", ()):
                found.append((group_name, version, resource["name"], resource["kind"],
                              resource["namespaced"]))  # fmt: skip
    return sorted(found)


async def test_every_kind_refuses_what_its_validation_refuses(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        resources = await _creatable(t)
        t.note("resources", [f"{g}/{v}/{p}" for g, v, p, _, _ in resources])
        for group, version, plural, kind, namespaced in resources:
            base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
            path = f"{base}/namespaces/{t.namespace}/{plural}" if namespaced else f"{base}/{plural}"
            for label, body in BODIES.items():
                if plural == "bindings" and "generateName" in body["metadata"]:
                    continue
                sent = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind,
                        **body}  # fmt: skip
                by_code = (group, plural) in _BY_CODE or (
                    (group, plural) in _GENERATED and "generateName" in body["metadata"]
                )

                def record(document: Any, by_code: bool = by_code) -> Any:
                    if not isinstance(document, dict) or document.get("kind") != "Status":
                        return "written"
                    if by_code:
                        return document.get("reason")
                    return _SUFFIX.sub("Bad_*", str(document.get("message")))

                t.note("case", f"{plural}: {label}")
                await t.post(path, sent, params={"dryRun": "All"}, record=record)

    await conform(scenario)
