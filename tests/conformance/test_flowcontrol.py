"""Conformance: API Priority and Fairness' kinds (``flowcontrol.apiserver.k8s.io/v1``): the
defaults of FlowSchemas and PriorityLevelConfigurations, their validation (the mandatory
objects' fixed specs among it), their strategies (generation, status) and the config
consumer's ``Dangling`` condition of a FlowSchema.

Their objects are cluster-scoped and outlive a scenario on the shared real API server: each is
named for its scenario and deleted at its end (unrecorded). The server's own objects (the
mandatory ``exempt`` and ``catch-all``, the suggested ones) are only read, or written in dry
runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
_GV = "flowcontrol.apiserver.k8s.io/v1"
_FS = f"/apis/{_GV}/flowschemas"
_PLC = f"/apis/{_GV}/prioritylevelconfigurations"
_DRY = {"dryRun": "All"}
_REJECTING: Body = {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}


def _name(t: Target, suffix: str = "") -> str:
    return f"anyop-conf-{t.namespace}{suffix}"


def _fs(name: str, spec: Body, **metadata: Any) -> Body:
    return {"apiVersion": _GV, "kind": "FlowSchema", "metadata": {"name": name, **metadata},
            "spec": spec}  # fmt: skip


def _plc(name: str, spec: Body, **metadata: Any) -> Body:
    return {"apiVersion": _GV, "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name, **metadata}, "spec": spec}  # fmt: skip


def _owners(document: Any) -> Any:
    """Who owns what of an object (its managedFields, which the records leave out)."""
    if not isinstance(document, dict) or "metadata" not in document:
        return document
    return [
        [entry.get("manager"), entry.get("operation"), entry.get("subresource"),
         entry.get("fieldsV1")]
        for entry in document["metadata"].get("managedFields") or ()
    ]  # fmt: skip


def _unversioned(document: Any) -> Any:
    """One of the server's own objects without its resourceVersion: the real server's config
    consumer wrote their statuses at its start in an order of its own."""
    if isinstance(document, dict) and isinstance(document.get("metadata"), dict):
        metadata = {k: v for k, v in document["metadata"].items() if k != "resourceVersion"}
        return {**document, "metadata": metadata}
    return document


async def _remove(t: Target, path: str) -> None:
    await t.call("DELETE", path, record=lambda d: None)


async def _settled(t: Target, path: str, done: Callable[[Any], bool]) -> Any:
    """GET until ``done(body)`` (the real config consumer acts a moment later), 30 s at most."""
    with anyio.move_on_after(30):
        while True:
            body = (await t.api.get(path)).json()
            if done(body):
                break
            await anyio.sleep(0.1)
    return body


def _dangling(body: Any) -> Any:
    conditions = (body.get("status") or {}).get("conditions") or []
    return [{k: v for k, v in item.items() if k != "lastTransitionTime"} for item in conditions]


# -- defaults -----------------------------------------------------------------------------------


async def test_a_flow_schema_is_defaulted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        body = _fs(name, {"priorityLevelConfiguration": {"name": "workload-low"}})
        made = await t.post(_FS, body)
        t.note("owners", _owners(made))
        zero = _fs(_name(t, "-zero"), {"priorityLevelConfiguration": {"name": "workload-low"},
                                       "matchingPrecedence": 0})  # fmt: skip
        await t.post(_FS, zero, params=_DRY)
        await _remove(t, f"{_FS}/{name}")

    await conform(scenario)


PLC_DEFAULTED: list[Body] = [
    {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
    {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "lendablePercent": 7,
                                    "borrowingLimitPercent": 0,
                                    "limitResponse": {"type": "Queue",
                                                      "queuing": {"queues": 16}}}},
    {"type": "Limited", "limited": {"nominalConcurrencyShares": None,
                                    "limitResponse": {"type": "Reject"}}},
]  # fmt: skip


@pytest.mark.parametrize("spec", PLC_DEFAULTED)
async def test_a_priority_level_is_defaulted(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        made = await t.post(_PLC, _plc(name, spec))
        t.note("owners", _owners(made))
        if made.get("kind") != "Status":
            await _remove(t, f"{_PLC}/{name}")

    await conform(scenario)


async def test_the_exempt_priority_level_is_defaulted_and_may_change_its_exempt_field(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:  # dry runs: the server's own object stays as it is
        stored = await t.get(f"{_PLC}/exempt")
        for exempt in ({}, {"nominalConcurrencyShares": 10, "lendablePercent": 50}):
            changed = copy.deepcopy(stored)
            changed["spec"]["exempt"] = exempt
            await t.put(f"{_PLC}/exempt", changed, params=_DRY)

    await conform(scenario)


# -- validation ---------------------------------------------------------------------------------

_LOW = {"name": "workload-low"}
_GROUP = {"kind": "Group", "group": {"name": "g"}}
_RESOURCES = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "clusterScope": True}

FLOW_SCHEMAS: list[Body] = [
    {},
    {"priorityLevelConfiguration": {"name": "Bad_Name"}},
    {"priorityLevelConfiguration": _LOW, "matchingPrecedence": -1},
    {"priorityLevelConfiguration": _LOW, "matchingPrecedence": 10001},
    {"priorityLevelConfiguration": _LOW, "matchingPrecedence": 1},
    {"priorityLevelConfiguration": _LOW, "distinguisherMethod": {"type": "ByGalaxy"}},
    {"priorityLevelConfiguration": _LOW, "distinguisherMethod": {}},
    {"priorityLevelConfiguration": _LOW, "distinguisherMethod": {"type": "ByNamespace"},
     "rules": [{"subjects": [_GROUP], "resourceRules": [_RESOURCES]}]},
    {"priorityLevelConfiguration": _LOW, "rules": [{}]},
    {"priorityLevelConfiguration": _LOW, "rules": [{"subjects": [], "resourceRules": [],
                                                    "nonResourceRules": []}]},
    {"priorityLevelConfiguration": _LOW, "rules": [{"resourceRules": [_RESOURCES], "subjects": [
        {"kind": "ServiceAccount"},
        {"kind": "ServiceAccount", "serviceAccount": {}, "user": {"name": "u"},
         "group": {"name": "g"}},
        {"kind": "ServiceAccount", "serviceAccount": {"name": "Bad!", "namespace": "Bad_ns"}},
        {"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "ns"}},
        {"kind": "User"},
        {"kind": "User", "user": {}, "serviceAccount": {"name": "a", "namespace": "b"},
         "group": {"name": "g"}},
        {"kind": "Group"},
        {"kind": "Group", "group": {}, "serviceAccount": {"name": "a", "namespace": "b"},
         "user": {"name": "u"}},
        {"kind": "Robot", "user": {"name": "u"}},
        {"kind": ""},
    ]}]},
    {"priorityLevelConfiguration": _LOW, "rules": [{"subjects": [_GROUP], "resourceRules": [
        {},
        {"verbs": ["*", "get"], "apiGroups": ["*", ""], "resources": ["*", "pods"],
         "namespaces": ["*", "x"]},
        {"verbs": ["get", "fly", ""], "apiGroups": ["*"], "resources": ["*"],
         "namespaces": ["Bad_NS", "ok", "a.b", ""]},
        {"verbs": ["*"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]},
        {"verbs": ["*"], "apiGroups": [""], "resources": ["pods"], "clusterScope": True,
         "namespaces": ["*", "x"]},
    ]}]},
    {"priorityLevelConfiguration": _LOW, "rules": [{"subjects": [_GROUP], "nonResourceRules": [
        {},
        {"verbs": ["*", "get"], "nonResourceURLs": ["*", "/x"]},
        {"verbs": ["get", "watch", "patch", "x"],
         "nonResourceURLs": ["", "/", "x", "/a b", "//a", "/a/*/b", "/a*", "/a/*", "/*"]},
    ]}]},
]  # fmt: skip


@pytest.mark.parametrize("spec", FLOW_SCHEMAS)
async def test_a_flow_schema_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        made = await t.post(_FS, _fs(name, spec))
        if made.get("kind") != "Status":
            await _remove(t, f"{_FS}/{name}")

    await conform(scenario)


_QUEUE: Body = {"type": "Queue", "queuing": {"queues": 64, "handSize": 8,
                                             "queueLengthLimit": 50}}  # fmt: skip

PRIORITY_LEVELS: list[Body] = [
    {},
    {"type": "Exempt"},
    {"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": 101},
     "limited": {"limitResponse": {"type": "Reject"}}},
    {"type": "Limited"},
    {"type": "Limited", "exempt": {"lendablePercent": -3},
     "limited": {"limitResponse": {"type": "Reject"}}},
    {"type": "Galaxy", "limited": {"limitResponse": {"type": "Reject"}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queuing"}}},
    {"type": "Limited", "limited": {"nominalConcurrencyShares": -1, "lendablePercent": -1,
                                    "borrowingLimitPercent": -1,
                                    "limitResponse": {"type": "Reject", "queuing": {}}}},
    {"type": "Limited", "limited": {"lendablePercent": 101,
                                    "limitResponse": {"type": "Queue"}}},
    {"type": "Limited", "limited": {"limitResponse": {}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": -1, "handSize": -1, "queueLengthLimit": -1}}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 10000001, "handSize": 8}}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 4, "handSize": 5}}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 128, "handSize": 10}}}},
    {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 1024, "handSize": 6}}}},
]  # fmt: skip


@pytest.mark.parametrize("spec", PRIORITY_LEVELS)
async def test_a_priority_level_is_checked(conform: Conform, spec: Body) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        made = await t.post(_PLC, _plc(name, spec))
        if made.get("kind") != "Status":
            await _remove(t, f"{_PLC}/{name}")

    await conform(scenario)


async def test_a_priority_level_may_not_carry_the_v1beta3_round_trip_annotation(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        annotations = {"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": "true"}
        body = _plc(_name(t), {"type": "Limited", "limited": {"limitResponse": {"type": "X"}}},
                    annotations=annotations, labels={"bad key!": "v"})  # fmt: skip
        await t.post(_PLC, body)

    await conform(scenario)


async def test_the_mandatory_objects_keep_their_fixed_specs(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # refused or dry runs: nothing changes
        fs = await t.get(f"{_FS}/catch-all", record=_unversioned)
        changed = copy.deepcopy(fs)
        changed["spec"]["matchingPrecedence"] = 9999
        await t.put(f"{_FS}/catch-all", changed, params=_DRY, record=_unversioned)
        relabelled = copy.deepcopy(fs)
        relabelled["metadata"].setdefault("labels", {})["x"] = "y"
        await t.put(f"{_FS}/catch-all", relabelled, params=_DRY, record=_unversioned)
        exempt = await t.get(f"{_FS}/exempt", record=_unversioned)
        changed = copy.deepcopy(exempt)
        changed["spec"]["rules"][0]["subjects"].append(
            {"kind": "ServiceAccount", "serviceAccount": {"name": "a", "namespace": "b"}}
        )
        changed["spec"]["distinguisherMethod"] = {"type": "ByUser"}
        await t.put(f"{_FS}/exempt", changed, params=_DRY, record=_unversioned)
        await t.post(_FS, _fs("exempt", {"priorityLevelConfiguration": {"name": "exempt"}}))
        plc = await t.get(f"{_PLC}/catch-all", record=_unversioned)
        changed = copy.deepcopy(plc)
        changed["spec"]["limited"]["borrowingLimitPercent"] = 5
        await t.put(f"{_PLC}/catch-all", changed, params=_DRY, record=_unversioned)
        await t.post(_PLC, _plc("catch-all", {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 5, "lendablePercent": 0,
            "limitResponse": {"type": "Reject"}}}))  # fmt: skip
        exempt_level = await t.get(f"{_PLC}/exempt", record=_unversioned)
        changed = copy.deepcopy(exempt_level)
        changed["spec"] = {"type": "Limited", "exempt": {"nominalConcurrencyShares": 3},
                           "limited": {"limitResponse": {"type": "Reject"}}}  # fmt: skip
        await t.put(f"{_PLC}/exempt", changed, params=_DRY, record=_unversioned)

    await conform(scenario)


# -- strategies ---------------------------------------------------------------------------------


async def test_a_flow_schema_counts_spec_changes_and_keeps_its_status_apart(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        name, plc = _name(t), _name(t, "-level")
        await t.post(_PLC, _plc(plc, _REJECTING))
        path = f"{_FS}/{name}"
        body = _fs(name, {"priorityLevelConfiguration": {"name": plc}})
        body["status"] = {"conditions": [{"type": "Mine", "status": "True"}]}
        await t.post(_FS, body)
        made = await _settled(t, path, lambda b: bool(_dangling(b)))
        t.note("settled", _dangling(made))
        changed = copy.deepcopy(made)
        changed["metadata"]["labels"] = {"a": "b"}
        changed["status"] = {}
        updated = await t.put(path, changed)
        changed = copy.deepcopy(updated)
        changed["spec"]["matchingPrecedence"] = 500
        updated = await t.put(path, changed)
        status = copy.deepcopy(updated)
        status["spec"]["matchingPrecedence"] = 7
        status["metadata"]["labels"] = {"c": "d"}
        status["status"]["conditions"].append({"type": "Mine", "status": "Unknown"})
        updated = await t.put(f"{path}/status", status)
        t.note("owners", _owners(updated))
        status = copy.deepcopy(updated)
        status["status"]["conditions"] += [
            {"type": "Other", "status": "True"},
            {"type": "Other", "status": "False"},
            {"type": "", "status": "True"},
        ]
        await t.put(f"{path}/status", status)
        await t.patch(f"{path}/status", {"spec": {"matchingPrecedence": 9}})
        await t.get(path)
        await _remove(t, path)
        await _remove(t, f"{_PLC}/{plc}")

    await conform(scenario)


async def test_a_priority_level_counts_spec_changes_and_keeps_its_status_apart(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        path = f"{_PLC}/{name}"
        body = _plc(name, {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}})
        body["status"] = {"conditions": [{"type": "ConcurrencyShared", "status": "True"}]}
        made = await t.post(_PLC, body)
        changed = copy.deepcopy(made)
        changed["spec"]["limited"]["lendablePercent"] = 10
        changed["status"] = {"conditions": [{"type": "X", "status": "True"}]}
        updated = await t.put(path, changed)
        status = copy.deepcopy(updated)
        status["status"] = {"conditions": [{"type": "X", "status": "True"},
                                           {"type": "X", "status": "False"}]}  # fmt: skip
        await t.put(f"{path}/status", status)
        status["status"] = {"conditions": [{"type": "X", "status": "True", "reason": "R"}]}
        status["spec"]["limited"]["lendablePercent"] = 20
        await t.put(f"{path}/status", status)
        await t.get(path)
        await _remove(t, path)

    await conform(scenario)


# -- the config consumer ------------------------------------------------------------------------


async def test_the_config_consumer_says_whether_a_flow_schema_dangles(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name, plc = _name(t), _name(t, "-level")
        path = f"{_FS}/{name}"
        spec = {"priorityLevelConfiguration": {"name": plc}, "matchingPrecedence": 5000,
                "rules": [{"subjects": [_GROUP], "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/anyop-conformance"]}]}]}  # fmt: skip
        await t.post(_FS, _fs(name, spec))
        found = await _settled(t, path, lambda b: bool(_dangling(b)))
        t.note("missing", [_dangling(found), found["metadata"]["generation"], _owners(found)])
        await t.post(_PLC, _plc(plc, _REJECTING))
        found = await _settled(t, path, lambda b: _dangling(b)[0]["status"] == "False")
        t.note("made", _dangling(found))
        await t.delete(f"{_PLC}/{plc}")
        found = await _settled(t, path, lambda b: _dangling(b)[0]["status"] == "True")
        t.note("deleted", _dangling(found))
        changed = copy.deepcopy(found)
        changed["spec"]["priorityLevelConfiguration"]["name"] = "workload-low"
        await t.put(path, changed)
        found = await _settled(t, path, lambda b: _dangling(b)[0]["status"] == "False")
        t.note("pointed elsewhere", [_dangling(found), _owners(found)])
        await t.get(path)
        await _remove(t, path)

    await conform(scenario)


async def test_the_config_consumer_sets_a_removed_condition_again(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        path = f"{_FS}/{name}"
        await t.post(_FS, _fs(name, {"priorityLevelConfiguration": {"name": "workload-low"}}))
        found = await _settled(t, path, lambda b: bool(_dangling(b)))
        status = copy.deepcopy(found)
        status["status"] = {"conditions": [{"type": "Dangling", "status": "Unknown"},
                                           {"type": "Mine", "status": "True"}]}  # fmt: skip
        await t.put(f"{path}/status", status)
        found = await _settled(t, path, lambda b: _dangling(b)[0]["status"] == "False")
        t.note("set again", [_dangling(found), _owners(found)])
        status = copy.deepcopy(found)
        status["status"] = {}
        await t.put(f"{path}/status", status)
        found = await _settled(t, path, lambda b: bool(_dangling(b)))
        t.note("emptied", [_dangling(found), _owners(found)])
        await _remove(t, path)

    await conform(scenario)


async def test_an_update_checks_the_metadata_as_a_create_does(conform: Conform) -> None:
    async def scenario(t: Target) -> None:  # ValidateObjectMeta, not ...Update, in Validate<Kind>
        name = _name(t)
        path = f"{_PLC}/{name}"
        made = await t.post(_PLC, _plc(name, _REJECTING))
        changed = copy.deepcopy(made)
        changed["metadata"]["labels"] = {"bad key!": "v"}
        changed["metadata"]["finalizers"] = ["nodomain"]
        changed["spec"]["limited"]["lendablePercent"] = 200
        await t.put(path, changed)
        await _remove(t, path)

    await conform(scenario)


async def test_an_update_is_checked_as_a_create(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = _name(t)
        path = f"{_FS}/{name}"
        await t.post(_FS, _fs(name, {"priorityLevelConfiguration": {"name": "workload-low"}}))
        found = await _settled(t, path, lambda b: bool(_dangling(b)))
        changed = copy.deepcopy(found)
        changed["spec"]["matchingPrecedence"] = -5
        changed["spec"]["rules"] = [{"subjects": [{"kind": "User"}]}]
        changed["spec"]["distinguisherMethod"] = {"type": "ByGroup"}
        await t.put(path, changed)
        changed = copy.deepcopy(found)
        changed["metadata"]["labels"] = {"ok": "yes"}
        await t.put(path, changed)
        await _remove(t, path)

    await conform(scenario)
