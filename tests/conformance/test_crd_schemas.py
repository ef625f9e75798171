"""Conformance: custom resources' structural schemas: defaults, validation keywords, pruning."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, MERGE, Target

pytestmark = pytest.mark.anyio


def _gizmo(name: str, /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "conformance.anyop.dev/v1",
        "kind": "Gizmo",
        "metadata": {"name": name},
        "spec": spec,
    }


async def _refused(t: Target, **spec: Any) -> None:
    await t.post(t.gizmos(), _gizmo("g", **spec))


async def test_defaults_fill_missing_fields_on_create(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", items=[{"key": "a"}, {"key": "b", "weight": 7}]))

    await conform(scenario)


async def test_defaults_fill_fields_an_update_leaves_out(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.gizmos(), _gizmo("g", size=5, mode="fast"))
        body = _gizmo("g", plain="x")
        body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
        await t.put(t.gizmos("g"), body)

    await conform(scenario)


async def test_a_merge_patch_removing_a_defaulted_field_gets_the_default_back(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", size=5, options={"retries": 1}))
        await t.patch(t.gizmos("g"), {"spec": {"size": None, "options": {"retries": None}}})

    await conform(scenario)


async def test_a_null_in_a_defaulted_field_is_defaulted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", size=None, mode=None))

    await conform(scenario)


@pytest.mark.parametrize(
    "spec",
    [
        {"size": 0},
        {"size": 11},
        {"ratio": 0},
        {"ratio": 1},
        {"name": "ab"},
        {"name": "abcdefghi"},
        {"name": "ABC"},
        {"tags": []},
        {"tags": ["a", "b", "c", "d"]},
        {"mode": "medium"},
        {"port": True},
        {"when": "yesterday"},
        {"labels": ["a", "b", "a"]},
        {"items": [{"weight": 2}]},
        {"size": "big"},
        {"replicas": -1},
    ],
    ids=[
        "minimum",
        "maximum",
        "exclusive-minimum",
        "exclusive-maximum",
        "min-length",
        "max-length",
        "pattern",
        "min-items",
        "max-items",
        "enum",
        "int-or-string",
        "date-time",
        "list-type-set",
        "required",
        "type",
        "replicas-minimum",
    ],
)
async def test_a_schema_keyword_refuses_a_value_with_422(
    conform: Conform, spec: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await _refused(t, **spec)

    await conform(scenario)


async def test_values_within_every_keyword_are_accepted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        spec = {
            "size": 10,
            "ratio": 0.5,
            "name": "abc",
            "tags": ["x"],
            "mode": "fast",
            "port": "http",
            "when": "2024-05-06T07:08:09Z",
            "labels": ["a", "b"],
            "items": [{"key": "k"}],
        }
        await t.post(t.gizmos(), _gizmo("g", **spec))
        await t.patch(t.gizmos("g"), {"spec": {"port": 8080}})

    await conform(scenario)


async def test_an_update_is_validated_too(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g"))
        await t.patch(t.gizmos("g"), {"spec": {"size": 100}})
        await t.patch(
            t.gizmos("g"), [{"op": "add", "path": "/spec/name", "value": "X"}], ct=JSON_PATCH
        )

    await conform(scenario)


async def test_nulls_stay_where_nullable_and_go_elsewhere(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", note=None, plain=None))

    await conform(scenario)


async def test_unknown_fields_are_pruned_but_under_preserve_unknown_fields(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _gizmo("g", unknown=1, options={"other": 2}, extra={"any": {"thing": [1]}})
        body["status"] = {"replicas": 1, "other": 1}
        body["top"] = "level"
        await t.post(t.gizmos(), body)

    await conform(scenario)


async def test_unknown_fields_under_metadata_are_pruned(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _gizmo("g")
        body["metadata"] |= {"labels": {"a": "b"}, "unknown": "x", "extra": {"y": 1}}
        await t.post(t.gizmos(), body)
        await t.patch(t.gizmos("g"), {"metadata": {"other": "z", "annotations": {"n": "v"}}})

    await conform(scenario)


async def test_the_scale_subresource_refuses_negative_replicas(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", replicas=2))
        await t.get(t.gizmos("g", sub="scale"))
        await t.patch(t.gizmos("g", sub="scale"), {"spec": {"replicas": -1}})
        await t.patch(t.gizmos("g", sub="scale"), {"spec": {"replicas": 4}})
        await t.get(t.gizmos("g"))

    await conform(scenario)


async def test_a_spec_a_scale_write_creates_is_stored_without_its_defaults(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _gizmo("g")
        del body["spec"]
        await t.post(t.gizmos(), body)
        await t.patch(t.gizmos("g", sub="scale"), {"spec": {"replicas": 2}})
        await t.get(t.gizmos("g"))  # read with the defaults, stored without them
        await t.patch(t.gizmos("g"), {"metadata": {}})  # so a change to nothing is written
        await t.patch(t.gizmos("g"), {"metadata": {}})  # once
        await t.patch(t.gizmos("g", sub="scale"), {"spec": {"replicas": 3}})  # a spec is there
        await t.patch(t.gizmos("g"), {"metadata": {}})

    await conform(scenario)


async def test_the_status_subresource_is_validated_by_the_status_schema(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g"))
        await t.patch(t.gizmos("g", sub="status"), {"status": {"replicas": "many"}})
        await t.patch(t.gizmos("g", sub="status"), {"status": {"replicas": 2, "x": 1}})

    await conform(scenario)


async def test_validation_rules_refuse_what_they_do_not_hold(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", low=5, high=3))
        await t.post(t.gizmos(), _gizmo("g", high=5000))
        await t.post(t.gizmos(), _gizmo("g", low=1, high=3, fixed="a"))
        await t.patch(t.gizmos("g"), {"spec": {"high": 0}})

    await conform(scenario)


async def test_a_transition_rule_compares_with_the_stored_object(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", fixed="a"))
        await t.patch(t.gizmos("g"), {"spec": {"fixed": "b"}})
        await t.patch(t.gizmos("g"), {"spec": {"fixed": "a", "size": 4}})

    await conform(scenario)


async def _until_refused(t: Target, path: str, patch: Any) -> None:
    """Wait (unrecorded, by dry runs) until the API server validates by the updated CRD: it
    rebuilds a CRD's handler a moment after the update."""
    headers = {"Content-Type": MERGE}
    with anyio.fail_after(10):
        while True:
            answer = await t.api.patch(path, json=patch, headers=headers,
                                       params={"dryRun": "All"})  # fmt: skip
            if answer.status_code == 422:
                return
            await anyio.sleep(0.05)


