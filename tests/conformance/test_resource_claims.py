"""Conformance: Dynamic Resource Allocation (``resource.k8s.io/v1``): ResourceClaims and
ResourceClaimTemplates defaulted (a request's allocation mode and count, a toleration's
operator) and checked (requests, constraints, config), valid and not; their specs immutable,
a claim's status reset on create and kept by a PUT of the claim; DeviceClasses counted in
generations and checked.

DeviceClasses outlive a scenario on the shared real API server: each is named for its scenario
and deleted at its end (unrecorded).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]

_V1 = "resource.k8s.io/v1"
_CLASS = "gpu.example.com"


def _exactly(**fields: Any) -> Body:
    return {"deviceClassName": _CLASS, **fields}


DEVICES: list[Body] = [
    {"requests": [{"name": "a", "exactly": _exactly()},
                  {"name": "b", "firstAvailable": [
                      {"name": "x", "deviceClassName": "c"},
                      {"name": "y", "deviceClassName": "c", "allocationMode": "All"}]}],
     "constraints": [{"requests": ["a", "b/x"], "matchAttribute": "dra.example.com/model"}],
     "config": [{"requests": ["a"], "opaque": {"driver": "dra.example.com",
                                               "parameters": {"k": 1}}}]},
    {"requests": [{"name": "a", "exactly": _exactly(tolerations=[
        {"key": "k", "effect": "NoSchedule"}, {"operator": "Exists"},
        {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5}])}]},
    {"requests": [{"name": "a", "exactly": _exactly(allocationMode="All")},
                  {"name": "b", "exactly": _exactly(count=4, selectors=[
                      {"cel": {"expression": "device.driver == 'dra.example.com'"}}])}],
     "constraints": [{"distinctAttribute": "dra.example.com/x"}]},
    {},
    {"requests": [{"name": "A_b"}]},
    {"requests": [{"name": "a", "exactly": _exactly(),
                   "firstAvailable": [{"name": "x", "deviceClassName": "c"}]}]},
    {"requests": [{"name": "a", "exactly": {}}]},
    {"requests": [{"name": "a", "exactly": {"deviceClassName": "Bad_Class"}}]},
    {"requests": [{"name": "a", "exactly": _exactly(allocationMode="All", count=2)}]},
    {"requests": [{"name": "a", "exactly": _exactly(allocationMode="Some")}]},
    {"requests": [{"name": "a", "exactly": _exactly(count=-1)}]},
    {"requests": [{"name": "a", "exactly": _exactly()}, {"name": "a", "exactly": _exactly()}]},
    {"requests": [{"name": "a", "exactly": _exactly(selectors=[
        {}, {"cel": {"expression": "x" * 10241}}])}]},
    {"requests": [{"name": "a", "exactly": _exactly()}],
     "constraints": [{"requests": ["b", "a/x", "a/b/c", "A"]},
                     {"requests": ["a", "a"], "matchAttribute": "bad", "distinctAttribute": "x/y"},
                     {"requests": ["a"], "matchAttribute": "/"},
                     {"distinctAttribute": "Bad_Domain/9x"}]},
    {"requests": [{"name": "a", "exactly": _exactly()}],
     "config": [{"requests": ["z"]}, {"opaque": {"driver": "", "parameters": {}}},
                {"opaque": {"driver": "Bad_Driver"}},
                {"opaque": {"driver": "dra.example.com", "parameters": [1, 2]}},
                {"opaque": {"driver": "dra.example.com", "parameters": "text"}}]},
    {"requests": [{"name": "a", "firstAvailable": [
        {"name": "x"}, {"name": "x", "deviceClassName": "c", "allocationMode": "All", "count": 3},
        {"name": "Y", "deviceClassName": "c", "count": -2}]}]},
    {"requests": [{"name": "a", "exactly": _exactly(tolerations=[
        {"key": "bad key", "operator": "Equal", "value": "v", "effect": "X"},
        {"operator": "Exists", "value": "v"}, {"operator": "Bogus"},
        {"key": "k", "value": "bad value!"}])}]},
    {"requests": [{"name": f"r{index}", "exactly": _exactly()} for index in range(33)]},
    {"requests": [{"name": "a", "firstAvailable": [
        {"name": f"s{index}", "deviceClassName": "c"} for index in range(9)]}]},
]  # fmt: skip


def _claim(name: str, devices: Body) -> Body:
    return {"apiVersion": _V1, "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": devices}}  # fmt: skip


async def test_resource_claims_are_defaulted_and_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_V1, "resourceclaims")
        for index, devices in enumerate(DEVICES):
            await t.post(path, _claim(f"claim-{index}", devices))

    await conform(scenario)


async def test_a_resource_claims_spec_is_immutable_and_its_status_its_own(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_V1, "resourceclaims")
        body = _claim("claim", DEVICES[0])
        body["status"] = {"devices": [{"driver": "d.example.com", "pool": "p", "device": "x"}]}
        made = await t.post(path, body)
        changed = copy.deepcopy(made)
        changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
        await t.put(f"{path}/claim", changed)
        labelled = copy.deepcopy(made)
        labelled["metadata"]["labels"] = {"a": "b"}
        labelled["status"] = {"devices": []}
        labelled = await t.put(f"{path}/claim", labelled)
        await t.patch(f"{path}/claim", {"spec": {"devices": {"requests": None}}})
        await t.put(f"{path}/claim/status", {**labelled, "status": {}})

    await conform(scenario)


def _template(name: str, devices: Body, **metadata: Any) -> Body:
    return {"apiVersion": _V1, "kind": "ResourceClaimTemplate", "metadata": {"name": name},
            "spec": {"metadata": metadata, "spec": {"devices": devices}}}  # fmt: skip


async def test_resource_claim_templates_are_defaulted_checked_and_immutable(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_V1, "resourceclaimtemplates")
        for index in (0, 1, 4, 8, 13):
            await t.post(path, _template(f"template-{index}", DEVICES[index]))
        await t.post(path, _template("bad-labels", DEVICES[1], labels={"a b": "c"}))
        made = await t.post(path, _template("t", DEVICES[2], labels={"a": "b"}))
        changed = copy.deepcopy(made)
        changed["spec"]["spec"]["devices"]["requests"][0]["name"] = "c"
        await t.put(f"{path}/t", changed)
        broken = copy.deepcopy(made)
        broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 0
        await t.put(f"{path}/t", broken)
        await t.patch(f"{path}/t", {"metadata": {"labels": {"x": "y"}}})

    await conform(scenario)


def _class_name(t: Target) -> str:
    return f"anyop-conf-{t.namespace}"


DEVICE_CLASSES: list[Body] = [
    {"selectors": [{"cel": {"expression": "device.driver == 'dra.example.com'"}}],
     "config": [{"opaque": {"driver": "dra.example.com", "parameters": {"a": "b"}}}],
     "extendedResourceName": "example.com/gpu"},
    {},
    {"selectors": [{}, {"cel": {"expression": "y" * 10241}}],
     "config": [{}, {"opaque": {"driver": "Bad_Driver"}}],
     "extendedResourceName": "gpu"},
    {"extendedResourceName": "kubernetes.io/gpu"},
]  # fmt: skip


@pytest.mark.parametrize("spec", DEVICE_CLASSES)
async def test_a_device_class_is_checked_and_counted(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        name = _class_name(t)
        path = "/apis/resource.k8s.io/v1/deviceclasses"
        made = await t.post(path, {"apiVersion": _V1, "kind": "DeviceClass",
                                   "metadata": {"name": name}, "spec": spec})  # fmt: skip
        if made.get("kind") == "Status":
            return
        try:
            labelled = copy.deepcopy(made)
            labelled["metadata"]["labels"] = {"a": "b"}
            labelled = await t.put(f"{path}/{name}", labelled)
            await t.patch(f"{path}/{name}", {"spec": {"config": [{"opaque": {"driver": "x"}}]}})
            await t.patch(f"{path}/{name}", {"spec": {"selectors": [
                {"cel": {"expression": "device.driver == 'x'"}}]}})  # fmt: skip
        finally:
            await t.call("DELETE", f"{path}/{name}", record=lambda d: None)

    await conform(scenario)


async def test_admin_access_needs_the_namespaces_label(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        claims, templates = t.apis(_V1, "resourceclaims"), t.apis(_V1, "resourceclaimtemplates")
        admin = {"requests": [{"name": "a", "exactly": _exactly()},
                              {"name": "b", "exactly": _exactly(adminAccess=True)},
                              {"name": "c", "exactly": _exactly(adminAccess=True)}]}  # fmt: skip
        plain = {"requests": [{"name": "a", "exactly": _exactly(adminAccess=False)}]}
        bad = {"requests": [{"name": "A", "exactly": _exactly(adminAccess=True, count=0)}]}
        for label in (None, "yes", "true"):
            labels = {"resource.kubernetes.io/admin-access": label}
            await t.patch(f"/api/v1/namespaces/{t.namespace}", {"metadata": {"labels": labels}})
            await t.post(claims, _claim(f"admin-{label}", admin))
            await t.post(claims, _claim(f"plain-{label}", plain))
            await t.post(claims, _claim(f"bad-{label}", bad))
            await t.post(templates, _template(f"admin-{label}", admin))
        await t.patch(f"{claims}/admin-true", {"metadata": {"labels": {"a": "b"}}})

    await conform(scenario)


SELECTORS = [
    "device.driver == 'dra.example.com'",
    "device.attributes['dra.example.com'].model == 'a' && device.allowMultipleAllocations",
    "device.capacity['dra.example.com'].memory.compareTo(quantity('1Gi')) >= 0",
    "'dra.example.com' in device.attributes && device.attributes['x.dev'].count > 2",
    "device.attributes['dra.example.com'].ok",  # of the unknown type: allowed
    "device.driver",  # a string
    "1 + 2",
    "[device.driver]",
    "self.spec == 1",
    "device.vendor == 'x'",
    "device.driver == 1",
    "device.driver ==",
    "",
    "  ",
    "device.driver &&",
    "device.driver.startsWith('dra') && size(device.attributes) > 0",
    "has(device.attributes.x) || device.driver.matches('^dra')",
    "device.attributes.exists(domain, domain.endsWith('.com'))",
    "device.driver.size() < 3 ? true : false",
    "device.driver + 1 == 'x'",
    # costs: loops over the attributes (32 domains of 32 each), the estimate near 1,000,000
    "device.attributes.all(d, device.attributes[d].all(k, k.size() < 10))",
    "device.attributes['dra.example.com'].model.matches('^[a-z]+$')",
    "device.attributes.all(d, device.attributes[d].all(k, device.capacity.all(c, c != d)))",
    "device.attributes.exists(d, device.attributes.exists(e, device.attributes.exists(f, "
    "d + e + f == 'x')))",
    "device.attributes.all(d, device.attributes[d].all(k, device.attributes[d][k] == 'x' || "
    "device.attributes.all(e, e.matches(d + k))))",
    "device.driver.matches(device.driver + device.driver)",
    "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
    "device.attributes[e].all(j, device.attributes[e][j].model == 'x'))))",
]


async def test_device_selectors_are_compiled(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = t.apis(_V1, "resourceclaims")
        for index, expression in enumerate(SELECTORS):
            devices = {"requests": [{"name": "a", "exactly": _exactly(
                selectors=[{"cel": {"expression": expression}}])}]}  # fmt: skip
            await t.post(path, _claim(f"selector-{index}", devices))

    await conform(scenario)
