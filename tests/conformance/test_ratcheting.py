"""Conformance: validation ratcheting of custom resources (``CRDValidationRatcheting``, on
since 1.33). A CRD's schema is tightened over an object it held; updates that leave the now
invalid parts as they were pass (the schema's errors there are dropped, and broken
``x-kubernetes-validations`` rules there only warn); what they change is checked.

Each scenario makes a CRD of its own (its group named after the scenario's namespace, which the
records normalise), an object of it, then tightens the schema and waits, unrecorded, until the
real API server checks new objects by it. Updates are recorded with their ``Warning`` header.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target

pytestmark = pytest.mark.anyio

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
Body = dict[str, Any]

LOOSE: Body = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer"},
    "mode": {"type": "string", "maxLength": 16},
    "other": {"type": "string", "maxLength": 16},
    "owner": {"type": "string", "maxLength": 16},
    "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 16}},
    "ports": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["name"], "items": {
                  "type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string", "maxLength": 16},
                      "port": {"type": "integer"},
                      "protocol": {"type": "string", "maxLength": 16}}}},
    "labels": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 16}},
    "limits": {"type": "object", "maxProperties": 8,
               "additionalProperties": {"type": "integer"}},
}}}}  # fmt: skip


def _tight(**changes: Any) -> Body:
    """The loose schema with ``changes`` merged into the spec's properties (``spec`` for the
    spec's own keywords)."""
    schema = copy.deepcopy(LOOSE)
    spec = schema["properties"]["spec"]
    for key, change in changes.items():
        if key == "spec":
            spec.update(change)
        else:
            spec["properties"][key].update(change)
    return schema


def _crd(group: str, schema: Body) -> Body:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"ratchets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Ratchet", "plural": "ratchets"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}  # fmt: skip


async def _until(t: Target, check: Any) -> None:
    with anyio.fail_after(60):
        while not await check():
            await anyio.sleep(0.1)


async def _write(t: Target, label: str, method: str, path: str, body: Any) -> None:
    """A write recorded as its status, its ``Warning`` header, and its refusal's causes."""
    headers = {"Content-Type": MERGE if method == "PATCH" else "application/json"}
    answer = await t.api.request(method, path, content=json.dumps(body), headers=headers)
    document = answer.json()
    causes = (
        (document.get("details") or {}).get("causes") if document.get("kind") == "Status" else None
    )
    # (kube-openapi checks an object's properties in Go's map order: its causes in any order)
    ordered = (
        sorted(causes, key=lambda c: (c.get("field", ""), c.get("reason", "")))
        if causes
        else causes
    )
    t.note(label, (answer.status_code, answer.headers.get("warning"), ordered))


async def _ratcheted(
    t: Target, spec: Body, tight: Body, probe: Body, updates: list[tuple[str, Any]]
) -> None:
    """An object of ``spec`` under the loose schema, the schema made ``tight`` (in force once
    a dry-run create of ``probe`` is refused), then each update: a merge patch (a dict) or a
    PUT of the stored object changed by a function."""
    group = f"{t.namespace}.example.com"
    crd = f"{CRDS}/ratchets.{group}"
    objects = f"/apis/{group}/v1/namespaces/{t.namespace}/ratchets"
    path = f"{objects}/r"
    await t.api.post(CRDS, json=_crd(group, LOOSE))
    try:
        await _until(t, lambda: _served(t, objects))
        body = {"apiVersion": f"{group}/v1", "kind": "Ratchet", "metadata": {"name": "r"}}
        await t.post(objects, {**body, "spec": spec})
        stored = (await t.api.get(crd)).json()
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = tight
        (await t.api.put(crd, json=stored)).raise_for_status()
        dry = {**body, "metadata": {"name": "probe"}, "spec": probe}
        await _until(t, lambda: _refused(t, objects, dry))
        for label, update in updates:
            if callable(update):
                current = (await t.api.get(path)).json()
                await _write(t, label, "PUT", path, update(current))
            else:
                await _write(t, label, "PATCH", path, update)
        await t.get(path)
    finally:
        await t.api.delete(crd)


async def _served(t: Target, objects: str) -> bool:
    return (await t.api.get(objects)).status_code == 200


async def _refused(t: Target, objects: str, body: Body) -> bool:
    answer = await t.api.post(objects, json=body, params={"dryRun": "All"})
    return answer.status_code == 422


def _labelled(current: Body) -> Body:
    current["metadata"]["labels"] = {"touched": "yes"}
    return current


