"""Conformance: ResourceSlices (``resource.k8s.io/v1``, Dynamic Resource Allocation): valid
slices of each node selection (one node, a node selector, all nodes, per device) accepted and
defaulted (a taint's time added; the fields of gates off in 1.36.3 dropped), invalid ones
refused (driver, pool, node selection, devices with their attributes, capacities, taints,
counters and binding conditions, shared counters, the limits on counts); their driver, pool
name and node name immutable; their generation counted.

ResourceSlices are cluster-scoped and outlive a scenario on the shared real API server: each
is named for its scenario and deleted at its end (unrecorded), those refused too.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import JSON_PATCH, Target, status_shown

pytestmark = pytest.mark.anyio

Body = dict[str, Any]

_V1 = "resource.k8s.io/v1"
_PATH = f"/apis/{_V1}/resourceslices"
_TERM = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                               "values": ["node-1"]}]}  # fmt: skip


def _masked(document: Any) -> Any:
    """A document with each taint's ``timeAdded`` (the server's clock) masked."""
    if isinstance(document, dict):
        return {key: "<added>" if key == "timeAdded" and isinstance(value, str)
                else _masked(value) for key, value in document.items()}  # fmt: skip
    if isinstance(document, list):
        return [_masked(item) for item in document]
    return document


def _base(**fields: Any) -> Body:
    """A spec's driver and pool, with ``fields``."""
    pool = {"name": "pool", "generation": 0, "resourceSliceCount": 1}
    return {"driver": "dra.example.com", "pool": pool, **fields}


def _on_node(*devices: Body, **fields: Any) -> Body:
    """A spec of one node's devices."""
    return _base(nodeName="node-1", devices=list(devices), **fields)


