"""Conformance: a request's options (its query) as kube-apiserver reads and checks them before
the body: numbers that do not parse (400), values out of their sets (422 naming the options
kind), resourceVersions, continue tokens, and flags that are true unless ``0`` or ``false``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target

pytestmark = pytest.mark.anyio

CASES: list[tuple[str, dict[str, str]]] = [
    ("POST", {"fieldManager": "m" * 129}),
    ("POST", {"fieldManager": "m" * 128}),
    ("POST", {"dryRun": "bogus"}),
    ("POST", {"dryRun": "all"}),
    ("POST", {"dryRun": "bogus", "fieldValidation": "strict", "fieldManager": "m" * 129}),
    ("POST", {"pretty": "true"}),
    ("DELETE", {"propagationPolicy": "bogus"}),
    ("DELETE", {"gracePeriodSeconds": "-1"}),
    ("DELETE", {"gracePeriodSeconds": "abc"}),
    ("DELETE", {"dryRun": "All"}),
    ("LIST", {"limit": "-1"}),
    ("LIST", {"limit": "abc"}),
    ("LIST", {"limit": "99999999999999999999"}),
    ("LIST", {"resourceVersionMatch": "NotOlderThan"}),
    ("LIST", {"resourceVersionMatch": "Exact", "resourceVersion": "0"}),
    ("LIST", {"resourceVersionMatch": "bogus", "resourceVersion": "1"}),
    ("LIST", {"resourceVersion": "abc"}),
    ("LIST", {"resourceVersion": "-1"}),
    ("LIST", {"labelSelector": "a in (b"}),
    ("LIST", {"labelSelector": "a==b,c!=d"}),
    ("LIST", {"fieldSelector": "spec.nope=1"}),
    ("LIST", {"fieldSelector": "metadata.name==a"}),
    ("LIST", {"continue": "garbage"}),
    ("LIST", {"continue": "not base64!"}),
    ("LIST", {"timeoutSeconds": "abc"}),
    ("LIST", {"sendInitialEvents": "true"}),
    ("LIST", {"resourceVersionMatch": "Exact", "resourceVersion": "1", "continue": "x"}),
    ("LIST", {"watch": "true", "sendInitialEvents": "true"}),
    ("LIST", {"watch": "true", "resourceVersionMatch": "NotOlderThan"}),
    ("LIST", {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "Exact"}),
    ("PATCH", {"force": "true"}),
    ("PATCH", {"force": "false"}),
    ("PATCH", {"fieldValidation": "strict"}),
    ("GET", {"resourceVersion": "abc"}),
]


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return {key: document.get(key) for key in ("code", "reason", "message")}
    if isinstance(document, dict) and "items" in document:
        return {"items": len(document["items"])}
    return "ok" if isinstance(document, dict) else document


@pytest.mark.parametrize("case", CASES, ids=[f"{m} {json.dumps(q)[:60]}" for m, q in CASES])
async def test_options_are_read_and_checked_as_kube_apiserver_does(
    conform: Conform, case: tuple[str, dict[str, str]]
) -> None:
    method, query = case

    async def scenario(t: Target) -> None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
              "data": {"x": "1"}}  # fmt: skip
        if method == "POST":
            await t.post(t.cm(), cm, params=query, record=_shown)
            return
        await t.post(t.cm(), cm)
        if method == "DELETE":
            await t.delete(t.cm("a"), params=query, record=_shown)
        elif method == "LIST":
            await t.get(t.cm(), params=query, record=_shown)
        elif method == "PATCH":
            patch = {"data": {"y": "2"}}
            await t.patch(t.cm("a"), patch, ct=MERGE, params=query, record=_shown)
        else:
            await t.get(t.cm("a"), params=query, record=_shown)

    await conform(scenario)


async def test_a_watch_flag_is_true_unless_false(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for value in ("0", "f", "False", "no", ""):
            await t.get(t.cm(), params={"watch": value, "timeoutSeconds": "1"}, record=_shown)

    await conform(scenario)
