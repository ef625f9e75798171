"""Conformance: the CRDs kube-apiserver refuses for their ``x-kubernetes-validations`` rules,
compiled and their costs estimated when the CRD is written: syntax and type errors, a rule that
is not a bool or a ``messageExpression`` that is not a string, ``oldSelf`` where the schema
cannot correlate it, a rule's estimated cost over 10,000,000 (times the times it runs under
the lists and maps above it) and rules whose costs add up to more than 100,000,000, with
rules near those limits that pass.

Each case is a dry-run create (recorded as its status and the causes of a refusal) of a CRD
whose group is named after the scenario's namespace; the updates are of a CRD created for
them, deleted at the end.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
Body = dict[str, Any]
STRING: Body = {"type": "string"}
WORDS: Body = {"type": "string", "maxLength": 1000}
CONTAINS = "self.all(x, x.contains('abcdefgh'))"  # 404 an item of at most 1,000 characters


def _spec(properties: Body, rules: list[Body] | None = None, **more: Any) -> Body:
    spec: Body = {"type": "object", "properties": properties, **more}
    if rules:
        spec["x-kubernetes-validations"] = rules
    return {"type": "object", "properties": {"spec": spec}}


def _crd(group: str, schema: Body, *, versions: int = 1) -> Body:
    listed = [{"name": f"v{i + 1}", "served": True, "storage": i == 0,
               "schema": {"openAPIV3Schema": schema}} for i in range(versions)]  # fmt: skip
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"limits.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "versions": listed,
                     "names": {"kind": "Limit", "plural": "limits"}}}  # fmt: skip


def _shown(document: Any) -> Any:
    """A write as its outcome: the refusal's causes (as a set), or the kind written."""
    if isinstance(document, dict) and document.get("kind") == "Status":
        causes = (document.get("details") or {}).get("causes") or []
        return {
            "reason": document.get("reason"),
            "causes": sorted(causes, key=lambda c: (c.get("field"), c.get("message"))),
        }
    return document.get("kind") if isinstance(document, dict) else document


def _listed(rule: str, items: Body, most: int | None, **rule_fields: Any) -> Body:
    """A list of ``items`` (at most ``most``) whose rule is ``rule``."""
    schema: Body = {"type": "array", "items": items,
                    "x-kubernetes-validations": [{"rule": rule, **rule_fields}]}  # fmt: skip
    if most is not None:
        schema["maxItems"] = most
    return schema


