"""Conformance, as an outside tester writes it: API behaviour operators rely on, on custom
resources (schemas, versions, subresources), deletion, server-side apply and watches.

Scenarios that need a schema of their own make a CRD in a group named after the scenario's
namespace (the normalisation turns it into ``<ns>``), and delete it at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target, status_shown

pytestmark = pytest.mark.anyio

APPLY = "application/apply-patch+yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def shown(document: Any) -> Any:
    """A Status through ``status_shown``, anything else as it is."""
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return document


def code(document: Any) -> Any:
    """Just the code of a Status, or ``ok``."""
    if isinstance(document, dict) and document.get("kind") == "Status":
        return (document.get("code"), document.get("reason"))
    return "ok"


def _crd(t: Target, spec_schema: dict[str, Any], *, versions: list[dict[str, Any]] | None = None,
         extra: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    group = f"{t.namespace}.anyop.dev"
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": spec_schema,
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                 "versions": versions or [{"name": "v1", "served": True, "storage": True,
                                           "schema": schema, **(extra or {})}]},
    }  # fmt: skip


@asynccontextmanager
async def own_crd(t: Target, spec_schema: dict[str, Any], **kwargs: Any) -> AsyncIterator[str]:
    """Make the scenario's own CRD, wait until its objects are served; yield their path."""
    body = _crd(t, spec_schema, **kwargs)
    group = body["spec"]["group"]
    version = next(v["name"] for v in body["spec"]["versions"] if v["storage"])
    made = await t.post(
        CRDS, body, record=lambda d: shown(d) if d.get("kind") == "Status" else "ok"
    )
    path = f"/apis/{group}/{version}/namespaces/{t.namespace}/things"
    refused = made.get("kind") == "Status"  # (then nothing is served: no wait)
    with anyio.move_on_after(0 if refused else 30):
        while (await t.api.get(path)).status_code != 200:
            await anyio.sleep(0.1)
    await anyio.sleep(0.3 if t.name == "real" and not refused else 0)
    try:
        yield path
    finally:
        await t.api.delete(f"{CRDS}/things.{group}")


def thing(t: Target, name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{t.namespace}.anyop.dev/{version}", "kind": "Thing",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def _spec(document: Any) -> Any:
    if not isinstance(document, dict):
        return document
    if document.get("kind") == "Status":
        return status_shown(document)
    return document.get("spec")


# -- 1. CRD structural schemas -----------------------------------------------------------------


async def test_defaults_nested_in_arrays_maps_and_defaulted_parents(conform: Conform) -> None:
    """Operators rely on defaults inside list items, map values and a parent's own default."""
    schema = {"type": "object", "properties": {
        "template": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer"},
                "protocol": {"type": "string", "default": "TCP"}}}}}},
        "byName": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"enabled": {"type": "boolean", "default": True}}}},
        "opt": {"type": "string", "nullable": True, "default": "d"},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a"), record=_spec)
            await t.post(path, thing(t, "b", template={"ports": [{"port": 80}, {}]},
                                     byName={"x": {}, "y": {"enabled": False}}, opt=None),
                         record=_spec)  # fmt: skip

    await conform(scenario)


