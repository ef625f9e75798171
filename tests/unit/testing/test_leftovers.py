"""Releasing the finalizers that a stopped operator left in a test's namespace: the custom
objects in it lose them, built-in ones and other namespaces keep theirs (FakeCluster; the real
control plane's namespace going away is ``tests/e2e/test_leftovers_e2e.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anyop.testing import FakeCluster
from anyop.testing.leftovers import CRDS, RELEASE, release_finalizers_async, release_requests

pytestmark = pytest.mark.anyio

CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
KEX = "/apis/kopf.dev/v1/namespaces/{}/kopfexamples"
HELD = ["anyop.dev/finalizer", "example.com/other"]


def kex(name: str, finalizers: list[str]) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name, "finalizers": finalizers}}  # fmt: skip


async def test_custom_objects_in_the_namespace_lose_their_finalizers_and_nothing_else() -> None:
    fake = FakeCluster()
    fake.apply(CRD)
    for ns in ("mine", "theirs"):
        fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    async with fake.client(timeout=30) as api:
        for ns in ("mine", "theirs"):
            for name, finalizers in (("held", HELD), ("free", [])):
                (await api.post(KEX.format(ns), json=kex(name, finalizers))).raise_for_status()
        held_map = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "held", "finalizers": HELD}}  # fmt: skip
        (await api.post("/api/v1/namespaces/mine/configmaps", json=held_map)).raise_for_status()

        await release_finalizers_async(api, "mine")

        async def finalizers(path: str) -> list[str]:
            metadata = (await api.get(path)).raise_for_status().json()["metadata"]
            return list(metadata.get("finalizers") or [])

        assert await finalizers(KEX.format("mine") + "/held") == []
        assert await finalizers(KEX.format("theirs") + "/held") == HELD
        assert await finalizers("/api/v1/namespaces/mine/configmaps/held") == HELD


def test_a_kind_that_cannot_be_listed_is_skipped_and_the_others_released() -> None:
    crds = {"items": [
        {"spec": {"group": "a.dev", "scope": "Namespaced", "names": {"plural": "as"},
                  "versions": [{"name": "v1", "served": True, "storage": False},
                               {"name": "v2", "served": True, "storage": True}]}},
        {"spec": {"group": "b.dev", "scope": "Namespaced", "names": {"plural": "bs"},
                  "versions": [{"name": "v1", "served": True, "storage": True}]}},
        {"spec": {"group": "c.dev", "scope": "Cluster", "names": {"plural": "cs"},
                  "versions": [{"name": "v1", "served": True, "storage": True}]}},
    ]}  # fmt: skip
    listing = {"items": [{"metadata": {"name": "x", "finalizers": ["f"]}},
                         {"metadata": {"name": "y"}}]}  # fmt: skip
    steps = release_requests("ns")
    made = [next(steps)]
    made.append(steps.send((200, crds)))
    made.append(steps.send((403, None)))  # a.dev: forbidden
    made.append(steps.send((200, listing)))
    with pytest.raises(StopIteration):
        steps.send((200, {}))
    assert made == [
        ("GET", CRDS, None),
        ("GET", "/apis/a.dev/v2/namespaces/ns/as", None),
        ("GET", "/apis/b.dev/v1/namespaces/ns/bs", None),
        ("PATCH", "/apis/b.dev/v1/namespaces/ns/bs/x", RELEASE),
    ]


def test_without_the_custom_resource_definitions_nothing_is_asked() -> None:
    steps = release_requests("ns")
    assert next(steps) == ("GET", CRDS, None)
    with pytest.raises(StopIteration):
        steps.send((403, None))
