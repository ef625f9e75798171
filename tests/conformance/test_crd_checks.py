"""Conformance: a CRD's checks beyond its schemas (``ValidateCustomResourceDefinition`` and its
update's): its names, group, scope, versions, conversion, subresources, printer columns,
selectable fields, stored versions and API approval; all the causes in one 422, in Go's order
(with the schemas' where Go meets them), at the internal version's paths."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target
from tests.conformance.test_cel_library import CRDS

pytestmark = pytest.mark.anyio

OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
BAD = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
       "properties": {"a": {"type": "foo"}}}}}}  # fmt: skip
FIELDS = {"openAPIV3Schema": {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "s": {"type": "string"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
        "n": {"type": "number"}, "o": {"type": "object"}, "e": {"type": "string", "enum": ["a"]},
        "f": {"type": "string", "format": "date"},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "l": {"type": "array", "items": {"type": "string"}},
        "x": {"x-kubernetes-int-or-string": True}}},
    "metadata": {"type": "object", "properties": {"name": {"type": "string"}}}}}}  # fmt: skip
HOOK = {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}
Edit = Callable[[dict[str, Any]], None]


def _version(name: str = "v1", storage: bool = True, **more: Any) -> dict[str, Any]:
    return {"name": name, "served": True, "storage": storage, "schema": OPEN, **more}


def _crd(
    group: str,
    plural: str,
    *,
    names: dict[str, Any] | None = None,
    versions: list[dict[str, Any]] | None = None,
    name: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name or f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": names or {"kind": "Thing", "plural": plural},
                     "versions": [_version()] if versions is None else versions,
                     **spec}}  # fmt: skip


def _ordered(document: Any) -> Any:
    """A refusal with its causes in the order given (Go's is fixed here: no schema map walked
    twice); a created CRD by what it names and stores."""
    if not isinstance(document, dict):
        return document
    if document.get("kind") == "Status":
        causes = (document.get("details") or {}).get("causes") or []
        return {"code": document.get("code"), "reason": document.get("reason"),
                "message": document.get("message"), "causes": causes}  # fmt: skip
    return {"names": (document.get("spec") or {}).get("names"),
            "storedVersions": (document.get("status") or {}).get("storedVersions")}  # fmt: skip


def _refused(document: Any) -> Any:
    """An update's refusal, or what it stored of the names and versions (its names defaulted,
    its new storage version among the stored ones)."""
    shown = _ordered(document)
    if "causes" in shown:
        return shown
    spec, status = document.get("spec") or {}, document.get("status") or {}
    return {"names": spec.get("names"), "versions": [(v["name"], v.get("storage"))
            for v in spec.get("versions") or ()],
            "storedVersions": status.get("storedVersions")}  # fmt: skip


async def _create_all(t: Target, bodies: list[dict[str, Any]]) -> None:
    """POST each CRD; delete those made (cluster-scoped: they outlive the scenario)."""
    for body in bodies:
        made = await t.post(CRDS, body, record=_ordered)
        if isinstance(made, dict) and made.get("kind") != "Status":
            await t.api.delete(f"{CRDS}/{body['metadata']['name']}")


async def _established(t: Target, name: str) -> dict[str, Any]:
    """The CRD once Established (at once on the fake; a moment after on the real server)."""
    with anyio.fail_after(30):
        while True:
            found: dict[str, Any] = (await t.api.get(f"{CRDS}/{name}")).json()
            conditions = (found.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return found
            await anyio.sleep(0.1)


async def _update(t: Target, body: dict[str, Any], edit: Edit, sub: str | None = None) -> None:
    """Create a CRD, wait until it is Established, PUT it (or its status) edited, delete it."""
    made = await t.post(CRDS, body, record=_ordered)
    name = body["metadata"]["name"]
    if made.get("kind") == "Status":
        return
    changed = copy.deepcopy(await _established(t, name))
    edit(changed)
    await t.put(f"{CRDS}/{name}" + (f"/{sub}" if sub else ""), changed, record=_refused)
    await t.api.delete(f"{CRDS}/{name}")


async def test_names_group_scope_and_approval_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        bad_names = {"kind": "Thing", "plural": "Things", "singular": "A_b", "listKind": "Thing",
                     "shortNames": ["OK", "ok"], "categories": ["all", "A b"]}  # fmt: skip
        await _create_all(t, [
            _crd(group, "things", names=bad_names),
            _crd(t.namespace, "dotless"),
            _crd(group, "nokind", names={"plural": "nokind"}),
            _crd(group, "globals", scope="Global"),
            _crd(group, "scopeless", scope=""),
            _crd(group, "named", name=f"other.{group}"),
            _crd(f"{t.namespace}.k8s.io", "protected"),
            _crd(f"{t.namespace}.x.kubernetes.io", "badapproval",
                 name=f"badapproval.{t.namespace}.x.kubernetes.io"),
            _crd("Bad_Group.x", "upper"),
            _crd(group, "longnames", names={"kind": "A" * 64, "plural": "b" * 64}),
        ])  # fmt: skip
        bad = _crd(f"{t.namespace}.x.kubernetes.io", "approval")
        bad["metadata"]["annotations"] = {"api-approved.kubernetes.io": "maybe"}
        await _create_all(t, [bad])

    await conform(scenario)


async def test_versions_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        await _create_all(t, [
            _crd(group, "twostorage", versions=[_version("v1"), _version("v2")]),
            _crd(group, "versionnames", versions=[
                _version("V1"), _version("v1", False), _version("v1", False)]),
            _crd(group, "noversions", versions=[]),
            _crd(group, "nostorage", versions=[_version("v1", False)]),
            _crd(group, "deprecations", versions=[
                _version("v1", deprecationWarning="x"),
                _version("v2", False, deprecated=True, deprecationWarning=""),
                _version("v3", False, deprecated=True, deprecationWarning="a\u0007b")]),
        ])  # fmt: skip

    await conform(scenario)


async def test_the_conversion_is_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        service = {"name": "A", "namespace": "", "path": "x", "port": 0}
        await _create_all(t, [
            _crd(group, "nohook", conversion={"strategy": "Webhook"}),
            _crd(group, "other", conversion={"strategy": "Other"}),
            _crd(group, "nonehook", conversion={"strategy": "None", "webhook": HOOK}),
            _crd(group, "badurl", conversion={"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v2", "v2", "V3"],
                "clientConfig": {"url": "http://x/a?b#c", "caBundle": "eHl6"}}}),
            _crd(group, "emptyhook", conversion={"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": [], "clientConfig": {}}}),
            _crd(group, "badservice", conversion={"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": {"service": service}}}),
            _crd(group, "preserving", preserveUnknownFields=True,
                 conversion={"strategy": "Webhook", "webhook": HOOK}),
        ])  # fmt: skip

    await conform(scenario)


async def test_subresources_and_printer_columns_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        columns = [{"name": "", "type": "", "jsonPath": "spec.x", "format": "bad"},
                   {"name": "a", "type": "foo", "jsonPath": ".", "priority": -1},
                   {"name": "b", "type": "string", "jsonPath": ""}]  # fmt: skip
        scale = {"scale": {"specReplicasPath": ".x", "statusReplicasPath": ".status.r"}}
        column = [{"name": "a", "type": "x", "jsonPath": ".a"}]
        await _create_all(t, [
            _crd(group, "columns", versions=[_version(additionalPrinterColumns=columns)]),
            _crd(group, "scales", versions=[_version(subresources={"scale": {
                "specReplicasPath": ".status.r", "statusReplicasPath": "spec.r",
                "labelSelectorPath": ".metadata.x"}})]),
            _crd(group, "emptyscales", versions=[_version(subresources={"scale": {
                "specReplicasPath": "", "statusReplicasPath": ".status",
                "labelSelectorPath": "x"}})]),
            _crd(group, "samescales", versions=[_version("v1", subresources=scale),
                                                _version("v2", False, subresources=scale)]),
            _crd(group, "samecolumns", versions=[
                _version("v1", additionalPrinterColumns=column),
                _version("v2", False, additionalPrinterColumns=column)]),
            _crd(group, "ownscales", versions=[_version("v1", subresources=scale),
                                               _version("v2", False)]),
        ])  # fmt: skip

    await conform(scenario)


async def test_selectable_fields_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"

        def fields(*paths: str) -> list[dict[str, str]]:
            return [{"jsonPath": path} for path in paths]

        many = fields(".spec.s", ".spec.i", ".spec.b", ".spec.n", ".spec.o", ".spec.e", ".spec.f",
                      ".spec.m.k", ".spec.l", ".spec.x", ".metadata.name", ".spec.nope",
                      "spec.s", ".spec['s']", ".spec.l[0]", "", ".spec.s", ".spec.")  # fmt: skip
        nine = fields(".spec.s", ".spec.i", ".spec.b", ".spec.e", ".spec.f", ".spec.m.a",
                      ".spec.m.b", ".spec.m.c", ".spec.m.d")  # fmt: skip
        await _create_all(t, [
            _crd(group, "many", versions=[_version(schema=FIELDS, selectableFields=many)]),
            _crd(group, "nine", versions=[_version(schema=FIELDS, selectableFields=nine)]),
            _crd(group, "oneversion", versions=[
                _version("v1", schema=FIELDS, selectableFields=fields(".spec.s")),
                _version("v2", False, schema=FIELDS)]),
            _crd(group, "ownschemas", versions=[
                _version("v1", schema=FIELDS, selectableFields=fields(".spec.s")),
                _version("v2", False, selectableFields=fields(".spec.q"))]),
            _crd(group, "shared", versions=[
                _version("v1", schema=FIELDS, selectableFields=fields(".spec.s", ".spec")),
                _version("v2", False, schema=FIELDS,
                         selectableFields=fields(".spec.s", ".spec"))]),
        ])  # fmt: skip

    await conform(scenario)


async def test_causes_come_in_go_order_with_the_schemas(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        singular = {"kind": "Thing", "plural": "x", "singular": "X"}
        column = [{"name": "a", "type": "x", "jsonPath": ".a"}]
        scale = {"scale": {"specReplicasPath": ".x", "statusReplicasPath": ".status.r"}}
        bare = [{"name": "v1", "served": True, "storage": True},
                {"name": "v2", "served": True, "storage": False}]  # fmt: skip
        await _create_all(t, [
            _crd(t.namespace, "x", names=singular, versions=[
                _version("v1", schema=BAD, additionalPrinterColumns=column, subresources=scale,
                         deprecationWarning="w"),
                _version("V2", False)]),
            _crd(group, "x", names=singular, conversion={"strategy": "Other"},
                 versions=[_version("v1", schema=BAD, additionalPrinterColumns=column)]),
            _crd(group, "x", names=singular, versions=bare, scope="X"),
        ])  # fmt: skip

    await conform(scenario)


async def test_valid_edge_cases_are_accepted(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        names = {"kind": "Thing", "plural": "edges", "singular": "edge", "listKind": "Things",
                 "shortNames": ["ed"], "categories": ["all", "mine"]}  # fmt: skip
        columns = [{"name": "A b", "type": "date", "format": "int32", "jsonPath": ".",
                    "priority": 3}]  # fmt: skip
        subresources = {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.a.b",
                "statusReplicasPath": ".status.x",
                "labelSelectorPath": ".spec.sel",
            },
        }
        hook = {
            "conversionReviewVersions": ["v9", "v1"],
            "clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/convert"}},
        }
        approved = _crd(f"{t.namespace}.k8s.io", "approved")
        approved["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, test"}
        await _create_all(t, [
            _crd(group, "edges", names=names, versions=[
                _version("v1", subresources=subresources, additionalPrinterColumns=columns,
                         deprecated=True, deprecationWarning="old"),
                {**_version("v2", False), "served": False}],
                 conversion={"strategy": "Webhook", "webhook": hook}),
            approved,
            _crd(group, "samefields", versions=[
                _version("v1", schema=FIELDS, selectableFields=[{"jsonPath": ".spec.e"}]),
                _version("v2", False, schema=FIELDS,
                         selectableFields=[{"jsonPath": ".spec.e"}])]),
        ])  # fmt: skip

    await conform(scenario)


def _move_storage(crd: dict[str, Any]) -> None:
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"][1]["storage"] = True


def _move_and_drop(crd: dict[str, Any]) -> None:
    _move_storage(crd)
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] != "v2"]


def _only_v1(crd: dict[str, Any]) -> None:
    crd["spec"]["versions"] = [{**crd["spec"]["versions"][0], "storage": True}]


def _rename(crd: dict[str, Any]) -> None:
    crd["spec"]["group"] = "other.anyop.dev"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"].update(plural="others", kind="Other")


def _undefaulted(crd: dict[str, Any]) -> None:
    del crd["spec"]["names"]["singular"], crd["spec"]["names"]["listKind"], crd["status"]


def _preserve(crd: dict[str, Any]) -> None:
    crd["spec"]["preserveUnknownFields"] = True


def _stored(crd: dict[str, Any]) -> None:
    crd["status"]["storedVersions"] = ["v1", "v3"]


def _accepted(crd: dict[str, Any]) -> None:
    crd["status"]["storedVersions"] = []
    crd["status"]["acceptedNames"]["plural"] = "Bad"


async def test_updates_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        two = [_version("v1"), _version("v2", False)]
        await _update(t, _crd(group, "moves", versions=two), _move_storage)
        await _update(t, _crd(group, "drops", versions=two), _move_and_drop)
        await _update(
            t, _crd(group, "dropstored", versions=[_version("v1", False), _version("v2")]), _only_v1
        )
        await _update(t, _crd(group, "renames"), _rename)
        await _update(t, _crd(group, "undefaulted"), _undefaulted)  # defaulted again: valid
        await _update(t, _crd(group, "preserves"), _preserve)
        await _update(t, _crd(group, "stores"), _stored, "status")
        await _update(t, _crd(group, "accepts"), _accepted, "status")

    await conform(scenario)