async def test_multiple_of_and_exclusive_bounds_on_integers(conform: Conform) -> None:
    """Numeric keywords an operator's API uses: multipleOf, exclusive bounds."""
    schema = {"type": "object", "properties": {
        "count": {"type": "integer", "multipleOf": 5, "minimum": 0, "exclusiveMinimum": True,
                  "maximum": 100, "exclusiveMaximum": True},
        "price": {"type": "number", "multipleOf": 0.5},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            for count, price in [(7, 1.25), (0, 1), (100, 2.5), (10, 2.5)]:
                await t.post(path, thing(t, f"n{count}", count=count, price=price), record=shown)

    await conform(scenario)


async def test_min_and_max_properties_of_a_map(conform: Conform) -> None:
    """A map's minProperties and maxProperties."""
    schema = {"type": "object", "properties": {
        "labels": {"type": "object", "minProperties": 1, "maxProperties": 2,
                   "additionalProperties": {"type": "string", "maxLength": 3}}}}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a", labels={}), record=shown)
            await t.post(path, thing(t, "b", labels={"x": "1", "y": "2", "z": "3"}), record=shown)
            await t.post(path, thing(t, "c", labels={"x": "long"}), record=shown)
            await t.post(path, thing(t, "d", labels={"x": "1"}), record=_spec)

    await conform(scenario)


async def test_a_crd_with_a_non_structural_or_forbidden_schema_is_refused(
    conform: Conform,
) -> None:
    """A CRD the API server refuses: uniqueItems, a missing type, a default the schema refuses,
    map keys on a list that is not a map."""
    schema = {"type": "object", "properties": {
        "u": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
        "notype": {"properties": {"a": {"type": "string"}}},
        "bad": {"type": "integer", "default": "x"},
        "keys": {"type": "array", "x-kubernetes-list-map-keys": ["name"],
                 "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        await t.post(CRDS, _crd(t, schema), record=shown)

    await conform(scenario)


async def test_a_list_map_refuses_duplicate_keys(conform: Conform) -> None:
    """``x-kubernetes-list-type: map`` with two keys, one defaulted: duplicates are 422."""
    schema = {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["port", "protocol"],
                  "items": {"type": "object", "required": ["port"], "properties": {
                      "port": {"type": "integer"},
                      "protocol": {"type": "string", "default": "TCP"}}}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            ports = [{"port": 80}, {"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]
            await t.post(path, thing(t, "a", ports=ports), record=shown)
            await t.post(path, thing(t, "b", set=[1, 2, 1]), record=shown)
            await t.post(path, thing(t, "c", ports=ports[1:]), record=_spec)

    await conform(scenario)


async def test_cel_rules_with_message_expression_reason_and_field_path(conform: Conform) -> None:
    """Validation rules as operators write them: messageExpression, reason, fieldPath, a rule on
    a list with a macro, a rule without a message."""
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.replicas <= self.maxReplicas",
         "messageExpression": "'replicas ' + string(self.replicas) + ' exceeds ' + "
                              "string(self.maxReplicas)",
         "reason": "FieldValueForbidden", "fieldPath": ".replicas"},
    ], "properties": {
        "replicas": {"type": "integer"},
        "maxReplicas": {"type": "integer"},
        "names": {"type": "array", "items": {"type": "string", "maxLength": 10},
                  "maxItems": 5, "x-kubernetes-validations": [
                      {"rule": "self.all(n, n.startsWith('a'))"}]},
        "kind": {"type": "string", "maxLength": 5, "x-kubernetes-validations": [
            {"rule": "self in ['A', 'B']", "message": "must be A or B",
             "reason": "FieldValueNotSupported"}]},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a", replicas=5, maxReplicas=3, names=["ax", "bx"],
                                     kind="C"), record=shown)  # fmt: skip
            await t.post(path, thing(t, "b", replicas=1, maxReplicas=3, names=["ax"], kind="A"),
                         record=_spec)  # fmt: skip

    await conform(scenario)


async def test_transition_rules_on_an_object_and_immutable_once_set(conform: Conform) -> None:
    """A rule with ``oldSelf`` on an object (a field may be set but not removed) and on a
    scalar: checked on updates only."""
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "!has(oldSelf.id) || has(self.id)", "message": "id may not be removed"},
    ], "properties": {
        "id": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "id is immutable"}]},
        "size": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self >= oldSelf", "message": "size may only grow",
             "messageExpression": "'size may not shrink from ' + string(oldSelf)"}]},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a", size=3), record=_spec)
            await t.patch(f"{path}/a", {"spec": {"id": "x", "size": 2}}, record=shown)
            await t.patch(f"{path}/a", {"spec": {"id": "x", "size": 4}}, record=_spec)
            await t.patch(f"{path}/a", {"spec": {"id": "y"}}, record=shown)
            await t.patch(f"{path}/a", {"spec": {"id": None}}, record=shown)

    await conform(scenario)


