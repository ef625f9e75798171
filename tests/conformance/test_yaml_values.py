"""Conformance: YAML values as kube-apiserver reads them (go-yaml's YAML 1.1, then JSON), in a
free-form custom resource (what it keeps shows what it read), a ConfigMap (typed: strings only)
and a server-side apply configuration."""

from __future__ import annotations

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

pytestmark = pytest.mark.anyio

_YAML = "application/yaml"
_APPLY = "application/apply-patch+yaml"
VALUES = [
    # timestamps, booleans, numbers as go-yaml resolves them (PyYAML differs on several)
    "2001-12-14", "2001-12-14T21:59:43.10-05:00", "yes", "n", "010", "1_000", "0x1F", "0o17",
    "0b101", "1:20", "1.5e3", "1e3", ".5e1", "-.5", "+1", "1.", "0.", "6.8523015e+5",
    "12345678901234567890123", "~",
    # what JSON cannot hold, and YAML's own forms
    ".inf", "-.Inf", ".NaN", "{n: 1}", "{1: a}", "{1.5: a}", "{~: a}", "{? [1]: a}",
    "!!binary aGVsbG8=", "!!str 1", "!!int '3'", "!!float 1", "&a 1", "[*a]",
    "'\\u00e9'", '"\\u00e9"', '"\\x41"',
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES)
async def test_a_yaml_value_reads_as_go_reads_it(conform: Conform, value: str) -> None:
    async def scenario(t: Target) -> None:
        name = "g-" + t.namespace
        head = f"apiVersion: {GROUP}/v1\nkind: Gadget\nmetadata: {{name: {name}}}\n"
        await t.post(t.gadgets(), f"{head}spec:\n  v: {value}\n".encode(), ct=_YAML)
        await t.delete(t.gadgets(name))

    await conform(scenario)


async def test_yaml_values_in_a_configmap_and_an_applied_configuration(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for value in ("2001-12-14", "1:20", "0o17", "1e3", "!!binary aGVsbG8=", ".inf"):
            body = f"metadata: {{name: c}}\ndata: {{x: {value}}}\n"
            await t.post(t.cm(), body.encode(), ct=_YAML)
            await t.delete(t.cm("c"))
        head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
        manager = {"fieldManager": "m"}
        await t.patch(t.cm("a"), f"{head}data: {{x: 2001-12-14}}\n".encode(), ct=_APPLY,
                      params=manager)  # fmt: skip
        await t.patch(t.cm("a"), f"{head}data: {{x: 1e3}}\n".encode(), ct=_APPLY, params=manager)
        await t.patch(t.cm("a"), f"{head}data: [*a]\n".encode(), ct=_APPLY, params=manager)

    await conform(scenario)
