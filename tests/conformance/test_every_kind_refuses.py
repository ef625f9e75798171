"""Conformance: every resource discovery lists answers bad requests as kube-apiserver does
(routes of the other scope, selectors, patch types, bodies that are no JSON or of no kind), and
every kind a client may create refuses what its validation refuses: a dry-run create of each
with no spec, an empty spec, a name that is no subdomain, a bad label value, a
``generateName`` that makes none, a finalizer of no domain, recorded as its code and message
(a generated name's suffix left out).

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


async def _every(t: Target) -> list[tuple[str, str, str, str, bool, tuple[str, ...]]]:
    """(group, version, plural, kind, namespaced, verbs) of every resource of each group's
    preferred version, as discovery lists them."""
    found = []
    listed = [("", "v1", (await t.api.get("/api/v1")).json())]
    for group in (await t.api.get("/apis")).json()["groups"]:
        version = group["preferredVersion"]["version"]
        listed.append((group["name"], version,
                       (await t.api.get(f"/apis/{group['name']}/{version}")).json()))  # fmt: skip
    for group_name, version, document in listed:
        for resource in document.get("resources") or ():
            if "/" not in resource["name"]:
                verbs = tuple(resource.get("verbs") or ())
                found.append((group_name, version, resource["name"], resource["kind"],
                              resource["namespaced"], verbs))  # fmt: skip
    return sorted(found)


def _paths(t: Target, group: str, version: str, plural: str, namespaced: bool) -> tuple[str, str]:
    """A resource's collection path, and that of the other scope."""
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    scoped = f"{base}/namespaces/{t.namespace}/{plural}"
    return (scoped, f"{base}/{plural}") if namespaced else (f"{base}/{plural}", scoped)


async def test_every_kind_refuses_what_its_validation_refuses(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        resources = [found for found in await _every(t) if "create" in found[5]]
        t.note("resources", [f"{g}/{v}/{p}" for g, v, p, *_ in resources])
        for group, version, plural, kind, namespaced, _ in resources:
            path, _ = _paths(t, group, version, plural, namespaced)
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


def _answer(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return document.get("message")
    return document.get("kind") if isinstance(document, dict) else document


async def test_every_resource_answers_bad_requests_as_kube_apiserver(conform: Conform) -> None:
    """Of each resource: a subresource it has not, the other scope's paths, bad selectors, a
    negative limit, a resourceVersion that is no number, a patch that is no JSON and one of no
    patch type (of an object that does not exist), a replace of another name, a delete of what
    does not exist, a create that is no JSON and one of a kind no scheme has."""

    async def scenario(t: Target) -> None:
        for group, version, plural, kind, namespaced, _ in await _every(t):
            own, other = _paths(t, group, version, plural, namespaced)
            api_version = f"{group}/{version}" if group else version
            renamed = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "other"}}
            nope = {"apiVersion": "v1", "kind": "Nope", "metadata": {"name": "x"}}
            await t.get(f"{own}/x/nosuch", record=_answer)
            await t.get(f"{other}/x", record=_answer)
            await t.get(other, record=_answer)
            for query in ({"fieldSelector": "x.y=z"}, {"labelSelector": "a b"}, {"limit": "-1"},
                          {"resourceVersion": "abc"}):  # fmt: skip
                await t.get(own, params=query, record=_answer)
            await t.patch(f"{own}/nosuch", b"{", record=_answer)
            await t.patch(f"{own}/nosuch", b"{}", ct="text/plain", record=_answer)
            await t.put(f"{own}/nosuch", renamed, record=_answer)
            await t.delete(f"{own}/nosuch", record=_answer)
            await t.post(own, b"{not json", record=_answer)
            await t.post(own, nope, record=_answer)

    await conform(scenario)
