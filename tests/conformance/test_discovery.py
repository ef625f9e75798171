"""Conformance: discovery of core and named groups, CRDs' kinds, schemas' pruning and checks."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

pytestmark = pytest.mark.anyio

CLAIMED = {"namespaces", "namespaces/status", "configmaps", "secrets", "events", "pods",
           "pods/status", "services", "services/status"}  # fmt: skip


def _resources(names: set[str]) -> Any:
    return lambda d: [entry for entry in d["resources"] if entry["name"] in names]


def _groups(names: set[str]) -> Any:
    return lambda d: sorted(
        (group for group in d["groups"] if group["name"] in names), key=lambda g: g["name"]
    )


def _by_name(document: Any) -> Any:
    return {**document, "resources": sorted(document["resources"], key=lambda r: r["name"])}


def _widget(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


async def test_core_discovery_lists_the_claimed_resources(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get("/api", record=lambda d: (d["kind"], d["versions"]))
        await t.get("/api/v1", record=_resources(CLAIMED))

    await conform(scenario)


async def test_group_discovery_for_leases_crds_and_custom_groups(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        names = {"coordination.k8s.io", "apiextensions.k8s.io", GROUP}
        await t.get("/apis", record=_groups(names))
        await t.get("/apis/coordination.k8s.io")
        await t.get("/apis/coordination.k8s.io/v1")
        await t.get("/apis/apiextensions.k8s.io/v1")
        await t.get(f"/apis/{GROUP}")
        # The API server lists the CRDs' resources in its informer's order, which varies.
        await t.get(f"/apis/{GROUP}/v1", record=_by_name)

    await conform(scenario)


async def test_a_crd_is_established_with_its_names_accepted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def shown(d: Any) -> Any:
            status = d["status"]
            conditions = sorted((c["type"], c["status"], c["reason"]) for c in status["conditions"])
            return d["spec"], status["acceptedNames"], status["storedVersions"], conditions

        await t.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}",
                    record=shown)  # fmt: skip

    await conform(scenario)


async def test_unknown_fields_are_pruned_by_the_schema(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _widget("w", {"size": 1, "unknown": 2, "free": {"deep": {"kept": 1}},
                             "limits": {"cpu": 2}})  # fmt: skip
        body["top"] = "dropped"
        await t.post(t.widgets(), body)
        await t.patch(t.widgets("w"), {"spec": {"another": 1, "free": {"more": [1]}}})

    await conform(scenario)


async def test_nulls_are_pruned_from_custom_resources(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", {"size": None, "color": "red"}))

    await conform(scenario)


async def test_a_field_of_the_wrong_type_is_422(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", {"size": "big"}))
        await t.post(t.widgets(), _widget("w", {"size": 1}))
        await t.patch(t.widgets("w"), {"spec": {"tags": "not-a-list"}})
        await t.patch(t.widgets("w"), {"spec": {"limits": {"cpu": "x"}}})

    await conform(scenario)


async def test_enum_and_required_fields_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", {"color": "green"}))
        await t.post(t.widgets(), _widget("w", {"nested": {}}))

    await conform(scenario)
