"""Watches against the real control plane: resume across restarts, relist after 410, stalls.

RELIABILITY.md §5 rows 1 (API server restart), 6 (a silent stall), 10/11 (410 relists).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.kube.retries import Backoff
from anyop.kube.watch import Watcher, WatchEvent
from anyop.kube.watchstate import WatchPolicy
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

DEADLINE = 60  # seconds; generous, for a slow machine; only reached when something is broken
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", kind="Namespace", namespaced=False)
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
QUICK = WatchPolicy(backoff=Backoff(initial=0.2, cap=2.0), reconnect_pause=0.1)


def admin(plane: LocalControlPlane) -> ConnectionInfo:
    return ConnectionInfo(
        plane.server,
        ca_path=str(plane.ca_path),
        certificate_path=str(plane.client_cert_path),
        private_key_path=str(plane.client_key_path),
    )


async def client_of(plane: LocalControlPlane) -> KubeClient:
    vault = Vault()
    await vault.populate({"admin": admin(plane)})
    return open_client(vault)


@pytest.fixture
async def client(anyop_controlplane: LocalControlPlane) -> AsyncIterator[KubeClient]:
    async with await client_of(anyop_controlplane) as client:
        yield client


def settings(**watching: Any) -> OperatorSettings:
    return OperatorSettings.model_validate({"watching": watching})


class View:
    """The engine's side: every dispatched event, and the objects they add up to."""

    def __init__(self, block_on: str | None = None) -> None:
        self.events: list[WatchEvent] = []
        self.objects: dict[str, str] = {}  # uid -> resourceVersion
        self.block_on = block_on
        self.blocked = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, event: WatchEvent) -> None:
        self.events.append(event)
        metadata = event.object["metadata"]
        if event.type == "DELETED":
            self.objects.pop(metadata["uid"], None)
        else:
            self.objects[metadata["uid"]] = metadata["resourceVersion"]
        if event.type == "MODIFIED" and metadata["name"] == self.block_on:
            self.blocked.set()
            await self.release.wait()

    def seen(self, kind: str, name: str, *, listed: bool = False, synthetic: bool = False) -> bool:
        return any(
            (e.type, e.object["metadata"]["name"], e.listed, e.synthetic)
            == (kind, name, listed, synthetic)
            for e in self.events
        )

    def versions(self) -> set[tuple[str, str]]:
        return {
            (e.object["metadata"]["name"], e.object["metadata"]["resourceVersion"])
            for e in self.events
        }

    async def wait_for(self, condition: Any) -> None:
        with anyio.move_on_after(DEADLINE):
            while not condition():
                await anyio.sleep(0.05)
            return
        raise AssertionError(f"not met within {DEADLINE} s; the events seen: {self.describe()}")

    def describe(self) -> str:
        return ", ".join(
            f"{e.type} {e.object['metadata']['name']}@{e.object['metadata']['resourceVersion']}"
            + (" (listed)" if e.listed else "")
            + (" (synthetic)" if e.synthetic else "")
            for e in self.events
        )


def kex(name: str) -> dict[str, Any]:
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


async def restart(plane: LocalControlPlane) -> None:
    """Stop the API server, let the watch meet refused connections, start it again."""
    await anyio.to_thread.run_sync(plane.stop_apiserver)
    await anyio.sleep(1)
    plane.start_apiserver()  # in this (main) thread, so that the process is tied to it


async def current(client: KubeClient, resource: Resource, namespace: str) -> dict[str, str]:
    listed = await client.list(resource, namespace=namespace)
    return {item["metadata"]["uid"]: item["metadata"]["resourceVersion"] for item in listed.items}


