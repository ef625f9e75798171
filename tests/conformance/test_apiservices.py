"""Conformance: APIServices (``apiregistration.k8s.io/v1``): their validation, the status a new
one has and the one kube-apiserver's availability controllers write, and the APIServices it
registers for CRDs' group versions.

The controllers run inside kube-apiserver: the real server's act a moment after a write, the
fake's before it answers. A scenario waits (unrecorded) until the real one has acted, then
records what it sees. APIServices are cluster-scoped and outlive a scenario on the shared real
API server: each is named for its scenario (its group is the scenario's namespace's) and
deleted at its end, unrecorded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
API_SERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"


def _group(t: Target) -> str:
    return f"{t.namespace}.anyop.dev"


def _local(t: Target, version: str = "v1", **spec: Any) -> Body:
    group = _group(t)
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": f"{version}.{group}"},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                 "versionPriority": 10, **spec},
    }  # fmt: skip


def _quiet(document: Any) -> None:
    return None


async def _remove(t: Target, name: str) -> None:
    """Delete an APIService (its finalizers first), unrecorded."""
    path = f"{API_SERVICES}/{name}"
    await t.call("PATCH", path, {"metadata": {"finalizers": None}}, ct=MERGE, record=_quiet)
    await t.call("DELETE", path, record=_quiet)


async def _wait(t: Target, path: str, until: Callable[[Any], bool], *, limit: float = 20) -> Any:
    """GET (unrecorded) until ``until`` holds of the answer (or ``limit`` seconds pass); the
    real server's controllers act a moment after the write that calls for it."""
    deadline = time.monotonic() + limit
    while True:
        response = await t.api.get(path)
        document = response.json()
        if until(document) or time.monotonic() > deadline:
            return document
        await anyio.sleep(0.1)