async def test_a_tightened_maximum_holds_for_a_value_an_update_changes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _ratcheted(t, {"size": 50, "other": "a"}, _tight(size={"maximum": 10}),
                         {"size": 11}, [
            ("another field changed", {"spec": {"other": "b"}}),
            ("labels changed by a PUT", _labelled),
            ("the value changed, still too big", {"spec": {"size": 40}}),
            ("the value changed to a valid one", {"spec": {"size": 5}}),
            ("back above the maximum", {"spec": {"size": 50}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_new_required_field_holds_once_its_object_changes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _ratcheted(t, {"other": "a"}, _tight(spec={"required": ["owner"]}), {}, [
            ("labels only", {"metadata": {"labels": {"a": "b"}}}),
            ("the object changed", {"spec": {"other": "b"}}),
            ("the object changed with the field", {"spec": {"other": "b", "owner": "me"}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_an_enum_and_a_pattern_hold_for_strings_an_update_changes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(mode={"enum": ["fast", "slow"]}, other={"pattern": "^[a-z]+$"})
        await _ratcheted(t, {"mode": "medium", "other": "A1"}, tight, {"mode": "x"}, [
            ("the mode kept, the other changed to another bad value", {"spec": {"other": "B2"}}),
            ("the mode changed to another bad value", {"spec": {"mode": "quick"}}),
            ("both changed to good values", {"spec": {"mode": "fast", "other": "ok"}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_map_list_s_items_are_ratcheted_by_their_keys(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        ports = [{"name": "a", "port": 70000, "protocol": "tcp"}, {"name": "b", "port": 80}]
        tight = _tight(ports={"items": {**LOOSE["properties"]["spec"]["properties"]["ports"][
            "items"], "properties": {"name": {"type": "string", "maxLength": 16},
                                     "port": {"type": "integer", "maximum": 65535},
                                     "protocol": {"type": "string", "maxLength": 16,
                                                  "enum": ["TCP", "UDP"]}}}})  # fmt: skip
        await _ratcheted(t, {"ports": ports}, tight, {"ports": [{"name": "x", "port": 70000}]}, [
            ("the items reordered", {"spec": {"ports": [ports[1], ports[0]]}}),
            ("another item changed", {"spec": {"ports": [ports[0], {"name": "b", "port": 81}]}}),
            ("an item added", {"spec": {"ports": [*ports, {"name": "c", "port": 1}]}}),
            ("the bad item's other field changed",
             {"spec": {"ports": [{**ports[0], "protocol": "udp"}, ports[1]]}}),
            ("the bad item renamed (a new item)",
             {"spec": {"ports": [{**ports[0], "name": "z"}, ports[1]]}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_an_atomic_list_s_items_are_checked_once_the_list_changes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(tags={"items": {"type": "string", "maxLength": 3}})
        await _ratcheted(t, {"tags": ["long-tag", "ok"], "other": "a"}, tight,
                         {"tags": ["toolong"]}, [
            ("the list kept", {"spec": {"other": "b"}}),
            ("an item appended", {"spec": {"tags": ["long-tag", "ok", "new"]}}),
            ("the bad item dropped", {"spec": {"tags": ["ok", "new"]}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_new_rule_only_warns_where_an_update_leaves_its_value(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(spec={"x-kubernetes-validations": [
            {"rule": "!has(self.size) || self.size < 10", "message": "size below 10"}]},
            other={"x-kubernetes-validations": [{"rule": "self != 'bad'"}]})  # fmt: skip
        await _ratcheted(t, {"size": 20, "other": "bad"}, tight, {"size": 30}, [
            ("labels only", {"metadata": {"labels": {"a": "b"}}}),
            ("the spec changed elsewhere", {"spec": {"mode": "m"}}),
            ("the size fixed", {"spec": {"size": 1}}),
            ("the other changed to a good value", {"spec": {"other": "good"}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_transition_rule_is_not_ratcheted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(size={"x-kubernetes-validations": [
            {"rule": "self < oldSelf", "message": "size only shrinks"}]})  # fmt: skip
        await _ratcheted(t, {"size": 5, "other": "a"}, tight, {"size": "x"}, [
            ("another field changed", {"spec": {"other": "b"}}),
            ("the size shrunk", {"spec": {"size": 4}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_set_s_duplicates_pass_while_the_old_object_has_some(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(labels={"x-kubernetes-list-type": "set"})
        await _ratcheted(t, {"labels": ["a", "a"], "tags": ["x"]}, tight,
                         {"labels": ["b", "b"]}, [
            ("another field changed", {"spec": {"tags": ["y"]}}),
            ("the duplicates changed", {"spec": {"labels": ["c", "c", "d"]}}),
            ("the duplicates gone", {"spec": {"labels": ["c"]}}),
            ("duplicates again", {"spec": {"labels": ["e", "e"]}}),
        ])  # fmt: skip

    await conform(scenario)


async def test_a_map_s_values_are_ratcheted_each(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        tight = _tight(limits={"additionalProperties": {"type": "integer", "minimum": 0}})
        await _ratcheted(t, {"limits": {"cpu": -1, "memory": 5}}, tight,
                         {"limits": {"x": -1}}, [
            ("another value changed", {"spec": {"limits": {"memory": 6}}}),
            ("a value added", {"spec": {"limits": {"disk": 1}}}),
            ("the bad value changed, still bad", {"spec": {"limits": {"cpu": -2}}}),
        ])  # fmt: skip

    await conform(scenario)