async def test_changes_are_streamed_with_server_side_selectors(
    client: KubeClient, anyop_namespace: str
) -> None:
    ns = anyop_namespace
    await client.create(CONFIGMAPS, configmap("old", app="x"), namespace=ns)
    await client.create(CONFIGMAPS, configmap("other", app="y"), namespace=ns)
    view = View()
    watcher = Watcher(client, CONFIGMAPS, namespace=ns, label_selector="app=x")
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, view)
        assert [(e.type, e.object["metadata"]["name"], e.listed) for e in view.events] == [
            ("ADDED", "old", True)
        ]
        await client.create(CONFIGMAPS, configmap("new", app="x"), namespace=ns)
        await client.create(CONFIGMAPS, configmap("ignored", app="y"), namespace=ns)
        await client.patch(CONFIGMAPS, {"data": {"a": "1"}}, name="old", namespace=ns)
        await client.delete(CONFIGMAPS, name="new", namespace=ns)
        await view.wait_for(lambda: view.seen("DELETED", "new"))
        tg.cancel_scope.cancel()
    names = [(e.type, e.object["metadata"]["name"]) for e in view.events[1:]]
    assert names == [("ADDED", "new"), ("MODIFIED", "old"), ("DELETED", "new")]
    assert watcher.state.restarts == 0


@pytest.mark.slow
async def test_a_restarted_api_server_loses_nothing(
    client: KubeClient,
    anyop_namespace: str,
    anyop_controlplane: LocalControlPlane,
    kopfexample_crd: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.kube")
    ns = anyop_namespace
    for name in ("ex1", "ex2", "ex3"):
        await client.create(KEX, kex(name), namespace=ns)
    view = View()
    watcher = Watcher(client, KEX, namespace=ns, policy=QUICK)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, view)
        initial = len(view.events)
        await client.create(KEX, kex("ex4"), namespace=ns)
        await client.patch(KEX, {"spec": {"a": 1}}, name="ex1", namespace=ns)
        await view.wait_for(lambda: view.seen("MODIFIED", "ex1"))

        await restart(anyop_controlplane)

        changed = await client.patch(KEX, {"spec": {"a": 2}}, name="ex2", namespace=ns)
        created = await client.create(KEX, kex("ex5"), namespace=ns)
        await client.delete(KEX, name="ex3", namespace=ns)
        expected = await current(client, KEX, ns)
        await view.wait_for(lambda: view.objects == expected)
        tg.cancel_scope.cancel()

    assert ("ex2", changed["metadata"]["resourceVersion"]) in view.versions()
    assert ("ex5", created["metadata"]["resourceVersion"]) in view.versions()
    assert any(e.type == "DELETED" and e.object["metadata"]["name"] == "ex3" for e in view.events)
    streamed = [
        e.object["metadata"]["name"] for e in view.events if e.type == "ADDED" and not e.listed
    ]
    assert len(streamed) == len(set(streamed))  # no duplicate ADDED from the stream
    relisted = [e for e in view.events[initial:] if e.listed]
    relists = [r.message for r in caplog.records if "with a new listing" in r.message]
    assert len(relists) == watcher.state.relists
    assert all(m.startswith("Restarting the watch-stream for ") for m in relists)  # Kopf's
    assert all(("410" in m or "Expired" in m or "too large" in m.lower()) for m in relists)
    assert bool(relisted) == bool(relists)  # listed again only after an expired version
    assert watcher.state.restarts >= 1


@pytest.fixture(scope="module")
def compacting_plane() -> Iterator[LocalControlPlane]:
    """A control plane of our own that forgets old resourceVersions within seconds."""
    flags = ["--watch-cache=false", "--etcd-compaction-interval=2s"]
    with LocalControlPlane(apiserver_flags=flags) as plane:
        yield plane


async def wait_until_compacted(plane: LocalControlPlane, path: str, version: str) -> None:
    """Poll a watch from ``version`` until the API server says it is too old."""
    async with httpx.AsyncClient(base_url=plane.server, verify=plane.ssl_context()) as http:
        with anyio.fail_after(DEADLINE):
            while True:
                params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "1"}
                answer = await http.get(path, params=params, timeout=10)
                if answer.status_code == 410 or b'"code":410' in answer.content:
                    return
                await anyio.sleep(0.5)