def _versions(schema: dict[str, Any]) -> list[dict[str, Any]]:
    full = {"openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}
    return [
        {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
         "deprecationWarning": "v1alpha1 Thing is going away", "schema": full},
        {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
         "schema": full},
        {"name": "v1", "served": True, "storage": True, "schema": full},
        {"name": "v0", "served": False, "storage": False, "schema": full},
    ]  # fmt: skip


async def test_deprecated_versions_warn_and_objects_convert_between_versions(
    conform: Conform,
) -> None:
    """A multi-version CRD (conversion None): each served version reads the object with its own
    apiVersion; deprecated ones warn (their own text, or the default one); unserved is 404."""
    schema = {"type": "object", "properties": {"size": {"type": "integer"}}}

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema, versions=_versions(schema)) as path:
            old = path.replace("/v1/", "/v1alpha1/")
            response = await t.api.post(old, json=thing(t, "a", "v1alpha1", size=1))
            t.note("create", (response.status_code, response.headers.get_list("warning")))
            for version in ("v1alpha1", "v1beta1", "v1", "v0"):
                response = await t.api.get(path.replace("/v1/", f"/{version}/") + "/a")
                body = (
                    response.json()
                    if response.headers.get("content-type", "").startswith("application/json")
                    else {}
                )
                t.note(version, (response.status_code, response.headers.get_list("warning"),
                                 body.get("apiVersion"), body.get("spec"),
                                 body.get("reason")))  # fmt: skip
            response = await t.api.get(path.replace("/v1/", "/v1beta1/"))
            t.note("list", (response.headers.get_list("warning"), response.json()["apiVersion"],
                            [i["apiVersion"] for i in response.json()["items"]]))  # fmt: skip

    await conform(scenario)


async def test_an_embedded_resource_has_its_metadata_pruned_and_checked(conform: Conform) -> None:
    """``x-kubernetes-embedded-resource`` (a template of another object): apiVersion and kind
    required, its metadata pruned of unknown fields and its name checked."""
    schema = {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True}}}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            good = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "junk": 1, "labels": {"a": "b"}},
                "data": {"k": "v"},
            }
            await t.post(path, thing(t, "a", template=good), record=_spec)
            await t.post(path, thing(t, "b", template={"metadata": {"name": "x"}}), record=shown)
            bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
            await t.post(path, thing(t, "c", template=bad), record=shown)

    await conform(scenario)


async def test_preserved_unknown_fields_beside_declared_ones_are_still_checked(
    conform: Conform,
) -> None:
    """``x-kubernetes-preserve-unknown-fields`` with properties: unknown fields stay, declared
    ones are still typed, defaulted and checked."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
        "known": {"type": "integer", "default": 4, "maximum": 5}}}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a", other={"deep": [1, {"x": None}]}), record=_spec)
            await t.post(path, thing(t, "b", known=9, other=1), record=shown)
            await t.post(path, thing(t, "c", known="4"), record=shown)

    await conform(scenario)


async def test_a_status_write_ignores_metadata_and_spec_changes(conform: Conform) -> None:
    """The status subresource of a custom resource: labels, annotations and spec sent with the
    status are dropped; the main resource keeps labels it is sent."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "1"}},
            "spec": {"size": 1},
        }
        made = await t.post(t.widgets(), body, record=lambda d: None)
        made["metadata"]["labels"] = {"a": "2", "b": "3"}
        made["metadata"]["annotations"] = {"n": "1"}
        made["spec"]["size"] = 2
        made["status"] = {"phase": "Ready"}
        await t.put(t.widgets("w", sub="status"), made,
                    record=lambda d: (d["metadata"].get("labels"), d["metadata"].get(
                        "annotations"), d["spec"], d.get("status"),
                        d["metadata"]["generation"]))  # fmt: skip
        patch = {"metadata": {"labels": {"c": "4"}}, "status": {"phase": "Done"}}
        await t.patch(
            t.widgets("w", sub="status"),
            patch,
            record=lambda d: (d["metadata"].get("labels"), d.get("status")),
        )

    await conform(scenario)