def _available(document: Any) -> Any:
    """The ``Available`` condition of an APIService, if any."""
    for condition in (document.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Available":
            return condition
    return None


def _reason(reason: str) -> Callable[[Any], bool]:
    return lambda document: (_available(document) or {}).get("reason") == reason


def _owners(document: Any) -> list[Body]:
    """Who owns what of an object: its ``managedFields`` without their times, by manager."""
    entries = (document.get("metadata") or {}).get("managedFields") or []
    timeless = [{k: v for k, v in entry.items() if k != "time"} for entry in entries]
    return sorted(timeless, key=lambda entry: (entry["manager"], entry.get("subresource", "")))


# -- defaults and validation --------------------------------------------------------------------

BODIES: list[tuple[str, Callable[[Target], Body]]] = [
    ("name, priorities", lambda t: {"metadata": {"name": "v1.bad"},
                                    "spec": {"group": _group(t), "version": "v2"}}),
    ("labels after the name", lambda t: {
        "metadata": {"name": f"v3.{_group(t)}", "labels": {"a b": "c"}},
        "spec": {"group": _group(t), "version": "v1", "groupPriorityMinimum": 20001,
                 "versionPriority": 1001}}),
    ("generateName as asked", lambda t: {"metadata": {"generateName": f"v1.{_group(t)}"},
                                         "spec": {"group": _group(t), "version": "v1",
                                                  "groupPriorityMinimum": 1,
                                                  "versionPriority": 1}}),
    ("generateName", lambda t: {"metadata": {"generateName": "gen-"},
                                "spec": {"group": _group(t), "version": "v1",
                                         "groupPriorityMinimum": 1, "versionPriority": 1}}),
    ("path segment", lambda t: {"metadata": {"name": "v1/x%"},
                                "spec": {"group": _group(t), "version": "v1"}}),
    ("empty group", lambda t: {"metadata": {"name": "v2."},
                               "spec": {"version": "v2", "groupPriorityMinimum": 5,
                                        "versionPriority": 5}}),
    ("group and version", lambda t: {"metadata": {"name": f"V1_x.{t.namespace}.Anyop_dev"},
                                     "spec": {"group": f"{t.namespace}.Anyop_dev",
                                              "version": "V1_x", "groupPriorityMinimum": 5,
                                              "versionPriority": 5}}),
    ("local with TLS", lambda t: _local(t, caBundle="AAECAwQ=", insecureSkipTLSVerify=True)),
    ("service incomplete", lambda t: _local(t, service={"port": 0})),
    ("service with both", lambda t: _local(t, service={"namespace": "n", "name": "s",
                                                       "port": 70000},
                                           caBundle="AAECAwQ=", insecureSkipTLSVerify=True)),
    ("finalizer without a slash", lambda t: {**_local(t), "metadata": {
        "name": f"v1.{_group(t)}", "finalizers": ["mine"]}}),
    ("service port defaulted", lambda t: _local(t, service={"namespace": t.namespace,
                                                            "name": "s"})),
]  # fmt: skip


@pytest.mark.parametrize("make", [body for _, body in BODIES], ids=[name for name, _ in BODIES])
async def test_an_api_service_is_defaulted_and_checked(
    conform: Conform, make: Callable[[Target], Body]
) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(API_SERVICES, make(t), record=_spec_and_status)
        if made.get("kind") == "APIService":
            await _remove(t, made["metadata"]["name"])

    await conform(scenario)


def _spec_and_status(document: Any) -> Any:
    """A refusal as it is; a made APIService's name, spec and status (its status a moment
    later may be the availability controllers': the create's answer is not)."""
    if document.get("kind") != "APIService":  # a generated name as the same
        return json.loads(
            re.sub(r"(gen-|anyop\.dev)[a-z0-9]{5}\b", r"\1<random>", json.dumps(document))
        )
    return {key: document.get(key) for key in ("metadata", "spec", "status")}


async def test_an_update_is_checked_against_the_name(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(API_SERVICES, _local(t))
        name = made["metadata"]["name"]
        path = f"{API_SERVICES}/{name}"
        await t.patch(path, {"spec": {"version": "v2", "groupPriorityMinimum": 0}})
        await t.patch(path, {"metadata": {"labels": {"x": "y"}}, "spec": {"versionPriority": 7}})
        changed = {**made, "spec": {**made["spec"], "group": "other.dev"}}
        await t.put(path, changed)
        bad = {"status": {"conditions": [{"type": "Available", "status": "Maybe"}]}}
        await t.patch(f"{path}/status", bad)
        await _remove(t, name)

    await conform(scenario)


# -- status ---------------------------------------------------------------------------------------


async def test_a_local_api_service_is_available_at_once_and_kept_so(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(API_SERVICES, {**_local(t), "status": {"conditions": []}})
        name = made["metadata"]["name"]
        path = f"{API_SERVICES}/{name}"
        t.note("owners after the create", _owners(made))
        # The /status write keeps the spec and labels; the local availability controller then
        # sets the Available condition back, and leaves the other one.
        written = {**made, "metadata": {**made["metadata"], "labels": {"c": "d"}},
                   "spec": {**made["spec"], "groupPriorityMinimum": 5},
                   "status": {"conditions": [
                       {"type": "Available", "status": "False", "reason": "Mine", "message": "m",
                        "lastTransitionTime": "2020-01-01T00:00:00Z"},
                       {"type": "Other", "status": "True", "reason": "R", "message": "x",
                        "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}  # fmt: skip
        await t.put(f"{path}/status", written)
        await _wait(t, path, _reason("Local"))
        seen = await t.get(path)
        t.note("owners after the controller", [owner["manager"] for owner in _owners(seen)])
        await t.patch(path, {"metadata": {"labels": {"e": "f"}}, "status": {"conditions": []}})
        await _remove(t, name)

    await conform(scenario)


async def test_a_remote_api_service_is_unavailable_until_its_service_answers(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        service = {"namespace": t.namespace, "name": "backend"}
        made = await t.post(API_SERVICES, _local(t, service=service))
        name = made["metadata"]["name"]
        path = f"{API_SERVICES}/{name}"
        await _wait(t, path, _reason("ServiceNotFound"))
        seen = await t.get(path)
        t.note("owners after the controller", _owners(seen))
        body = {"metadata": {"name": "backend"}, "spec": {"ports": [{"port": 80, "name": "web"}]}}
        await t.post(t.core("services"), body, record=_quiet)
        await _wait(t, path, _reason("ServicePortError"))
        await t.get(path)
        ports = {"spec": {"ports": [{"port": 443, "name": "https", "targetPort": 8443}]}}
        await t.patch(t.core("services", "backend"), ports, record=_quiet)
        await _wait(t, path, _reason("EndpointsNotFound"))
        await t.get(path)
        piece = {"metadata": {"name": "backend-1",
                              "labels": {"kubernetes.io/service-name": "backend"}},
                 "addressType": "IPv4",
                 "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": False}}],
                 "ports": [{"name": "https", "port": 8443}]}  # fmt: skip
        await t.post(t.apis("discovery.k8s.io/v1", "endpointslices"), piece, record=_quiet)
        await _wait(t, path, _reason("MissingEndpoints"))
        await t.get(path)
        await t.call("DELETE", t.core("services", "backend"), record=_quiet)
        await _wait(t, path, _reason("ServiceNotFound"))
        await t.get(path)
        # Made local, it is available again; made remote, not.
        await t.patch(path, {"spec": {"service": None}})
        await _wait(t, path, _reason("Local"))
        await t.get(path)
        await _remove(t, name)

    await conform(scenario)


# -- APIServices registered for CRDs --------------------------------------------------------------


def _crd(t: Target, *versions: tuple[str, bool]) -> Body:
    group = _group(t)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [
                {
                    "name": name,
                    "served": served,
                    "storage": index == 0,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for index, (name, served) in enumerate(versions)
            ],
        },
    }


async def _registered(t: Target, names: set[str], *, limit: float = 20) -> list[Body]:
    """The scenario's group's APIServices once they are ``names`` (or ``limit`` seconds
    passed), without their resourceVersions (the real server's controllers make them in no
    set order), their owners without times."""
    group = _group(t)
    deadline = time.monotonic() + limit
    while True:
        listed = (await t.api.get(API_SERVICES)).json()
        items = [item for item in listed["items"] if item["spec"].get("group") == group]
        found = {item["metadata"]["name"] for item in items}
        if found == names or time.monotonic() > deadline:
            break
        await anyio.sleep(0.1)
    shown = []
    for item in items:
        metadata = {k: v for k, v in item["metadata"].items() if k != "resourceVersion"}
        shown.append({**item, "metadata": metadata, "owners": _owners(item)})
    return shown


async def test_a_crds_group_versions_have_api_services(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = _group(t)
        crd = f"{CRDS}/things.{group}"
        first, second = f"v1.{group}", f"v2beta1.{group}"
        await t.post(CRDS, _crd(t, ("v1", True), ("v2beta1", True), ("v3", False)), record=_quiet)
        t.note("made", await _registered(t, {first, second}))
        # Another's change of its spec is undone; a deleted one comes back.
        path = f"{API_SERVICES}/{first}"
        await t.patch(
            path, {"spec": {"groupPriorityMinimum": 5}, "metadata": {"labels": {"x": "y"}}}
        )
        await _wait(t, path, lambda d: d["spec"]["groupPriorityMinimum"] == 1000)
        t.note("set right", await _registered(t, {first, second}))
        await t.delete(path, record=lambda d: d.get("status"))
        await _wait(t, path, lambda d: d.get("kind") == "APIService")
        t.note("made again", await _registered(t, {first, second}))
        # A version no longer served loses its APIService.
        stored = (await t.api.get(crd)).json()
        stored["spec"]["versions"][1]["served"] = False
        await t.put(crd, stored, record=_quiet)
        t.note("one version served", await _registered(t, {first}))
        # Without the label, it is another's: it stays, even once the CRD is gone.
        unlabelled = {"spec": {"groupPriorityMinimum": 7},
                      "metadata": {"labels": {_AUTOMANAGED: None}}}  # fmt: skip
        await t.patch(path, unlabelled, record=lambda d: d.get("spec"))
        await t.call("DELETE", crd, record=_quiet)
        await _wait(t, crd, lambda d: d.get("kind") == "Status")
        t.note("the CRD gone", await _registered(t, {first}))
        await _remove(t, first)

    await conform(scenario)


async def test_a_deleted_crds_api_services_go(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = _group(t)
        await t.post(CRDS, _crd(t, ("v1", True), ("v1beta1", True)), record=_quiet)
        made = await _registered(t, {f"v1.{group}", f"v1beta1.{group}"})
        t.note("made", [item["metadata"]["name"] for item in made])
        await t.call("DELETE", f"{CRDS}/things.{group}", record=_quiet)
        t.note("the CRD gone", await _registered(t, set()))

    await conform(scenario)