async def test_an_updated_crd_schema_applies_to_later_writes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
        crd = await t.get(path, record=lambda d: None)
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}, "spec": {"size": 50}})  # fmt: skip
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        size = schema["properties"]["spec"]["properties"]["size"]
        try:
            size["maximum"] = 10
            await t.put(path, crd, record=lambda d: d.get("code"))
            await _until_refused(t, t.widgets("w"), {"spec": {"size": 20}})
            await t.patch(t.widgets("w"), {"spec": {"size": 20}})
        finally:
            latest = await t.get(path, record=lambda d: None)
            latest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ]["size"].pop("maximum", None)
            await t.put(path, latest, record=lambda d: d.get("code"))

    await conform(scenario)


async def shows_the_default(t: Target) -> bool:
    """Both the read and the list answer from the rebuilt handler (each is switched on its own)."""
    one, listed = await t.api.get(t.widgets("w")), await t.api.get(t.widgets())
    if one.status_code != 200 or listed.status_code != 200:
        return False
    return all("shade" in item["spec"] for item in [one.json(), *listed.json()["items"]])


async def test_a_default_added_to_a_crd_shows_on_stored_objects_when_read(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
        crd = await t.get(path, record=lambda d: None)
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}, "spec": {"size": 1}})  # fmt: skip
        properties = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        properties["spec"]["properties"]["shade"] = {"type": "string", "default": "dark"}
        try:
            await t.put(path, crd, record=lambda d: d.get("code"))
            with anyio.fail_after(10):  # the API server rebuilds the CRD's handler a moment later
                while not await shows_the_default(t):
                    await anyio.sleep(0.05)
            await t.get(t.widgets("w"))
            await t.get(t.widgets(), record=lambda d: [i["spec"] for i in d["items"]])
        finally:
            latest = await t.get(path, record=lambda d: None)
            latest["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ].pop("shade", None)
            await t.put(path, latest, record=lambda d: d.get("code"))

    await conform(scenario)