async def test_a_scale_of_a_custom_resource_with_a_label_selector_path(conform: Conform) -> None:
    """The scale subresource with labelSelectorPath, read before and after the status sets the
    selector, and patched with a merge patch."""

    async def scenario(t: Target) -> None:
        path = f"/apis/{GROUP}/v1/namespaces/{t.namespace}/sprockets"
        await t.post(path, {"apiVersion": f"{GROUP}/v1", "kind": "Sprocket",
                            "metadata": {"name": "s"}, "spec": {}})  # fmt: skip
        await t.get(f"{path}/s/scale")
        await t.patch(f"{path}/s/status", {"status": {"replicas": 2, "selector": "app=s"}})
        await t.patch(f"{path}/s/scale", {"spec": {"replicas": 4}})
        await t.get(f"{path}/s", record=lambda d: (d["spec"], d["status"]))
        await t.put(
            f"{path}/s/scale",
            {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "s"},
                "spec": {"replicas": 1},
            },
        )

    await conform(scenario)


async def test_a_custom_resource_name_is_a_subdomain_and_generate_name_works(
    conform: Conform,
) -> None:
    """Custom resources' names: a DNS subdomain (dots allowed, underscores not); generateName."""

    async def scenario(t: Target) -> None:
        base = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "spec": {}}
        await t.post(t.widgets(), {**base, "metadata": {"name": "a.b-c"}}, record=code)
        await t.post(t.widgets(), {**base, "metadata": {"name": "a_b"}}, record=shown)
        await t.post(t.widgets(), {**base, "metadata": {"name": "x" * 254}}, record=shown)
        made = await t.post(t.widgets(), {**base, "metadata": {"generateName": "w-"}},
                            record=lambda d: None)  # fmt: skip
        t.note("generated", (made["metadata"]["name"][:2], len(made["metadata"]["name"])))
        await t.post(t.widgets(), {**base, "metadata": {"generateName": "W_"}},
                     record=lambda d: (d.get("code"), sorted(
                         c["field"] for c in d["details"]["causes"])))  # fmt: skip

    await conform(scenario)


async def test_a_custom_resource_of_the_wrong_kind_or_group_for_the_url_is_400(
    conform: Conform,
) -> None:
    """A body of another kind, another group or no apiVersion posted to a CR's URL."""

    async def scenario(t: Target) -> None:
        meta = {"name": "w"}
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo",
                                   "metadata": meta}, record=shown)  # fmt: skip
        await t.post(t.widgets(), {"apiVersion": "other.dev/v1", "kind": "Widget",
                                   "metadata": meta}, record=shown)  # fmt: skip
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v2", "kind": "Widget",
                                   "metadata": meta}, record=shown)  # fmt: skip
        await t.post(t.widgets(), {"kind": "Widget", "metadata": meta}, record=shown)
        await t.post(t.widgets(), {"metadata": meta}, record=shown)

    await conform(scenario)


# -- 2. deletion ----------------------------------------------------------------------------------