@pytest.mark.slow
async def test_an_expired_version_relists_and_reports_what_vanished(
    compacting_plane: LocalControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.kube")
    ns = f"relist-{time.monotonic_ns()}"
    async with await client_of(compacting_plane) as client:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        for name in ("keep", "gone"):
            await client.create(CONFIGMAPS, configmap(name), namespace=ns)
        view = View(block_on="keep")
        # The stream that delivers the blocking event must not deliver the deletion below. The
        # server ends it after 2 s; a starved server may be late, so the watcher's own 2 s limit
        # ends it too, before another line is read (even one already in the socket).
        timeouts = settings(server_timeout=2, client_timeout=2)
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, settings=timeouts)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            await client.patch(CONFIGMAPS, {"data": {"a": "1"}}, name="keep", namespace=ns)
            with anyio.fail_after(DEADLINE):
                await view.blocked.wait()  # the engine is busy; the stream stays unread
            version = watcher.state.resource_version
            assert version is not None
            await anyio.sleep(3)  # past both 2 s limits of the stream
            await client.delete(CONFIGMAPS, name="gone", namespace=ns)
            for index in range(5):
                await client.patch(
                    CONFIGMAPS, {"data": {"a": str(index)}}, name="keep", namespace=ns
                )
            await wait_until_compacted(compacting_plane, CONFIGMAPS.get_url(namespace=ns), version)
            view.release.set()
            await view.wait_for(lambda: view.seen("DELETED", "gone", synthetic=True))
            expected = await current(client, CONFIGMAPS, ns)
            await view.wait_for(lambda: view.objects == expected)
            tg.cancel_scope.cancel()
    assert watcher.state.relists >= 1
    restarting = f"Restarting the watch-stream for {CONFIGMAPS!r} with a new listing: "
    assert any(r.getMessage().startswith(restarting) for r in caplog.records)  # Kopf's line
    assert view.seen("ADDED", "keep", listed=True)
    tombstone = next(e.object for e in view.events if e.synthetic)
    assert tombstone["metadata"]["name"] == "gone"
    assert tombstone["metadata"]["namespace"] == ns
    assert tombstone["metadata"]["uid"]


@pytest.mark.slow
async def test_a_silent_api_server_is_noticed_and_the_watch_recovers(
    client: KubeClient,
    anyop_namespace: str,
    anyop_controlplane: LocalControlPlane,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop.kube")
    ns = anyop_namespace
    await client.create(CONFIGMAPS, configmap("beat"), namespace=ns)
    view = View()
    watcher = Watcher(
        client, CONFIGMAPS, namespace=ns, settings=settings(inactivity_timeout=2), policy=QUICK
    )
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, view)
        for index in range(8):  # events flow: no false alarms
            await client.patch(CONFIGMAPS, {"data": {"i": str(index)}}, name="beat", namespace=ns)
            await anyio.sleep(0.4)
        assert watcher.state.restarts == 0

        anyop_controlplane.pause_apiserver()
        try:
            await view.wait_for(lambda: watcher.state.restarts >= 2)
        finally:
            anyop_controlplane.resume_apiserver()
        assert "was silent for 2s; watching it again." in caplog.text

        patched = await client.patch(CONFIGMAPS, {"data": {"i": "last"}}, name="beat", namespace=ns)
        version = patched["metadata"]["resourceVersion"]
        await view.wait_for(lambda: view.objects.get(patched["metadata"]["uid"]) == version)
        tg.cancel_scope.cancel()
    assert watcher.state.relists == 0
    assert len({e.object["metadata"]["resourceVersion"] for e in view.events}) == len(view.events)


async def test_a_streaming_list_comes_from_the_real_server_without_a_list_request(
    client: KubeClient, anyop_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = anyop_namespace
    for name in ("s1", "s2", "s3"):
        await client.create(CONFIGMAPS, configmap(name), namespace=ns)

    def no_pages(*_: Any, **__: Any) -> Any:
        raise AssertionError("a page was listed")

    monkeypatch.setattr(client, "list_pages", no_pages)
    view = View()
    watcher = Watcher(client, CONFIGMAPS, namespace=ns, settings=settings(streaming_lists=True))
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, view)
        assert all(view.seen("ADDED", name, listed=True) for name in ("s1", "s2", "s3"))
        await client.create(CONFIGMAPS, configmap("s4"), namespace=ns)
        await view.wait_for(lambda: view.seen("ADDED", "s4"))
        tg.cancel_scope.cancel()
    assert watcher.state.relists == 0
    ours = [e for e in view.events if e.object["metadata"]["name"] != "kube-root-ca.crt"]
    assert len(ours) == 4  # the namespace's own kube-root-ca.crt (the cluster's) aside
