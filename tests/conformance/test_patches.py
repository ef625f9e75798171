"""Conformance: merge, JSON and strategic merge patches; the status subresource; generation."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import JSON_PATCH, STRATEGIC, Target
from tests.conformance.test_workloads import DEPLOYMENT

pytestmark = pytest.mark.anyio


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


async def test_merge_patch_merges_maps_and_deletes_nulls(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1", y="2"))
        await t.patch(
            t.cm("a"), {"data": {"x": None, "z": "3"}, "metadata": {"labels": {"l": "1"}}}
        )

    await conform(scenario)


async def test_merge_patch_replaces_lists_whole(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", tags=["a", "b"]))
        await t.patch(t.widgets("w"), {"spec": {"tags": ["c"]}})

    await conform(scenario)


async def test_merge_patch_drops_the_nulls_of_values_it_puts_in(conform: Conform) -> None:
    """Where a merge patch puts a value in (a new field, a list it replaces, a map over a
    scalar), the nulls of that value's maps go, at any depth, a list's null items stay; a
    value that replaces a map keeps its nulls."""

    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", free={"m": {"a": 1}, "s": "x", "l": [1]}))
        patch = {"spec": {"free": {
            "new": {"a": None, "b": {"c": None, "d": 1}, "l": [None, {"e": None, "f": 2}]},
            "s": {"g": None, "h": 1},
            "l": [{"i": None}, None],
            "m": [{"j": None}],
        }}}  # fmt: skip
        await t.patch(t.widgets("w"), patch)
        path = t.apis("apps/v1", "deployments")
        await t.post(path, DEPLOYMENT)
        resources = {"requests": {"cpu": None, "memory": "1Gi"}, "limits": None}
        env = [{"name": "A", "value": None}]
        container = {"name": "app", "image": "nginx", "env": env, "resources": resources}
        await t.patch(f"{path}/d", {"spec": {"template": {"spec": {"containers": [container]}}}})

    await conform(scenario)


async def test_merge_patch_with_a_stale_resource_version_is_409(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(t.cm("a"), {"data": {"x": "2"}})
        rv = made["metadata"]["resourceVersion"]
        await t.patch(t.cm("a"), {"metadata": {"resourceVersion": rv}, "data": {"x": "3"}})
        await t.patch(t.widgets("missing"), {"spec": {}})

    await conform(scenario)


async def test_merge_patch_that_is_not_json_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.patch(t.cm("a"), b"{not json", record=lambda d: {"reason": d.get("reason")})

    await conform(scenario)


async def test_patch_of_a_missing_object_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.patch(t.cm("missing"), {"data": {"x": "1"}})

    await conform(scenario)


async def test_json_patch_applies_its_operations_in_order(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1, tags=["a", "b"]))
        ops = [
            {"op": "add", "path": "/spec/tags/1", "value": "x"},
            {"op": "add", "path": "/spec/tags/-", "value": "z"},
            {"op": "remove", "path": "/spec/tags/0"},
            {"op": "replace", "path": "/spec/size", "value": 5},
            {"op": "copy", "from": "/spec/size", "path": "/spec/free"},
            {"op": "move", "from": "/spec/free", "path": "/spec/limits"},
        ]
        await t.patch(t.widgets("w"), ops[:4], ct=JSON_PATCH)

    await conform(scenario)


async def test_json_patch_test_on_resource_version_passes_when_fresh(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a", x="1"))
        rv = made["metadata"]["resourceVersion"]
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
               {"op": "add", "path": "/metadata/finalizers", "value": ["x.dev/f"]}]  # fmt: skip
        await t.patch(t.cm("a"), ops, ct=JSON_PATCH)

    await conform(scenario)


async def test_json_patch_failed_test_is_422_invalid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
               {"op": "add", "path": "/data/y", "value": "2"}]  # fmt: skip
        await t.patch(t.cm("a"), ops, ct=JSON_PATCH)
        await t.get(t.cm("a"))

    await conform(scenario)


async def test_json_patch_remove_of_a_missing_path_is_422(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(t.cm("a"), [{"op": "remove", "path": "/data/missing"}], ct=JSON_PATCH)
        await t.patch(t.cm("a"), [{"op": "bogus", "path": "/data/x"}], ct=JSON_PATCH)

    await conform(scenario)


async def test_json_patch_replace_of_a_missing_key_adds_it(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(
            t.cm("a"), [{"op": "replace", "path": "/data/y", "value": "2"}], ct=JSON_PATCH
        )

    await conform(scenario)


async def test_strategic_merge_patch_merges_finalizers_as_a_set(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _cm("a", x="1")
        body["metadata"]["finalizers"] = ["a.dev/one"]
        await t.post(t.cm(), body)
        patch = {"metadata": {"finalizers": ["b.dev/two"]}, "data": {"y": "2"}}
        await t.patch(t.cm("a"), patch, ct=STRATEGIC)
        await t.patch(
            t.cm("a"),
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.dev/one", "b.dev/two"]}},
            ct=STRATEGIC,
        )

    await conform(scenario)


async def test_strategic_merge_patch_merges_owner_references_by_uid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        owner = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "o",
            "uid": "11111111-1111-4111-8111-111111111111",
        }
        body = _cm("a")
        body["metadata"]["ownerReferences"] = [owner]
        await t.post(t.cm(), body)
        other = {**owner, "name": "p", "uid": "22222222-2222-4222-8222-222222222222"}
        await t.patch(t.cm("a"), {"metadata": {"ownerReferences": [other]}}, ct=STRATEGIC)

    await conform(scenario)


async def test_strategic_merge_patch_of_a_custom_resource_is_415(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1))
        await t.patch(t.widgets("w"), {"spec": {"size": 2}}, ct=STRATEGIC)

    await conform(scenario)


async def test_main_resource_writes_ignore_status_when_it_is_a_subresource(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _widget("w", size=1)
        body["status"] = {"phase": "dropped at create"}
        await t.post(t.widgets(), body)
        await t.patch(t.widgets("w"), {"status": {"phase": "ignored"}, "spec": {"size": 2}})

    await conform(scenario)


async def test_status_subresource_writes_change_only_status(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1))
        patch = {"spec": {"size": 9}, "metadata": {"labels": {"l": "x"}}, "status": {"ok": True}}
        await t.patch(t.widgets("w", sub="status"), patch)
        await t.get(t.widgets("w", sub="status"))

    await conform(scenario)


async def test_status_subresource_put_needs_the_resource_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.widgets(), _widget("w", size=1))
        made["status"] = {"ok": 1}
        await t.put(t.widgets("w", sub="status"), made)
        await t.put(t.widgets("w", sub="status"), made)

    await conform(scenario)


async def test_status_of_a_kind_without_the_subresource_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-g"
        body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Gadget",
                "metadata": {"name": name}, "spec": {"a": 1}}  # fmt: skip
        await t.post(t.gadgets(), body)
        await t.patch(t.gadgets(name, sub="status"), {"status": {"s": 1}})
        await t.patch(t.gadgets(name), {"status": {"s": 1}})
        await t.delete(t.gadgets(name))

    await conform(scenario)


async def test_generation_counts_spec_changes_only(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1))
        await t.patch(
            t.widgets("w"), {"metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}}}
        )
        await t.patch(t.widgets("w", sub="status"), {"status": {"x": 1}})
        await t.patch(t.widgets("w"), {"spec": {"size": 2}})
        await t.patch(t.widgets("w"), {"spec": {"size": 2}})

    await conform(scenario)


async def test_configmaps_have_no_generation(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(t.cm("a"), {"data": {"x": "2"}})

    await conform(scenario)


async def test_a_strategic_patch_whose_result_does_not_convert_names_the_first_field(
    conform: Conform,
) -> None:
    """The converter walks a kind's Go struct, its metadata first: the first field that does
    not convert is the one named (a kind whose fields Go orders alphabetically too)."""

    async def scenario(t: Target) -> None:
        path = "/apis/node.k8s.io/v1/runtimeclasses"
        name = f"{t.namespace}-rc"
        body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": name}, "handler": "runc"}  # fmt: skip
        await t.post(path, body)
        try:
            for patch in (
                {"handler": [], "metadata": {"labels": {"app": 1}}},
                {"overhead": [], "handler": 1},
                {"scheduling": 1, "handler": []},
            ):
                await t.patch(f"{path}/{name}", patch, ct=STRATEGIC)
        finally:
            await t.call("DELETE", f"{path}/{name}", record=lambda d: None)

    await conform(scenario)