async def test_deleting_a_deleting_object_again_keeps_its_timestamp(conform: Conform) -> None:
    """A second DELETE of an object kept by a finalizer, with a zero grace period and with a
    different propagation policy."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "finalizers": ["x.dev/keep"]},
        }
        await t.post(t.cm(), body)
        await t.delete(t.cm("a"), params={"gracePeriodSeconds": "0"})
        await t.delete(t.cm("a"), {"kind": "DeleteOptions", "apiVersion": "v1",
                                   "propagationPolicy": "Orphan"})  # fmt: skip
        await t.delete(t.cm("a"))
        await t.get(t.cm("a"))

    await conform(scenario)


async def test_a_scheduled_pod_is_deleted_gracefully(conform: Conform) -> None:
    """A pod bound to a node is only marked (grace period 30 s or the one asked for); an
    unscheduled one goes at once."""

    async def scenario(t: Target) -> None:
        spec = {"containers": [{"name": "c", "image": "busybox"}]}
        await t.post(
            t.core("pods"),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "a"},
                "spec": {**spec, "nodeName": "n1"},
            },
            record=code,
        )
        await t.post(
            t.core("pods"),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "b"},
                "spec": {**spec, "nodeName": "n1", "terminationGracePeriodSeconds": 5},
            },
            record=code,
        )
        await t.post(
            t.core("pods"),
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"}, "spec": spec},
            record=code,
        )

        def meta(d):
            return (
                {
                    k: d["metadata"].get(k)
                    for k in (
                        "deletionTimestamp",
                        "deletionGracePeriodSeconds",
                        "finalizers",
                    )
                }
                if d.get("kind") == "Pod"
                else shown(d)
            )

        await t.delete(t.core("pods", "a"), record=meta)
        await t.delete(t.core("pods", "b"), record=meta)
        await t.delete(t.core("pods", "c"), record=lambda d: d.get("kind"))
        await t.delete(t.core("pods", "a"), params={"gracePeriodSeconds": "3"}, record=meta)
        await t.get(t.core("pods", "c"), record=code)

    await conform(scenario)


async def test_owner_references_are_checked(conform: Conform) -> None:
    """Owner references an operator sets: two controllers, an empty uid, a missing kind."""

    async def scenario(t: Target) -> None:
        owner = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "name": "w",
            "uid": "6f1c7d1e-0000-4000-8000-000000000001",
        }
        two = [{**owner, "controller": True},
               {**owner, "name": "v", "uid": "6f1c7d1e-0000-4000-8000-000000000002",
                "controller": True}]  # fmt: skip
        for name, refs in [
            ("two", two),
            ("nouid", [{**owner, "uid": ""}]),
            ("nokind", [{**owner, "kind": ""}]),
            ("noversion", [{**owner, "apiVersion": ""}]),
            ("ok", [{**owner, "blockOwnerDeletion": True, "controller": True}]),
        ]:
            await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": name, "ownerReferences": refs}},
                         record=lambda d: shown(d) if d.get("kind") == "Status"
                         else d["metadata"]["ownerReferences"])  # fmt: skip

    await conform(scenario)


async def test_a_terminating_namespace_refuses_new_objects(conform: Conform) -> None:
    """Creating in a namespace being deleted is 403 Forbidden (NamespaceLifecycle); updates of
    the objects already there still work."""

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
        await t.delete(f"/api/v1/namespaces/{t.namespace}", record=lambda d: d["status"])
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
        await t.patch(t.cm("a"), {"data": {"x": "1"}}, record=lambda d: d.get("data"))
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}})  # fmt: skip

    await conform(scenario)


async def test_metadata_changes_do_not_bump_a_custom_resources_generation(
    conform: Conform,
) -> None:
    """Generation counts spec changes: labels, annotations, finalizers, owner references and
    status do not count."""

    async def scenario(t: Target) -> None:
        gen = lambda d: d["metadata"].get("generation")  # noqa: E731
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        }
        await t.post(t.widgets(), body, record=gen)
        await t.patch(t.widgets("w"), {"metadata": {"labels": {"a": "b"}}}, record=gen)
        await t.patch(t.widgets("w"), {"metadata": {"annotations": {"a": "b"}}}, record=gen)
        await t.patch(t.widgets("w"), {"metadata": {"finalizers": ["x.dev/f"]}}, record=gen)
        await t.patch(t.widgets("w", sub="status"), {"status": {"x": 1}}, record=gen)
        await t.patch(t.widgets("w"), {"spec": {"size": 2}}, record=gen)
        await t.patch(t.widgets("w"), {"spec": {"size": 2}}, record=gen)
        await t.patch(t.widgets("w"), {"metadata": {"finalizers": None}}, record=gen)

    await conform(scenario)


async def test_a_precondition_in_a_patch_body_uid_is_a_conflict(conform: Conform) -> None:
    """A patch carrying the object's uid (a stale one after a re-create) is refused."""

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
        patch = {"metadata": {"uid": "6f1c7d1e-0000-4000-8000-000000000001"}, "data": {"x": "1"}}
        await t.patch(t.cm("a"), patch, record=shown)
        await t.patch(t.cm("a"), {"metadata": {"name": "b"}}, record=shown)
        await t.patch(t.cm("a"), {"metadata": {"namespace": "other"}}, record=shown)

    await conform(scenario)


