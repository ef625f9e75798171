"""Conformance: the codes and Status bodies of requests the API server cannot route or decode."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, MERGE, STRATEGIC, Target

pytestmark = pytest.mark.anyio


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"x": "1"}}


async def test_an_unknown_plural_of_a_built_in_group_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.core("configmapz"))
        await t.get("/apis/apps/v1/deploymentz")

    await conform(scenario)


async def test_an_unknown_plural_of_a_crd_group_is_a_bare_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(f"/apis/{GROUP}/v1/namespaces/{t.namespace}/widgetz")
        await t.get(f"/apis/{GROUP}/v9/namespaces/{t.namespace}/widgets")

    await conform(scenario)


async def test_a_missing_subresource_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.get(t.core("configmaps", "a") + "/status")
        await t.get(t.core("configmaps", "a") + "/nothing")
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        await t.post(t.widgets(), body)
        await t.get(t.widgets("w", sub="scale"))
        await t.get(t.widgets("w", sub="nothing"))

    await conform(scenario)


@pytest.mark.parametrize("ct", [MERGE, STRATEGIC, JSON_PATCH], ids=["merge", "strategic", "json"])
@pytest.mark.parametrize(
    "document",
    [b"{", b"{'x': 1}", b"not json", b"{} {}"],
    ids=["truncated", "single-quotes", "word", "two-documents"],
)
async def test_a_malformed_patch_body_is_400(conform: Conform, ct: str, document: bytes) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.patch(t.cm("a"), document, ct=ct)

    await conform(scenario)


@pytest.mark.parametrize("ct", [MERGE, STRATEGIC, JSON_PATCH], ids=["merge", "strategic", "json"])
async def test_a_patch_of_the_wrong_json_type_is_400(conform: Conform, ct: str) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.patch(t.cm("a"), [1] if ct != JSON_PATCH else {"op": "add"}, ct=ct)

    await conform(scenario)


async def test_a_malformed_create_body_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), b"{", record=lambda d: d if isinstance(d, str) else d.get("code"))

    await conform(scenario)


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
async def test_a_number_json_does_not_have_is_400(conform: Conform, constant: bytes) -> None:
    """Python's decoder takes ``NaN`` and ``Infinity``; JSON, and Go's decoder, do not."""

    async def scenario(t: Target) -> None:
        widget = b'{"apiVersion":"%s/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"n":%s}}'
        await t.post(t.widgets(), widget % (GROUP.encode(), constant))
        configmap = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},'
        configmap += b'"data":{"x":%s}}'
        await t.post(t.cm(), configmap % (b"a", constant))
        await t.post(t.cm(), _cm("b"))
        await t.patch(t.cm("b"), b'{"data":{"x":%s}}' % constant)
        apply = "application/apply-patch+yaml"  # YAML: the word is a string there
        manager = {"fieldManager": "m"}
        await t.patch(t.cm("c"), configmap % (b"c", constant), ct=apply, params=manager)
        await t.get(t.cm("b"))

    await conform(scenario)