CASES: dict[str, Body] = {
    # -- costs ----------------------------------------------------------------------------------
    "a regex over a bounded list of bounded strings":
        _spec({"names": _listed("self.all(x, x.matches('^[a-z]+$'))",
                                {"type": "string", "maxLength": 64}, 100)}),
    "a regex over an unbounded list of unbounded strings":
        _spec({"names": _listed("self.all(x, x.matches('^[a-z]+$'))", STRING, None)}),
    "size() over an unbounded list of unbounded strings":
        _spec({"names": _listed("self.all(x, size(x) < 10)", STRING, None)}),
    "startsWith on strings of unbounded lists in an unbounded map":
        _spec({"m": {"type": "object", "additionalProperties": {"type": "array", "items": {
            "type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}}}}),
    "contains just under the rule's limit": _spec({"words": _listed(CONTAINS, WORDS, 24000)}),
    "contains 1.2 times the rule's limit": _spec({"words": _listed(CONTAINS, WORDS, 30000)}),
    "contains 3.2 times the rule's limit": _spec({"words": _listed(CONTAINS, WORDS, 80000)}),
    "a messageExpression joining string(int)":
        _spec({"a": {"type": "integer"}},
              [{"rule": "self.a > 0", "messageExpression": "'a is ' + string(self.a)"}]),
    "a messageExpression joining a bounded string":
        _spec({"name": {"type": "string", "maxLength": 64}},
              [{"rule": "self.name != 'x'", "messageExpression": "'name is ' + self.name"}]),
    "a rule under a bounded list of objects":
        _spec({"items": {"type": "array", "maxItems": 100, "items": {
            "type": "object", "properties": {"s": WORDS},
            "x-kubernetes-validations": [{"rule": "self.s.contains('abcdefgh')"}]}}}),
    "a rule under an unbounded list of objects":
        _spec({"items": {"type": "array", "items": {
            "type": "object", "properties": {"s": WORDS},
            "x-kubernetes-validations": [{"rule": "self.s.contains('abcdefgh')"}]}}}),
    "rules whose costs add up to more than the schema's limit":
        _spec({f"w{i}": _listed(CONTAINS, WORDS, 24000 - 100 * i) for i in range(11)}),
    "rules whose costs add up to just under the schema's limit":
        _spec({f"w{i}": _listed(CONTAINS, WORDS, 24000 - 100 * i) for i in range(10)}),
    # -- compilation ----------------------------------------------------------------------------
    "an operand missing at the end": _spec({"a": {"type": "integer"}}, [{"rule": "self.a =="}]),
    "a parenthesis left open": _spec({"a": {"type": "integer"}}, [{"rule": "self.a > (1"}]),
    "an undefined field": _spec({"a": {"type": "integer"}}, [{"rule": "self.nope == 1"}]),
    "an undeclared name": _spec({"a": {"type": "integer"}}, [{"rule": "foo == 1"}]),
    "errors after optional syntax": _spec({"a": {"type": "integer"}}, [
        {"rule": "[?self.?a, 1].size() + self.nope > 1"},
        {"rule": "self.?a.orValue(0) > 1 &&"}]),
    "a field of an undeclared name": _spec({"a": {"type": "integer"}},
                                           [{"rule": "foo.bar == 1 || math.x == 1"}]),
    "int plus string": _spec({"a": {"type": "integer"}}, [{"rule": "self.a + 'x' == 'y'"}]),
    "int compared with string": _spec({"a": {"type": "integer"}}, [{"rule": "self.a == 'x'"}]),
    "a rule that is not a bool": _spec({"a": {"type": "integer"}}, [{"rule": "self.a"}]),
    "a messageExpression that is not a string":
        _spec({"a": {"type": "integer"}}, [{"rule": "self.a > 0", "messageExpression": "self.a"}]),
    "a messageExpression of an undefined field":
        _spec({"a": {"type": "integer"}}, [{"rule": "self.a > 0", "messageExpression": "self.b"}]),
    "two errors in one rule, both at the schema's root fields":
        _spec({"a": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self.x == 1 && nope"}]}}),
    "oldSelf in the items of an atomic list":
        _spec({"l": {"type": "array", "maxItems": 4, "items": {
            "type": "object", "properties": {"x": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.x == oldSelf.x"}]}}}),
    "oldSelf in the items of a map list":
        _spec({"l": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map",
                     "x-kubernetes-list-map-keys": ["k"], "items": {
            "type": "object", "required": ["k"],
            "properties": {"k": {"type": "string", "maxLength": 8}, "x": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.x >= oldSelf.x"}]}}}),
    "optionalOldSelf without oldSelf":
        _spec({"a": {"type": "integer"}}, [{"rule": "self.a > 0", "optionalOldSelf": True}]),
    "rules of metadata and an embedded resource":
        {"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.size() < 64"}],
         "properties": {"spec": {"type": "object", "properties": {"inner": {
             "type": "object", "x-kubernetes-embedded-resource": True,
             "x-kubernetes-preserve-unknown-fields": True,
             "x-kubernetes-validations": [{"rule": "self.kind != 'Secret'"}]}}}}},
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_a_crd_s_rules_are_compiled_and_their_costs_estimated(
    conform: Conform, case: str
) -> None:
    async def scenario(t: Target) -> None:
        crd = _crd(f"{t.namespace}.example.com", CASES[case])
        await t.post(CRDS, crd, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


async def test_versions_of_different_schemas_are_checked_each(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        crd = _crd(f"{t.namespace}.example.com", CASES["an undefined field"], versions=2)
        crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = CASES["int plus string"]
        await t.post(CRDS, crd, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


async def test_an_update_s_rules_are_checked_as_a_create_s(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.example.com"
        path = f"{CRDS}/limits.{group}"
        await t.post(CRDS, _crd(group, CASES["contains just under the rule's limit"]),
                     record=_shown)  # fmt: skip
        try:
            for case in ("contains 3.2 times the rule's limit", "an undefined field",
                         "a regex over a bounded list of bounded strings"):  # fmt: skip
                versions = _crd(group, CASES[case])["spec"]["versions"]
                await t.patch(path, {"spec": {"versions": versions}}, record=_shown)
        finally:
            await t.api.delete(path)

    await conform(scenario)