async def test_delete_preconditions_on_a_custom_resource(conform: Conform) -> None:
    """DELETE with a body of preconditions on a custom resource: a stale resourceVersion, a
    wrong uid, then the right ones."""

    async def scenario(t: Target) -> None:
        made = await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                          "metadata": {"name": "w"}},
                            record=lambda d: {"uid": d["metadata"]["uid"]})  # fmt: skip
        await t.patch(t.widgets("w"), {"spec": {"size": 1}}, record=code)
        for pre in (
            {"resourceVersion": made["metadata"]["resourceVersion"]},
            {"uid": "6f1c7d1e-0000-4000-8000-000000000001"},
        ):
            await t.delete(t.widgets("w"), {"preconditions": pre}, record=shown)
        await t.delete(
            t.widgets("w"), {"preconditions": {"uid": made["metadata"]["uid"]}}, record=code
        )

    await conform(scenario)


# -- 9. server-side apply and managed fields -----------------------------------------------------


def _managed(document: Any) -> Any:
    """An object's ``managedFields`` without their times, in the order kube-apiserver sorts
    them but for the times (by operation, then manager, version, subresource): entries of one
    operation come in the order of their times' seconds, which a second's tick between two
    writes decides on either server."""
    if document.get("kind") == "Status":
        return status_shown(document)
    entries = [
        {k: v for k, v in entry.items() if k != "time"}
        for entry in document["metadata"].get("managedFields", [])
    ]
    return sorted(entries, key=lambda entry: tuple(
        str(entry.get(key) or "") for key in ("operation", "manager", "apiVersion", "subresource")
    ))  # fmt: skip


async def test_managed_fields_record_each_manager_operation_and_subresource(
    conform: Conform,
) -> None:
    """managedFields after a create, an update by another manager, an apply and a status
    apply: managers, operations, subresources and field sets."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        }
        await t.post(t.widgets(), body, params={"fieldManager": "creator"}, record=_managed)
        await t.patch(
            t.widgets("w"),
            {"spec": {"color": "red"}},
            params={"fieldManager": "updater"},
            record=_managed,
        )
        applied = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"tags": ["a"]},
        }
        await t.patch(t.widgets("w"), applied, ct=APPLY, params={"fieldManager": "applier"},
                      record=_managed)  # fmt: skip
        status = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "status": {"phase": "Ready"},
        }
        await t.patch(t.widgets("w", sub="status"), status, ct=APPLY,
                      params={"fieldManager": "applier"}, record=_managed)  # fmt: skip

    await conform(scenario)


async def test_a_manager_is_named_after_the_user_agent_without_field_manager(
    conform: Conform,
) -> None:
    """Without ``fieldManager`` the manager is the User-Agent's first part."""

    async def scenario(t: Target) -> None:
        headers = {"User-Agent": "my-operator/v1.2.3 (linux/amd64) kubernetes/abcdef"}
        await t.post(
            t.cm(),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a"},
                "data": {"x": "1"},
            },
            headers=headers,
            record=_managed,
        )
        await t.patch(t.cm("a"), {"data": {"y": "2"}}, headers={"User-Agent": "other"},
                      record=_managed)  # fmt: skip

    await conform(scenario)