def _slice(name: str, spec: Body) -> Body:
    return {"apiVersion": _V1, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


async def _post_all(t: Target, specs: list[Body], *, shown: Any = _masked) -> None:
    """POST each spec as a slice of its own; then delete what was made (unrecorded)."""
    names = [f"{t.namespace}-{index}" for index in range(len(specs))]
    try:
        for name, spec in zip(names, specs, strict=True):
            await t.post(_PATH, _slice(name, spec), record=shown)
    finally:
        for name in names:
            await t.call("DELETE", f"{_PATH}/{name}", record=lambda d: None)


VALID: list[Body] = [
    _on_node({"name": "gpu-0", "attributes": {
        "model": {"string": "a100"}, "dra.example.com/index": {"int": 0},
        "healthy": {"bool": True}, "driverVersion": {"version": "1.2.3-rc.1+build.5"}},
        "capacity": {"memory": {"value": "40Gi"}, "dra.example.com/cores": {"value": "1.5"}},
        "taints": [{"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"},
                   {"key": "maintenance", "effect": "None",
                    "timeAdded": "2025-03-04T05:06:07Z"}],
        "bindsToNode": True, "bindingConditions": ["ready"],
        "bindingFailureConditions": ["example.com/failed"]},
        {"name": "gpu-1", "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "cores"}},
         "attributes": {"name": {"string": "x", "strings": ["y"]}}}),
    _base(nodeSelector={"nodeSelectorTerms": [{
        "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]},
                             {"key": "rack", "operator": "Exists"},
                             {"key": "size", "operator": "Gt", "values": ["3"]}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
        devices=[{"name": "nic"}]),
    _base(allNodes=True, devices=[{"name": "shared", "allowMultipleAllocations": True,
        "capacity": {"bandwidth": {"value": "10G", "requestPolicy": {
            "default": "1G", "validRange": {"min": "1G", "max": "10G", "step": "1G"}}},
                     "slots": {"value": "8", "requestPolicy": {
                         "default": "2", "validValues": ["1", "2", "4", "8"]}}}}]),
    _base(perDeviceNodeSelection=True, devices=[
        {"name": "a", "nodeName": "node-1", "consumesCounters": [
            {"counterSet": "set", "counters": {"memory": {"value": "1Gi"}}}]},
        {"name": "b", "nodeSelector": {"nodeSelectorTerms": [_TERM, _TERM]}},
        {"name": "c", "allNodes": True}]),
    _base(nodeName="node-2", pool={"name": "example.com/pool-a", "resourceSliceCount": 2},
          sharedCounters=[
        {"name": "set", "counters": {"memory": {"value": "8Gi"}, "cores": {"value": "4"}}},
        {"name": "other", "counters": {"memory": {"value": "1"}}}]),
    _base(allNodes=True),
    _base(perDeviceNodeSelection=True, sharedCounters=[
        {"name": "set", "counters": {"memory": {"value": "8Gi"}}}]),
]  # fmt: skip


async def test_resource_slices_of_each_node_selection_are_accepted_and_defaulted(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        names = [f"{t.namespace}-{index}" for index in range(len(VALID))]
        try:
            for name, spec in zip(names, VALID, strict=True):
                await t.post(_PATH, _slice(name, spec), record=_masked)
            await t.get(f"{_PATH}/{names[0]}", record=_masked)
        finally:
            for name in names:
                await t.call("DELETE", f"{_PATH}/{name}", record=lambda d: None)

    await conform(scenario)


_BAD_TERM = {
    "matchExpressions": [
        {"key": "bad key", "operator": "Bad"},
        {"key": "k", "operator": "Exists", "values": ["v"]},
        {"key": "k", "operator": "In"},
        {"key": "k", "operator": "Gt", "values": ["1", "2"]},
        {"key": "k", "operator": "In", "values": ["bad value!"]},
    ]
}
_BAD_FIELDS = {
    "matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
        {"key": "spec.x", "operator": "Exists"},
        {"key": "metadata.name", "operator": "NotIn", "values": ["Bad_Name"]},
    ]
}

INVALID: list[Body] = [
    {},
    {"driver": "Bad_Driver", "pool": {"name": "a/b//C", "generation": -1,
                                      "resourceSliceCount": -2}, "nodeName": ""},
    {"driver": "d" * 64, "pool": {"name": "p" * 254, "resourceSliceCount": 1},
     "nodeName": "Bad_Node"},
    _base(nodeName="n", nodeSelector={"nodeSelectorTerms": [_TERM]}, allNodes=True,
          perDeviceNodeSelection=True),
    _base(allNodes=False, perDeviceNodeSelection=False),
    _base(nodeSelector={}),
    _base(nodeSelector={"nodeSelectorTerms": [_BAD_TERM, _BAD_FIELDS]}),
    _on_node({"name": "Bad_Name"}, {"name": ""}, {"name": "a"}, {"name": "a"}),
    _on_node({"name": "a", "attributes": {"model": {}}},
             {"name": "b", "attributes": {"x": {"int": 1, "bool": True}}},
             {"name": "c", "attributes": {"s": {"string": "x" * 65}}},
             {"name": "d", "attributes": {"v": {"version": "1.2"}}},
             {"name": "e", "attributes": {"w": {"version": "1.0.0-" + "a" * 60}}},
             {"name": "f", "attributes": {"l": {"ints": [1]}}},
             {"name": "g", "attributes": {"bad-key": {"int": 1}}},
             {"name": "h", "attributes": {"dom.com/": {"int": 1}}},
             {"name": "i", "attributes": {"/x": {"int": 1}}},
             {"name": "j", "attributes": {"Bad_Domain/x": {"int": 1}}},
             {"name": "k", "attributes": {"a" * 33: {"int": 1}}},
             {"name": "l", "attributes": {"d" * 60 + ".com/" + "n" * 40: {}}}),
    _on_node({"name": "a", "capacity": {"c": {"value": "1", "requestPolicy": {"default": "1"}}}},
             {"name": "b", "allowMultipleAllocations": True, "capacity": {"mem": {
                 "value": "10Gi", "requestPolicy": {"default": "3Gi",
                                                    "validValues": ["2Gi", "1Gi", "20Gi"]}}}},
             {"name": "c", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "10", "requestPolicy": {"validValues": ["1"],
                                                  "validRange": {"min": "1"}}}}},
             {"name": "d", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "10", "requestPolicy": {"validValues": ["1"]}}}},
             {"name": "e", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "10", "requestPolicy": {"default": "1", "validRange": {}}}}},
             {"name": "f", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "16", "requestPolicy": {"default": "1", "validRange": {
                     "min": "20", "max": "10", "step": "3"}}}}},
             {"name": "g", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "16", "requestPolicy": {"default": "500m", "validRange": {
                     "min": "1", "max": "32", "step": "4"}}}}},
             {"name": "h", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "100", "requestPolicy": {
                     "default": "5", "validValues": [str(n) for n in range(11)]}}}},
             {"name": "i", "allowMultipleAllocations": True, "capacity": {"c": {
                 "value": "100", "requestPolicy": {"default": "1",
                                                   "validValues": ["1", "1", "1500m"]}}}}),
    _on_node({"name": "a", "taints": [{"key": "k", "effect": "NoSchedule"}] * 17},
             {"name": "b", "taints": [{"key": "", "effect": "NoSchedule"},
                                      {"key": "k", "value": "bad value!", "effect": ""},
                                      {"key": "k", "effect": "Bad"},
                                      {"key": "a/b/c", "effect": "NoExecute"}]}),
    _on_node({"name": "a", "consumesCounters": [
                 {"counterSet": f"s{n}", "counters": {"c": {"value": "1"}}} for n in range(3)]},
             {"name": "b", "consumesCounters": [
                 {"counterSet": ""},
                 {"counterSet": "Bad_Set", "counters": {"Bad_Counter": {"value": "1"}}}]},
             {"name": "d", "consumesCounters": [{"counterSet": "s", "counters": {"c": {
                 "value": "1"}}}, {"counterSet": "s", "counters": {"d": {"value": "2"}}}]},
             {"name": "c", "consumesCounters": [{"counterSet": "s", "counters": {
                 f"c{n}": {"value": "1"} for n in range(33)}}]}),
    _on_node({"name": "a"}, sharedCounters=[{"name": "s", "counters": {"c": {"value": "1"}}}]),
    _base(nodeName="n", sharedCounters=[
        {"name": f"s{n}", "counters": {"c": {"value": "1"}}} for n in range(9)]),
    _base(nodeName="n", sharedCounters=[
        {"name": ""}, {"name": "Bad_Name", "counters": {"c": {"value": "1"}}},
        {"name": "s", "counters": {"Bad": {"value": "1"}}},
        {"name": "s", "counters": {"c": {"value": "1"}}}]),
    _base(perDeviceNodeSelection=True, devices=[
        {"name": "a"}, {"name": "b", "nodeName": "n", "allNodes": True},
        {"name": "c", "nodeName": ""}, {"name": "d", "allNodes": False},
        {"name": "e", "nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "k", "operator": "Bad"}]}]}},
        {"name": "f", "nodeSelector": {}},
        {"name": "g", "nodeName": "Bad_Node", "nodeSelector": {"nodeSelectorTerms": [_TERM]},
         "allNodes": True}]),
    _on_node({"name": "a", "allNodes": False}, {"name": "b", "nodeName": "n"}),
    _on_node({"name": "a", "bindingConditions": list("abcde")},
             {"name": "b", "bindingConditions": ["a", "a", "Bad Key"],
              "bindingFailureConditions": ["a", "x", "x"]},
             {"name": "c", "bindingFailureConditions": ["x"]},
             {"name": "d", "bindingConditions": ["x"],
              "bindingFailureConditions": [f"f{n}" for n in range(5)]}),
    _on_node(*({"name": f"d{n}"} for n in range(129))),
    _on_node(*({"name": f"d{n}"} for n in range(64)),
             {"name": "t", "taints": [{"key": "k", "effect": "NoSchedule"}]}),
    _on_node(*({"name": f"d{n}", "consumesCounters": [
        {"counterSet": "s", "counters": {"c": {"value": "1"}}}]} for n in range(65))),
    _on_node({"name": "a", "attributes": {f"a{n}": {"int": n} for n in range(33)}}),
    _on_node({"name": "a", "attributes": {f"a{n}": {"int": n} for n in range(20)},
              "capacity": {f"c{n}": {"value": "1"} for n in range(20)}}),
    _on_node({"name": "a", "attributes": {f"a{n}": {"int": n} for n in range(49)}}),
]  # fmt: skip


