"""Conformance: paths around the resources, as kube-apiserver routes them: slashes, names with
odd characters, methods the resources do not take, the core API's own 404s, and the server's
``/version`` and health endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

CASES = [
    ("GET", "/api/v1/namespaces/{ns}/configmaps/"),
    ("GET", "/api/v1/namespaces/{ns}/configmaps/a/"),
    ("GET", "/api/v1//namespaces/{ns}/configmaps/a"),
    ("GET", "/api/v1/namespaces/{ns}/configmaps/a%2Fb"),
    ("GET", "/api/v1/namespaces/{ns}/configmaps/A"),
    ("GET", "/api/v1/namespaces/{ns}/configmaps/a/b/c"),
    ("HEAD", "/api/v1/namespaces/{ns}/configmaps/a"),
    ("OPTIONS", "/api/v1/namespaces/{ns}/configmaps/a"),
    ("GET", "/apis/"),
    ("GET", "/api/v2"),
    ("GET", "/apis/apps"),
    ("GET", "/apis/apps/"),
    ("GET", "/api/v1/namespaces/{ns}"),
    ("GET", "/api/v1/namespaces/{ns}/"),
    ("POST", "/api/v1/namespaces/{ns}/configmaps/a"),
    ("PUT", "/api/v1/namespaces/{ns}/configmaps"),
    ("PATCH", "/api/v1/namespaces/{ns}/configmaps"),
    ("GET", "/api/v1/configmaps/a"),
    ("GET", "/api/v1/namespaces/{ns}/configmaps/a/status"),
    ("GET", "/version"),
    ("GET", "/healthz"),
    ("GET", "/livez"),
    ("GET", "/readyz"),
]


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return {key: document.get(key) for key in ("code", "reason", "message", "details")}
    if isinstance(document, dict) and "gitVersion" in document:
        return {key: value for key, value in document.items() if key != "buildDate"}
    if isinstance(document, dict):
        return {"kind": document.get("kind"), "keys": sorted(document)[:6]}
    return document[:80] if isinstance(document, str) else document


@pytest.mark.parametrize("case", CASES, ids=[f"{method} {path}" for method, path in CASES])
async def test_a_path_is_routed_as_kube_apiserver_routes_it(
    conform: Conform, case: tuple[str, str]
) -> None:
    method, path = case

    async def scenario(t: Target) -> None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
              "data": {"x": "1"}}  # fmt: skip
        await t.post(t.cm(), cm)
        body = cm if method in ("POST", "PUT", "PATCH") else None
        ct = "application/merge-patch+json" if method == "PATCH" else "application/json"
        await t.call(method, path.format(ns=t.namespace), body, ct=ct, record=_shown)

    await conform(scenario)
