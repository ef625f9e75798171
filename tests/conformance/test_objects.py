"""Conformance: create, read, replace and their errors, on built-in and custom kinds."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

pytestmark = pytest.mark.anyio


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


async def test_create_answers_201_with_the_stored_object(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.get(t.cm("a"))

    await conform(scenario)


async def test_create_of_a_taken_name_is_409_already_exists(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.post(t.cm(), _cm("a"))

    await conform(scenario)


async def test_get_of_a_missing_object_is_404_not_found(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm("missing"))
        await t.get(t.widgets("missing"))

    await conform(scenario)


async def test_create_in_a_missing_namespace_is_404_for_the_namespace(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("configmaps", namespace=f"{t.namespace}-none"), _cm("a"))

    await conform(scenario)


async def test_create_without_a_name_is_422_required(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"metadata": {}})

    await conform(scenario)


async def test_create_with_an_invalid_name_is_422_invalid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("Bad_Name"))

    await conform(scenario)


async def test_create_with_another_namespace_in_the_body_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _cm("a")
        body["metadata"]["namespace"] = "elsewhere"
        await t.post(t.cm(), body)

    await conform(scenario)


async def test_generate_name_makes_a_name_with_five_random_characters(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), {"metadata": {"generateName": "gen-"}}, record=lambda d: None)
        name = made["metadata"]["name"]
        t.note("name", (name.startswith("gen-"), len(name), made["metadata"]["generateName"]))

    await conform(scenario)


async def test_system_metadata_in_a_create_body_is_ignored(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _cm("a")
        body["metadata"] |= {
            "uid": "x",
            "generation": 7,
            "creationTimestamp": "2020-01-01T00:00:00Z",
        }
        made = await t.post(t.cm(), body)
        t.note("uid replaced", made["metadata"]["uid"] != "x")


async def test_create_with_a_resource_version_is_500(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _cm("a")
        body["metadata"]["resourceVersion"] = "5"
        await t.post(t.cm(), body)

    await conform(scenario)


async def test_put_replaces_the_object_and_bumps_the_resource_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a", x="1"))
        body = _cm("a", y="2")
        body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
        await t.put(t.cm("a"), body)

    await conform(scenario)


async def test_put_with_a_stale_resource_version_is_409_conflict(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(t.cm("a"), {"data": {"x": "2"}})
        body = _cm("a", x="3")
        body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
        await t.put(t.cm("a"), body)

    await conform(scenario)


async def test_put_without_a_resource_version_is_unconditional_for_configmaps(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.put(t.cm("a"), _cm("a", x="2"))

    await conform(scenario)


async def test_put_without_a_resource_version_is_422_for_custom_resources(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1))
        await t.put(t.widgets("w"), _widget("w", size=2))

    await conform(scenario)


async def test_put_without_a_resource_version_is_422_for_a_crd_and_its_status(
    conform: Conform,
) -> None:
    """A CRD's strategies, like a custom resource's, do not allow unconditional updates (the
    CRD is left as it was: the PUTs are refused)."""

    async def scenario(t: Target) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
        crd = await t.api.get(path)
        body = crd.json()
        del body["metadata"]["resourceVersion"]
        await t.put(path, body)
        await t.put(f"{path}/status", body)

    await conform(scenario)


async def test_put_of_a_missing_object_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.put(t.cm("missing"), _cm("missing"))

    await conform(scenario)


async def test_put_with_another_name_in_the_body_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.put(t.cm("a"), _cm("b"))

    await conform(scenario)


async def test_an_update_that_changes_nothing_keeps_the_resource_version(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", x="1"))
        await t.patch(t.cm("a"), {"data": {"x": "1"}})

    await conform(scenario)


async def test_namespaces_get_their_name_label_finalizer_and_phase(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-x"
        await t.post("/api/v1/namespaces", {"metadata": {"name": name}})
        await t.get(f"/api/v1/namespaces/{name}")

    await conform(scenario)


async def test_namespaced_kinds_operators_touch_round_trip(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("secrets"), {"metadata": {"name": "s"}, "data": {"k": "dg=="},
                                         "type": "Opaque"})  # fmt: skip
        lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
        await t.post(f"/apis/coordination.k8s.io/v1/namespaces/{t.namespace}/leases", lease)
        event = {
            "metadata": {"name": "e"},
            "reason": "Test",
            "message": "hello",
            "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": t.namespace},
        }
        await t.post(t.core("events"), event, record=lambda d: {"reason": d.get("reason")})

    await conform(scenario)


async def test_custom_resources_get_generation_one_on_create(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _widget("w", size=1))

    await conform(scenario)


async def test_cluster_scoped_custom_resources_live_outside_namespaces(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = f"{t.namespace}-g"
        body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Gadget",
                "metadata": {"name": name}, "spec": {"anything": {"goes": 1}}}  # fmt: skip
        await t.post(t.gadgets(), body)
        await t.get(t.gadgets(name))
        await t.delete(t.gadgets(name))

    await conform(scenario)


async def test_unknown_resource_in_a_known_group_is_404_status(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.core("nonsense"))

    await conform(scenario)


async def test_unknown_group_is_a_plain_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(f"/apis/nothing.example.com/v1/namespaces/{t.namespace}/things")
        await t.get("/apis/conformance.anyop.dev/v9/gadgets")

    await conform(scenario)