async def test_an_apply_conflict_lists_every_conflicting_field(conform: Conform) -> None:
    """An apply that changes fields an update owns and fields another applier owns: 409 with
    one cause per field, and the manager names in the message."""

    async def scenario(t: Target) -> None:
        base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
        await t.patch(t.cm("a"), {**base, "data": {"x": "1", "y": "1"}}, ct=APPLY,
                      params={"fieldManager": "first"}, record=code)  # fmt: skip
        await t.patch(t.cm("a"), {"data": {"z": "1"}, "metadata": {"labels": {"l": "1"}}},
                      params={"fieldManager": "editor"}, record=code)  # fmt: skip
        second = {
            **base,
            "metadata": {"name": "a", "labels": {"l": "2"}},
            "data": {"x": "2", "y": "2", "z": "2"},
        }
        await t.patch(t.cm("a"), second, ct=APPLY, params={"fieldManager": "second"},
                      record=shown)  # fmt: skip

    await conform(scenario)


async def test_an_apply_body_must_match_the_url(conform: Conform) -> None:
    """Apply bodies without apiVersion or kind, of another kind, another name, another
    namespace; a YAML apply body."""

    async def scenario(t: Target) -> None:
        params = {"fieldManager": "m"}
        for body in (
            {"kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "other"},
            },
        ):
            await t.patch(t.cm("a"), body, ct=APPLY, params=params, record=shown)
        yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 'yes'\n"
        await t.patch(t.cm("a"), yaml, ct=APPLY, params=params, record=lambda d: d.get("data"))

    await conform(scenario)


async def test_applied_list_map_items_belong_to_their_appliers(conform: Conform) -> None:
    """A CRD list of type map: two appliers each own their items; one dropping its item
    removes only that one; an atomic list is replaced whole by its applier."""
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "value": {"type": "string"}}}},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic",
                   "items": {"type": "string"}},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            a = thing(t, "x", items=[{"name": "a", "value": "1"}], atomic=["p"])
            b = thing(t, "x", items=[{"name": "b", "value": "2"}])
            await t.patch(f"{path}/x", a, ct=APPLY, params={"fieldManager": "a"}, record=_spec)
            await t.patch(f"{path}/x", b, ct=APPLY, params={"fieldManager": "b"}, record=_spec)
            await t.patch(f"{path}/x", thing(t, "x", atomic=["q"]), ct=APPLY,
                          params={"fieldManager": "b"}, record=shown)  # fmt: skip
            await t.patch(f"{path}/x", thing(t, "x", atomic=["p"]), ct=APPLY,
                          params={"fieldManager": "a"}, record=_spec)  # fmt: skip
            await t.get(f"{path}/x", record=_managed)

    await conform(scenario)


async def test_apply_of_a_deployment_owns_the_defaults_it_did_not_send_to_no_one(
    conform: Conform,
) -> None:
    """An apply creating a Deployment: defaults are stored but not owned; a second apply
    without the replicas leaves the replicas as they are."""

    async def scenario(t: Target) -> None:
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
        path = t.apis("apps/v1", "deployments", "d")
        await t.patch(path, deployment, ct=APPLY, params={"fieldManager": "op"}, record=_managed)
        del deployment["spec"]["replicas"]
        await t.patch(path, deployment, ct=APPLY, params={"fieldManager": "op"},
                      record=lambda d: d["spec"].get("replicas"))  # fmt: skip

    await conform(scenario)


