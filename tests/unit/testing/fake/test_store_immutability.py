"""The store takes objects over without copying them, and stores a new object at each write:
no write changes a stored object in place. Generated schedules of writes over HTTP (creates,
merge, strategic merge and JSON patches, server-side applies, replaces, status writes,
deletions with finalizers) check that every object the store ever held stays as it was stored,
and that the history gives each change's object as it was then."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from anyop.testing.fake import FakeCluster

NAMES = st.sampled_from(["a", "b"])
VALUES = st.sampled_from(["1", "2", "x"])
KINDS = st.sampled_from(["configmaps", "deployments", "pods", "services"])
PATHS = {
    "configmaps": "/api/v1/namespaces/default/configmaps",
    "deployments": "/apis/apps/v1/namespaces/default/deployments",
    "pods": "/api/v1/namespaces/default/pods",
    "services": "/api/v1/namespaces/default/services",
}
RESOURCES = [("", "configmaps"), ("apps", "deployments"), ("", "pods"), ("", "services")]


def _object(kind: str, name: str, value: str) -> dict[str, Any]:
    if kind == "configmaps":
        metadata = {"name": name, "labels": {"v": value}}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": value}}
    container = {"name": "m", "image": value, "ports": [{"containerPort": 80}]}
    pod = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    if kind == "pods":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, **pod}
    if kind == "services":
        ports = [{"port": 80, "name": "http"}, {"port": 81, "name": value}]
        spec = {"selector": {"app": name}, "ports": ports}
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod}}  # fmt: skip


def _patch(kind: str, how: str, value: str) -> tuple[str, Any]:
    if how == "json":
        return "application/json-patch+json", [
            {"op": "add", "path": "/metadata/labels/j", "value": value}
        ]
    if how == "finalizer":
        return "application/merge-patch+json", {"metadata": {"finalizers": ["x/y"]}}
    if how == "unfinalize":
        return "application/merge-patch+json", {"metadata": {"finalizers": None}}
    if kind == "pods" and how == "strategic":
        toleration = {"key": value, "operator": "Exists", "effect": "NoSchedule"}
        return "application/strategic-merge-patch+json", {"spec": {"tolerations": [toleration]}}
    if kind == "services" and how == "strategic":
        return "application/strategic-merge-patch+json", {"spec": {"ports": [{"port": 82}]}}
    if kind == "deployments" and how == "strategic":
        containers = [{"name": "m", "image": value}, {"name": value, "image": "z"}]
        return "application/strategic-merge-patch+json", {
            "spec": {"template": {"spec": {"containers": containers}}}
        }
    return "application/merge-patch+json", {"metadata": {"labels": {"v": value}}}


PATCHES = ["merge", "strategic", "json", "finalizer", "unfinalize"]
OPERATIONS = st.one_of(
    st.tuples(st.just("create"), KINDS, NAMES, VALUES),
    st.tuples(st.just("patch"), KINDS, NAMES, VALUES, st.sampled_from(PATCHES)),
    st.tuples(st.just("apply"), KINDS, NAMES, VALUES),
    st.tuples(st.just("replace"), KINDS, NAMES, VALUES),
    st.tuples(st.just("status"), st.sampled_from(["deployments", "pods"]), NAMES, VALUES),
    st.tuples(st.just("delete"), KINDS, NAMES, VALUES),
)


async def _run(api: httpx.AsyncClient, operation: tuple[Any, ...]) -> None:
    what, kind, name, value = operation[:4]
    url, item = PATHS[kind], f"{PATHS[kind]}/{name}"
    match what:
        case "create":
            await api.post(url, json=_object(kind, name, value))
        case "patch":
            content_type, patch = _patch(kind, operation[4], value)
            await api.patch(item, content=json.dumps(patch), headers={"Content-Type": content_type})
        case "apply":
            await api.patch(item, params={"fieldManager": "t", "force": "true"},
                            content=json.dumps(_object(kind, name, value)),
                            headers={"Content-Type": "application/apply-patch+yaml"})  # fmt: skip
        case "replace":
            found = await api.get(item)
            if found.status_code == 200:
                body = _object(kind, name, value)
                body["metadata"]["resourceVersion"] = found.json()["metadata"]["resourceVersion"]
                await api.put(item, json=body)
        case "status":
            conditions = [{"type": value, "status": "True"}]
            status = {"status": {"conditions": conditions}}
            await api.patch(f"{item}/status", json=status,
                            headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
        case "delete":
            await api.delete(item)


@settings(max_examples=100, deadline=None)
@given(st.lists(OPERATIONS, min_size=1, max_size=25))
def test_no_write_changes_a_stored_object_in_place(operations: list[tuple[Any, ...]]) -> None:
    async def main() -> None:
        fake = FakeCluster(controllers=False)
        seen: dict[int, tuple[Any, str]] = {}  # every stored object, as it was stored
        start = fake.store.rv
        async with fake.client() as api:
            for operation in operations:
                await _run(api, operation)
                for resource in RESOURCES:
                    for obj in fake.store.objects[resource].values():
                        seen.setdefault(id(obj), (obj, json.dumps(obj)))
                for obj, stored in seen.values():
                    assert json.dumps(obj) == stored, operation
        for resource in RESOURCES:
            changes = list(fake.store.history.since(start, resource))
            latest = {change.key: change.obj for change in changes if change.type != "DELETED"}
            for key, obj in fake.store.objects[resource].items():
                assert latest.get(key, obj) == obj  # the history's last object is the stored one

    anyio.run(main)
