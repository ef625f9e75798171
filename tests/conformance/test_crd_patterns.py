"""Conformance: the ``pattern`` of a CRD's schema is Go's regular expression (RE2): a pattern
Go's ``regexp`` refuses (a lookaround, a backreference, a possessive repetition, ``\\Z``...)
makes the CRD invalid, with Go's words; and values match as in Go (``$`` is the end of the
text, ``\\d`` and ``\\w`` are ASCII's), in the schema and in CEL's ``find`` and ``matches``."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown
from tests.conformance.test_cel_library import CRDS, own_crd

pytestmark = pytest.mark.anyio

REFUSED = ["(?=a)b", "a**", "(a)\\1", "[a", "a\\Z", "(?<=x)y", "x{1001}", "*a", "a)",
           "(?>a)", "a++", "\\e", "(?P<n>a", "a\\"]  # fmt: skip
FIELDS: dict[str, dict[str, Any]] = {
    "name": {"type": "string", "maxLength": 16, "pattern": "^[a-z]+$"},
    "digits": {"type": "string", "maxLength": 16, "pattern": "^\\d+$"},
    "word": {"type": "string", "maxLength": 16, "pattern": "^\\w+\\b"},
    "named": {"type": "string", "maxLength": 16, "pattern": "^(?P<x>[a-c])(?<y>[0-9])$"},
    "posix": {"type": "string", "maxLength": 16, "pattern": "^[[:alpha:]]+$"},
    "quoted": {"type": "string", "maxLength": 16, "pattern": "^\\Qa.b\\E$"},
    "folded": {"type": "string", "maxLength": 16, "pattern": "(?i)^abc$"},
    "found": {"type": "string", "maxLength": 16, "x-kubernetes-validations": [
        {"rule": "self.find('[0-9]+$') != '42'"},
        {"rule": "!self.matches('^\\\\d+$')"},
        {"rule": "self.findAll('\\\\w+').size() < 3"}]},
}  # fmt: skip
CASES: list[tuple[str, list[Any]]] = [
    ("name", ["abc", "abc\n", "ABC", "ab c"]),
    ("digits", ["123", "\u0661\u0662\u0663", "12a"]),
    ("word", ["abc", "\u00e9t\u00e9", "_x"]),
    ("named", ["a1", "d1", "a12"]),
    ("posix", ["abc", "ab1", "\u00e9"]),
    ("quoted", ["a.b", "axb"]),
    ("folded", ["ABC", "aBc", "abcd"]),
    ("found", ["x42", "x42\n", "\u0664\u0662", "a b c", "\u00e9 \u00e8 \u00ea"]),
]


async def test_a_pattern_go_refuses_makes_the_crd_invalid(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.anyop.dev"
        properties = {f"p{index}": {"type": "string", "pattern": pattern}
                      for index, pattern in enumerate(REFUSED)}  # fmt: skip
        schema = {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": properties}}}}  # fmt: skip
        body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"patterns.{group}"},
                "spec": {"group": group, "scope": "Namespaced",
                         "names": {"kind": "Pattern", "plural": "patterns"},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": schema}]}}  # fmt: skip
        made = await t.post(CRDS, body, record=status_shown)
        if made.get("kind") != "Status":
            await t.api.delete(f"{CRDS}/patterns.{group}")

    await conform(scenario)


async def test_values_match_patterns_as_go_matches_them(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        async with own_crd(t, FIELDS) as path:
            for index, (field, values) in enumerate(CASES):
                t.note("field", field)
                for number, value in enumerate(values):
                    body = {"apiVersion": f"{t.namespace}.anyop.dev/v1", "kind": "Thing",
                            "metadata": {"name": f"c{index}-{number}"},
                            "spec": {field: value}}  # fmt: skip
                    await t.post(path, body, record=_shown)

    await conform(scenario)


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return document.get("spec") if isinstance(document, dict) else document