async def test_apply_dry_run_does_not_store(conform: Conform) -> None:
    """A dry-run apply answers the object it would make and stores nothing."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a"},
            "data": {"x": "1"},
        }
        await t.patch(t.cm("a"), body, ct=APPLY, params={"fieldManager": "m", "dryRun": "All"},
                      record=lambda d: (d.get("data"), bool(d["metadata"].get("uid")),
                                        "resourceVersion" in d["metadata"]))  # fmt: skip
        await t.get(t.cm("a"), record=code)

    await conform(scenario)


# -- watches ---------------------------------------------------------------------------------------


async def test_a_watch_from_resource_version_0_starts_with_the_current_objects(
    conform: Conform,
) -> None:
    """resourceVersion=0 on a watch: ADDED for each current object, then the changes."""

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})

        async def actions() -> None:
            await t.patch(t.cm("a"), {"data": {"x": "1"}})

        await t.watch(t.cm(), {"resourceVersion": "0"}, actions=actions,
                      until=lambda e: len(e) >= 2, limit=5)  # fmt: skip

    await conform(scenario)


async def test_a_cluster_wide_watch_by_namespace_field_selector(conform: Conform) -> None:
    """A watch of all namespaces' custom resources narrowed by metadata.namespace."""

    async def scenario(t: Target) -> None:
        made = await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                          "metadata": {"name": "w"}}, record=code)  # fmt: skip

        async def actions() -> None:
            await t.patch(t.widgets("w"), {"spec": {"size": 2}})
            await t.delete(t.widgets("w"))

        await t.watch(f"/apis/{GROUP}/v1/widgets",
                      {"fieldSelector": f"metadata.namespace={t.namespace}",
                       "resourceVersion": made["metadata"]["resourceVersion"]},
                      actions=actions, until=lambda e: len(e) >= 2, limit=5)  # fmt: skip

    await conform(scenario)


async def test_the_deprecated_watch_paths_still_stream(conform: Conform) -> None:
    """``/api/v1/watch/namespaces/<ns>/configmaps`` and the watch of one named object."""

    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "a"}}, record=code)  # fmt: skip
        rv = made["metadata"]["resourceVersion"]

        async def actions() -> None:
            await t.patch(t.cm("a"), {"data": {"x": "1"}})

        await t.watch(f"/api/v1/watch/namespaces/{t.namespace}/configmaps",
                      {"resourceVersion": rv}, actions=actions, until=lambda e: len(e) >= 1,
                      limit=5)  # fmt: skip
        await t.watch(
            f"/api/v1/watch/namespaces/{t.namespace}/configmaps/a",
            {"resourceVersion": rv},
            until=lambda e: len(e) >= 1,
            limit=5,
        )

    await conform(scenario)


async def test_a_watch_with_initial_events_needs_bookmarks(conform: Conform) -> None:
    """sendInitialEvents without allowWatchBookmarks, and with a resourceVersion other than
    the empty one, are refused."""

    async def scenario(t: Target) -> None:
        for params in (
            {
                "watch": "true",
                "sendInitialEvents": "true",
                "resourceVersionMatch": "NotOlderThan",
                "timeoutSeconds": "1",
            },
            {
                "watch": "true",
                "sendInitialEvents": "false",
                "timeoutSeconds": "1",
                "resourceVersionMatch": "NotOlderThan",
                "allowWatchBookmarks": "true",
            },
        ):
            await t.get(t.cm(), params=params, record=shown)

    await conform(scenario)


async def test_a_watch_of_secrets_by_type(conform: Conform) -> None:
    """A watch narrowed by a kind-specific field selector (Secrets' type)."""

    async def scenario(t: Target) -> None:
        await t.post(t.core("secrets"), {"apiVersion": "v1", "kind": "Secret",
                                         "metadata": {"name": "o"}}, record=code)  # fmt: skip

        async def actions() -> None:
            await t.post(
                t.core("secrets"),
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "b"},
                    "type": "kubernetes.io/basic-auth",
                    "stringData": {"username": "u"},
                },
            )
            await t.patch(t.core("secrets", "o"), {"data": {"k": "dg=="}})

        await t.watch(t.core("secrets"), {"fieldSelector": "type=kubernetes.io/basic-auth"},
                      actions=actions, until=lambda e: len(e) >= 1, limit=4)  # fmt: skip

    await conform(scenario)
