"""Conformance of a CRD's schema checks (structural schemas, the list and map types, rules'
static checks, defaults) and of what custom resources meet because of them: list-type
duplicates, integer bounds, embedded resources; strategic merge directives' errors."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, STRATEGIC, Target
from tests.conformance.test_outside_builtins import _deployment
from tests.conformance.test_outside_scenarios import CRDS, _crd, own_crd, shown, thing

pytestmark = pytest.mark.anyio


def _refused(schema: dict[str, Any], **kwargs: Any) -> Any:
    async def scenario(t: Target) -> None:
        await t.post(CRDS, _crd(t, schema, **kwargs), record=shown)
        await t.api.delete(f"{CRDS}/things.{t.namespace}.anyop.dev")

    return scenario


async def test_structural_invariants_are_checked(conform: Conform) -> None:
    """An array without items, a nested clause with a type, metadata of an embedded resource
    with a default, x-kubernetes-embedded-resource without a type, int-or-string beside
    preserve-unknown-fields, a property named only in a clause."""
    schema = {"type": "object", "properties": {
        "list": {"type": "array"},
        "clause": {"type": "object", "properties": {"a": {"type": "string"}},
                   "allOf": [{"type": "string", "properties": {"b": {}}}]},
        "emb": {"x-kubernetes-embedded-resource": True, "properties": {"x": {"type": "string"}}},
        "ios": {"x-kubernetes-int-or-string": True, "x-kubernetes-preserve-unknown-fields": True},
        "io": {"x-kubernetes-int-or-string": True,
               "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "nested": {"type": "object", "anyOf": [{"properties": {"metadata": {}}}],
                   "properties": {"metadata": {"type": "object"}}},
    }}  # fmt: skip
    await conform(_refused(schema))


async def test_list_and_map_types_of_a_schema_are_checked(conform: Conform) -> None:
    """List types: an unknown one, map without keys, keys not among the items' properties,
    a key neither required nor defaulted, a nullable key, a set of granular objects; map
    types on a string; a root that is nullable."""
    schema = {"type": "object", "properties": {
        "a": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
        "b": {"type": "array", "x-kubernetes-list-type": "map",
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "c": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k", "missing", "k"],
              "items": {"type": "object", "required": ["k"],
                        "properties": {"k": {"type": "string"}}}},
        "d": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k"],
              "items": {"type": "object", "properties": {
                  "k": {"type": "string", "nullable": True}}}},
        "e": {"type": "array", "x-kubernetes-list-type": "set",
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "f": {"type": "string", "x-kubernetes-map-type": "atomic"},
        "g": {"type": "object", "x-kubernetes-map-type": "sometimes"},
        "h": {"type": "string", "x-kubernetes-list-type": "atomic"},
        "i": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k"], "items": {"type": "string"}},
    }}  # fmt: skip
    await conform(_refused(schema))


async def test_validation_rules_are_checked_statically(conform: Conform) -> None:
    """Rules without a rule, with a blank message, a multi-line rule without a message, a blank
    messageExpression, a field path to nowhere or not starting with a dot."""
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 5, "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self != 'x'", "message": "  "},
            {"rule": "self != 'y'\n|| true"},
            {"rule": "self != 'z'", "messageExpression": " "},
        ]},
        "o": {"type": "object", "properties": {"p": {"type": "string", "maxLength": 5}},
              "x-kubernetes-validations": [
                  {"rule": "true", "fieldPath": ".q"},
                  {"rule": "true", "fieldPath": "p"},
                  {"rule": "true", "fieldPath": "['p']"},
                  {"rule": "true", "fieldPath": ".p"}]},
    }}  # fmt: skip
    await conform(_refused(schema))


async def test_defaults_of_a_schema_are_checked(conform: Conform) -> None:
    """Defaults of the wrong type, with unknown fields, against their own bounds; a default
    in the top-level metadata; a root with the status subresource and keywords it may not
    have."""
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "default": "x"},
        "o": {"type": "object", "properties": {"a": {"type": "string"}},
              "default": {"a": "x", "b": 1}},
        "m": {"type": "integer", "maximum": 3, "default": 5},
        "s": {"type": "string", "enum": ["a"], "default": "b"},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        await t.post(CRDS, _crd(t, schema), record=shown)
        body = _crd(t, {"type": "object"})
        root = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        root["properties"]["metadata"] = {"type": "object", "default": {"name": "x"}}
        root["nullable"] = True
        root["uniqueItems"] = True
        await t.post(CRDS, body, record=shown)
        await t.api.delete(f"{CRDS}/things.{t.namespace}.anyop.dev")

    await conform(scenario)


async def test_list_types_refuse_each_duplicate_once(conform: Conform) -> None:
    """A set with an item three times, a map list with one key (and items without it), a map
    list whose item is not an object."""
    schema = {"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "byName": {"type": "array", "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "properties": {
                       "name": {"type": "string", "default": "d"},
                       "v": {"type": "integer"}}}},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            await t.post(path, thing(t, "a", set=["x", "x", "x", "y", "y"]), record=shown)
            by_name = [{"name": "a"}, {"v": 1}, {"name": "a", "v": 2}, {}]
            await t.post(path, thing(t, "b", byName=by_name), record=shown)
            await t.post(path, thing(t, "c", byName=[{"name": "a"}, {"name": "b"}]),
                         record=lambda d: d.get("spec"))  # fmt: skip

    await conform(scenario)


async def test_integer_bounds_that_are_fractions(conform: Conform) -> None:
    """Integers against fractional bounds of a number (truncated), an integer schema with a
    fractional multipleOf, and fractions against whole bounds."""
    schema = {"type": "object", "properties": {
        "n": {"type": "number", "maximum": 2.5, "minimum": -1.5, "multipleOf": 1.5},
        "i": {"type": "integer", "multipleOf": 2.5},
    }}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            for index, (n, i) in enumerate([(3, 5), (2, 4), (-2, 10), (2.5, 0), (1.5, None)]):
                spec = {"n": n} if i is None else {"n": n, "i": i}
                await t.post(path, thing(t, f"x{index}", **spec), record=shown)

    await conform(scenario)


async def test_an_embedded_resource_in_a_list_and_its_bad_meta(conform: Conform) -> None:
    """Embedded resources as list items: a kind that is not a DNS label, an apiVersion with two
    slashes, a name with a slash, bad labels, malformed metadata fields dropped."""
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {
            "type": "object", "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True}}}}  # fmt: skip

    async def scenario(t: Target) -> None:
        async with own_crd(t, schema) as path:
            bad = [
                {"apiVersion": "a/b/c", "kind": "Not_A_Kind", "metadata": {"name": "x/y"}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"labels": {"bad key": "v"}, "namespace": "Not_Ok"}},
                {"apiVersion": "", "kind": ""},
            ]  # fmt: skip
            await t.post(path, thing(t, "a", items=bad), record=shown)
            odd = [{"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "s", "labels": "nope", "generation": "x",
                                 "annotations": {"a": "b"}, "uid": ""}}]  # fmt: skip
            await t.post(path, thing(t, "b", items=odd), record=shown)

    await conform(scenario)


async def test_strategic_merge_list_directives_that_fail(conform: Conform) -> None:
    """A list item ``$patch: merge``, ``$patch: delete`` without the merge key, an unknown
    ``$patch`` in a list; and ``$patch: replace`` on a map."""

    async def scenario(t: Target) -> None:
        path = t.apis("apps/v1", "deployments", "d")
        await t.post(t.apis("apps/v1", "deployments"), _deployment(), record=lambda d: None)
        for item in ({"$patch": "merge"}, {"$patch": "delete"}, {"$patch": "other", "a": 1}):
            patch = {"spec": {"template": {"spec": {"containers": [item]}}}}
            await t.patch(path, patch, ct=STRATEGIC, record=shown)
        replace = {"spec": {"template": {"metadata": {"labels": {
            "app": "d", "$patch": "replace"}}}}}  # fmt: skip
        await t.patch(path, replace, ct=STRATEGIC,
                      record=lambda d: d["spec"]["template"]["metadata"])  # fmt: skip

    await conform(scenario)


async def test_methods_a_custom_resource_does_not_take(conform: Conform) -> None:
    """A custom resource's collection PUT, its scale's DELETE and POST."""

    async def scenario(t: Target) -> None:
        path = f"/apis/{GROUP}/v1/namespaces/{t.namespace}/sprockets"
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Sprocket", "metadata": {"name": "s"}}
        await t.post(path, {**body, "spec": {}}, record=lambda d: None)
        await t.put(path, {}, record=shown)
        await t.delete(f"{path}/s/scale", record=shown)
        await t.post(f"{path}/s/scale", {}, record=shown)

    await conform(scenario)


async def test_a_value_of_another_type_is_pruned_as_kube_apiserver_prunes_it(
    conform: Conform,
) -> None:
    """Pruning walks a value whatever its type: the objects of a list where the schema gives
    a string, or nested deeper than its items, lose every field (each one warned of, or
    refused by a strict request); an object in a string's place loses its fields too."""

    async def scenario(t: Target) -> None:
        specs = [{"name": [{"a": 1}, {"b": {"c": 2}}, "x"], "low": 1}, {"plain": {"d": 1}},
                 {"tags": [[{"e": 1}], "y"]}, {"items": [{"key": [{"f": 1, "g": [{"h": 1}]}]}]},
                 {"extra": [{"kept": 1}]}]  # fmt: skip
        for index, spec in enumerate(specs):  # one wrong type each (Go reports them unordered)
            body = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo",
                    "metadata": {"name": f"g{index}"}, "spec": spec}  # fmt: skip
            for validation in ("Warn", "Strict"):
                answer = await t.api.post(t.gizmos(), json=body,
                                          params={"fieldValidation": validation})  # fmt: skip
                t.note(validation, (answer.status_code, answer.headers.get("warning"),
                                    answer.json()))  # fmt: skip

    await conform(scenario)