async def test_invalid_resource_slices_are_refused(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _post_all(t, INVALID)

    await conform(scenario)


MAPS: list[Body] = [
    _on_node({"name": "a", "attributes": {
        "model": {}, "x": {"int": 1, "string": "s"}, "bad-key": {"int": 1},
        "Bad_Domain/": {"version": "x"}}, "capacity": {
            "c": {"value": "1", "requestPolicy": {}}, "/d": {"value": "1"}}}),
    _on_node({"name": "a", "consumesCounters": [{"counterSet": "s", "counters": {
        "Bad_A": {"value": "1"}, "Bad_B": {"value": "2"}}}]}),
    _base(nodeName="n", sharedCounters=[{"name": "s", "counters": {
        "Bad_A": {"value": "1"}, "Bad_B": {"value": "2"}, "c" * 64: {"value": "1"}}}]),
]  # fmt: skip


async def test_resource_slices_maps_are_checked_key_by_key(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # in Go's map order: the causes as a set
        await _post_all(t, MAPS, shown=status_shown)

    await conform(scenario)


async def test_a_resource_slices_driver_pool_and_node_are_immutable_and_it_is_counted(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-slice"
        path = f"{_PATH}/{name}"
        spec = _on_node({"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]})
        try:
            made = await t.post(_PATH, _slice(name, spec), record=_masked)
            moved = copy.deepcopy(made)
            moved["spec"] |= {"driver": "other.example.com", "nodeName": "node-2"}
            moved["spec"]["pool"]["name"] = "other"
            await t.put(path, moved, record=_masked)
            everywhere = copy.deepcopy(made)
            del everywhere["spec"]["nodeName"]
            everywhere["spec"]["allNodes"] = True
            await t.put(path, everywhere, record=_masked)
            labelled = copy.deepcopy(made)
            labelled["metadata"]["labels"] = {"a": "b"}
            labelled = await t.put(path, labelled, record=_masked)
            if labelled.get("kind") == "Status":
                return
            newer = copy.deepcopy(labelled)
            newer["spec"]["pool"]["generation"] = 1
            newer = await t.put(path, newer, record=_masked)
            await t.patch(path, {"spec": {"devices": [
                {"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]},
                {"name": "gpu-1", "taints": [{"key": "j", "effect": "NoExecute"}]}]}},
                record=_masked)  # fmt: skip
            attributes = {"a": {"int": 1, "ints": [1]}}  # the list dropped, as is what follows
            await t.patch(path, [{"op": "add", "path": "/spec/devices/0/attributes",
                                  "value": attributes}], ct=JSON_PATCH, record=_masked)  # fmt: skip
            mapped = "/spec/devices/0/nodeAllocatableResourceMappings"
            await t.patch(path, [{"op": "add", "path": mapped,
                                  "value": {"cpu": {"capacityKey": "a"}}}],
                          ct=JSON_PATCH, record=_masked)  # fmt: skip
            await t.patch(path, [{"op": "add", "path": "/spec/devices/-",
                                  "value": {"name": "Bad", "taints": [{"key": "x"}]}}],
                          ct=JSON_PATCH, record=_masked)  # fmt: skip
            await t.patch(
                path, {"spec": {"nodeName": None, "perDeviceNodeSelection": True}}, record=_masked
            )
            await t.get(path, record=_masked)
        finally:
            await t.call("DELETE", path, record=lambda d: None)

    await conform(scenario)


async def test_an_update_checks_the_metadata_in_each_kinds_order(conform: Conform) -> None:
    """A claim's, a claim template's and a device class's update check the metadata as on a
    create, then as on an update; a slice's as on an update alone (Go's ``Validate*Update``)."""

    async def scenario(t: Target) -> None:
        requests = {"devices": {"requests": [{"name": "a", "exactly": {
            "deviceClassName": "gpu.example.com"}}]}}  # fmt: skip
        made_here: list[str] = []
        bodies = [
            (t.apis(_V1, "resourceclaims"), "ResourceClaim", "claim", requests),
            (t.apis(_V1, "resourceclaimtemplates"), "ResourceClaimTemplate", "template",
             {"spec": requests}),
            (f"/apis/{_V1}/deviceclasses", "DeviceClass", f"{t.namespace}-class", {}),
            (_PATH, "ResourceSlice", f"{t.namespace}-slice", _on_node({"name": "gpu-0"})),
        ]  # fmt: skip
        try:
            for path, kind, name, spec in bodies:
                body = {"apiVersion": _V1, "kind": kind, "metadata": {"name": name},
                        "spec": spec}  # fmt: skip
                made = await t.post(path, body, record=_masked)
                made_here.append(f"{path}/{name}")
                broken = copy.deepcopy(made)
                broken["metadata"] |= {"labels": {"a b": "c"}, "finalizers": ["bad"]}
                await t.put(f"{path}/{name}", broken, record=_masked)
        finally:
            for made_path in made_here:
                await t.call("DELETE", made_path, record=lambda d: None)

    await conform(scenario)
