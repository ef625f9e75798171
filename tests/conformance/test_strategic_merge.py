"""Conformance: strategic merge patches of built-in kinds, by Kubernetes' patch strategies."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import STRATEGIC, Target

pytestmark = pytest.mark.anyio


def _deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": list(containers)},
            },
        },
    }


def _containers(d: Any) -> Any:
    if d.get("kind") == "Status":
        return d
    return [
        {
            k: v
            for k, v in c.items()
            if k in ("name", "image", "env", "args", "ports", "resources", "securityContext")
        }
        for c in d["spec"]["template"]["spec"]["containers"]
    ]


async def _patched(t: Target, patch: dict[str, Any], *containers: dict[str, Any]) -> None:
    path = t.apis("apps/v1", "deployments")
    await t.post(path, _deployment(*containers), record=_containers)
    await t.patch(f"{path}/d", patch, ct=STRATEGIC, record=_containers)


def _spec(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": list(containers), **extra}}}}


A = {"name": "a", "image": "nginx:1"}
B = {"name": "b", "image": "nginx:1"}
C = {"name": "c", "image": "nginx:1"}


async def test_containers_merge_by_name_keeping_the_stored_order(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _patched(
            t, _spec({"name": "c", "image": "x:2"}, {"name": "a", "image": "x:2"}), A, B, C
        )

    await conform(scenario)


async def test_new_containers_go_after_the_stored_ones(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _patched(t, _spec({"name": "z", "image": "x:2"}, {"name": "b", "image": "x:2"}), A, B)

    await conform(scenario)


async def test_a_container_is_deleted_by_directive(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _patched(t, _spec({"name": "b", "$patch": "delete"}), A, B, C)

    await conform(scenario)


@pytest.mark.parametrize(
    "patch",
    [
        _spec({"name": "b", "image": "x:2"}, {"name": "b", "$patch": "delete"}),
        _spec(
            {"name": "a", "$patch": "delete"},
            {"name": "c", "image": "x:2"},
            {"name": "a", "image": "x:2"},
        ),
        _spec(
            {"name": "d", "image": "x:2"},
            {"name": "b", "image": "x:2"},
            {"name": "b", "$patch": "delete"},
        ),
    ],
    ids=["replaced in place", "deleted first, merged again", "with a new one"],
)
async def test_an_item_deleted_and_merged_again_is_placed_as_a_new_one(
    conform: Conform, patch: dict[str, Any]
) -> None:
    """Go orders a merged list by the stored list after the patch's deletions: an item the
    same patch deletes and names again goes where a new item goes."""

    async def scenario(t: Target) -> None:
        await _patched(t, patch, A, B, C)

    await conform(scenario)


async def test_a_new_item_is_added_as_the_patch_has_it_and_a_new_field_without_nulls(
    conform: Conform,
) -> None:
    """A merged list's new item is appended as it is, nulls and nested directives included
    (the decoder then reads a null quantity as 0 and drops unknown keys); a new field's nulls
    are dropped."""

    async def scenario(t: Target) -> None:
        resources = {"requests": {"cpu": None, "memory": "1Gi"}, "limits": None}
        env = [{"name": "A", "value": None}, {"name": "B", "$patch": "delete"}]
        new = {"name": "b", "image": "x:2", "resources": resources, "env": env}
        known = {"name": "a", "resources": resources, "securityContext": {"runAsUser": None}}
        await _patched(t, _spec(new, known), A)

    await conform(scenario)


async def test_set_element_order_reorders_the_list(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [
                            {"name": "c"},
                            {"name": "a"},
                            {"name": "b"},
                        ],
                        "containers": [{"name": "a", "image": "x:2"}],
                    }
                }
            }
        }
        await _patched(t, patch, A, B, C)

    await conform(scenario)


async def test_env_merges_by_name_and_args_are_replaced(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        first = {
            **A,
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "1"}],
            "args": ["--one", "--two"],
        }
        patch = _spec(
            {
                "name": "a",
                "env": [{"name": "Z", "value": "3"}, {"name": "X", "value": "2"}],
                "args": ["--three"],
            }
        )
        await _patched(t, patch, first)

    await conform(scenario)


async def test_ports_merge_by_container_port(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        first = {**A, "ports": [{"containerPort": 80, "name": "http"}]}
        patch = _spec({"name": "a", "ports": [{"containerPort": 443, "name": "https"}]})
        await _patched(t, patch, first)

    await conform(scenario)


async def test_finalizers_merge_as_a_set_and_delete_from_primitive_list(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "finalizers": ["x.dev/a", "x.dev/b"]},
        }
        await t.post(t.cm(), body)
        await t.patch(t.cm("a"), {"metadata": {"finalizers": ["x.dev/c", "x.dev/a"]}}, ct=STRATEGIC)
        await t.patch(
            t.cm("a"),
            {
                "metadata": {
                    "$deleteFromPrimitiveList/finalizers": ["x.dev/a", "x.dev/b", "x.dev/c"]
                }
            },
            ct=STRATEGIC,
        )

    await conform(scenario)


async def test_owner_references_merge_by_uid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def owner(uid: str) -> dict[str, Any]:
            return {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{uid}", "uid": uid}

        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "ownerReferences": [owner("1"), owner("2")]},
        }
        await t.post(t.cm(), body)
        patch = {"metadata": {"ownerReferences": [owner("3"), {**owner("1"), "name": "new"}]}}
        await t.patch(t.cm("a"), patch, ct=STRATEGIC)

    await conform(scenario)


async def test_a_map_is_replaced_by_directive(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a"},
            "data": {"x": "1", "y": "2"},
        }
        await t.post(t.cm(), body)
        await t.patch(t.cm("a"), {"data": {"$patch": "replace", "z": "3"}}, ct=STRATEGIC)

    await conform(scenario)
