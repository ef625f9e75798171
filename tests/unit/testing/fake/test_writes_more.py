"""FakeCluster's server-side apply, scale subresource, deletecollection, finalize, dry runs and
field selectors, without a real API server (tests/conformance compares them with one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from anyop.testing.fake import FakeCluster

EXAMPLE_CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"

pytestmark = pytest.mark.anyio

CMS = "/api/v1/namespaces/ns/configmaps"
SPROCKETS = "/apis/x.dev/v1/namespaces/ns/sprockets"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "sprockets.x.dev"},
    "spec": {"group": "x.dev", "scope": "Namespaced",
             "names": {"kind": "Sprocket", "plural": "sprockets"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                      "statusReplicasPath": ".status.replicas"}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}  # fmt: skip


def _fake() -> tuple[FakeCluster, httpx.AsyncClient]:
    fake = FakeCluster()
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    fake.create(CRD)
    return fake, fake.client()


def _cm(name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}}


async def test_apply_creates_then_replaces_the_managers_fields_and_needs_a_manager() -> None:
    _, api = _fake()
    async with api:
        params = {"fieldManager": "me"}
        made = await api.patch(f"{CMS}/a", json={**_cm("a"), "data": {"x": "1"}},
                               params=params, headers=APPLY)  # fmt: skip
        merged = await api.patch(f"{CMS}/a", json={**_cm("a"), "data": {"y": "2"}},
                                 params=params, headers=APPLY)  # fmt: skip
        unmanaged = await api.patch(f"{CMS}/a", json=_cm("a"), headers=APPLY)
        wrong = await api.patch(f"{CMS}/a", json={**_cm("a"), "kind": "Secret"},
                                params=params, headers=APPLY)  # fmt: skip
    assert made.status_code == 201
    # "x" was the manager's alone: applying without it removes it.
    assert (merged.status_code, merged.json()["data"]) == (200, {"y": "2"})
    assert unmanaged.status_code == 422
    assert wrong.status_code == 400


async def test_an_applied_empty_map_stays_its_managers_and_fields_in_it_conflict() -> None:
    """Go does not store an empty ``data``: fields another manager applies into it add the map
    again, which changes what the first one owns (409), unless forced."""
    _, api = _fake()
    async with api:
        await api.patch(f"{CMS}/a", json={**_cm("a"), "data": {}}, params={"fieldManager": "m1"},
                        headers=APPLY)  # fmt: skip
        body = {**_cm("a"), "data": {"x": "1"}}
        refused = await api.patch(f"{CMS}/a", json=body, params={"fieldManager": "m2"},
                                  headers=APPLY)  # fmt: skip
        forced = await api.patch(f"{CMS}/a", json=body, headers=APPLY,
                                 params={"fieldManager": "m2", "force": "true"})  # fmt: skip
    assert refused.status_code == 409
    assert refused.json()["message"] == 'Apply failed with 1 conflict: conflict with "m1": .data'
    assert (forced.status_code, forced.json()["data"]) == (200, {"x": "1"})


async def test_the_scale_subresource_reads_and_writes_the_replicas_path() -> None:
    _, api = _fake()
    body = {"apiVersion": "x.dev/v1", "kind": "Sprocket", "metadata": {"name": "s"},
            "spec": {"replicas": 1}}  # fmt: skip
    async with api:
        (await api.post(SPROCKETS, json=body)).raise_for_status()
        scale = (await api.get(f"{SPROCKETS}/s/scale")).json()
        patched = await api.patch(f"{SPROCKETS}/s/scale", json={"spec": {"replicas": 4}},
                                  headers=MERGE)  # fmt: skip
        latest = patched.json()
        negative = await api.put(f"{SPROCKETS}/s/scale", json={**latest, "spec": {"replicas": -1}})
        stored = (await api.get(f"{SPROCKETS}/s")).json()
    assert (scale["kind"], scale["spec"], scale["status"]) == ("Scale", {"replicas": 1},
                                                               {"replicas": 0})  # fmt: skip
    assert patched.json()["spec"] == {"replicas": 4}
    assert negative.status_code == 422
    assert stored["spec"] == {"replicas": 4}


async def test_deletecollection_deletes_the_selected_objects_and_finalizers_keep_theirs() -> None:
    _, api = _fake()
    async with api:
        await api.post(CMS, json=_cm("a", labels={"x": "1"}))
        await api.post(CMS, json=_cm("b", labels={"x": "1"}, finalizers=["x.dev/f"]))
        await api.post(CMS, json=_cm("c"))
        answer = await api.request("DELETE", CMS, params={"labelSelector": "x=1"})
        left = (await api.get(CMS)).json()["items"]
    assert [item["metadata"]["name"] for item in answer.json()["items"]] == ["a", "b"]
    assert [(i["metadata"]["name"], "deletionTimestamp" in i["metadata"]) for i in left] == [
        ("b", True),
        ("c", False),
        ("kube-root-ca.crt", False),  # every namespace has it, as in a cluster
    ]


async def test_finalize_changes_a_namespaces_spec_finalizers_and_get_is_not_allowed() -> None:
    _, api = _fake()
    async with api:
        namespace = (await api.get("/api/v1/namespaces/ns")).json()
        finalized = await api.put("/api/v1/namespaces/ns/finalize",
                                  json={**namespace, "spec": {"finalizers": []}})  # fmt: skip
        read = await api.get("/api/v1/namespaces/ns/finalize")
    assert finalized.json()["spec"] == {}
    assert read.status_code == 405


async def test_a_dry_run_answers_without_storing_and_events_select_by_their_object() -> None:
    _, api = _fake()
    about = {"name": "kex", "kind": "KopfExample", "namespace": "ns"}
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
             "involvedObject": about, "reason": "Done"}  # fmt: skip
    async with api:
        dry = await api.post(CMS, json=_cm("d"), params={"dryRun": "All"})
        missing = await api.get(f"{CMS}/d")
        await api.post("/api/v1/namespaces/ns/events", json=event)
        selected = await api.get("/api/v1/namespaces/ns/events",
                                 params={"fieldSelector": "involvedObject.name=kex"})  # fmt: skip
        other = await api.get("/api/v1/namespaces/ns/events",
                              params={"fieldSelector": "involvedObject.name=nope"})  # fmt: skip
    assert (dry.status_code, missing.status_code) == (201, 404)
    assert [item["reason"] for item in selected.json()["items"]] == ["Done"]
    assert other.json()["items"] == []


@pytest.mark.parametrize("side", ["given", "answered"])
def test_the_store_shares_nothing_with_the_manifest_it_was_given_nor_with_its_answer(
    side: str,
) -> None:
    """The store takes objects over without copying them inside the fake; where Python code
    gives or gets one (``FakeCluster.create``), it is a copy: of a custom resource too, whose
    spec no decoding rebuilds."""
    fake = FakeCluster(controllers=False)
    fake.apply(EXAMPLE_CRD)
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": "e", "namespace": "default", "labels": {"a": "1"}},
            "spec": {"items": [{"x": 1}], "nested": {"y": 2}}}  # fmt: skip
    created = fake.create(body)
    changed = body if side == "given" else created
    changed["spec"]["items"][0]["x"] = changed["spec"]["nested"]["y"] = "changed"
    changed["metadata"]["labels"]["a"] = "changed"
    stored = fake.store.objects[("kopf.dev", "kopfexamples")][("default", "e")]
    assert stored["spec"] == {"items": [{"x": 1}], "nested": {"y": 2}}
    assert stored["metadata"]["labels"] == {"a": "1"}
