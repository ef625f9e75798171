"""Network faults between a watch and the real API server, through a misbehaving TCP proxy.

RELIABILITY.md §5 rows 6 (blackhole), 7 (RST every few seconds), 8 (slow bytes, no false
inactivity trips) and 9 (a stream cut mid-line). Requests go to the proxy; TLS passes through.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from tests.e2e.test_watch_e2e import CONFIGMAPS, DEADLINE, QUICK, View, admin, configmap, settings

from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.watch import Watcher
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.proxy import FaultyProxy

CLUSTER_CA = "kube-root-ca.crt"
"""The ConfigMap the cluster's controllers put into every namespace."""

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def proxied(
    plane: LocalControlPlane, options: OperatorSettings | None = None
) -> AsyncIterator[tuple[FaultyProxy, KubeClient]]:
    """A proxy to the API server, and a client that talks through it."""
    target = urllib.parse.urlsplit(plane.server)
    proxy = FaultyProxy(target.hostname or "127.0.0.1", target.port or 443)
    async with anyio.create_task_group() as tg:
        port = await tg.start(proxy.serve)
        vault = Vault()
        through = dataclasses.replace(admin(plane), server=f"https://127.0.0.1:{port}")
        await vault.populate({"admin": through})
        async with open_client(vault, settings=options) as client:
            yield proxy, client
        tg.cancel_scope.cancel()


async def test_resets_every_few_seconds_rewatch_from_the_version_without_relisting(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    ns, view = anyop_namespace, View()
    async with proxied(anyop_controlplane) as (proxy, client):
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, policy=QUICK)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            for index in range(4):
                await client.create(CONFIGMAPS, configmap(f"cm-{index}"), namespace=ns)
                await anyio.sleep(0.5)
                proxy.reset_all()
                await anyio.sleep(0.5)
            await view.wait_for(lambda: all(view.seen("ADDED", f"cm-{i}") for i in range(4)))
            tg.cancel_scope.cancel()
    assert watcher.state.restarts >= 4
    assert watcher.state.relists == 0
    added = [e.object["metadata"]["name"] for e in view.events if e.type == "ADDED"]
    added = [name for name in added if name != CLUSTER_CA]  # the cluster's own ConfigMap
    assert sorted(added) == [f"cm-{i}" for i in range(4)]  # each exactly once, none lost


async def test_a_blackhole_is_detected_within_the_inactivity_deadline_and_nothing_is_lost(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    ns, view = anyop_namespace, View()
    options = settings(inactivity_timeout=2.0)
    async with proxied(anyop_controlplane, options) as (proxy, client):
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, settings=options, policy=QUICK)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            proxy.blackhole()
            started = anyio.current_time()
            async with await direct_client(anyop_controlplane) as direct:
                await direct.create(CONFIGMAPS, configmap("during"), namespace=ns)
            await view.wait_for(lambda: watcher.state.restarts >= 1)
            detected = anyio.current_time() - started
            proxy.restore()
            await view.wait_for(lambda: view.seen("ADDED", "during"))
            tg.cancel_scope.cancel()
    assert 1.5 <= detected < 10, detected
    assert watcher.state.relists == 0


async def test_slow_bytes_are_not_mistaken_for_a_stall(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    ns, view = anyop_namespace, View()
    options = settings(inactivity_timeout=1.5)
    async with proxied(anyop_controlplane, options) as (proxy, client):
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, settings=options, policy=QUICK)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            proxy.delay = 0.3  # every chunk late, but well within the deadline
            for index in range(8):
                await client.create(CONFIGMAPS, configmap(f"slow-{index}"), namespace=ns)
                await anyio.sleep(0.4)
            await view.wait_for(lambda: all(view.seen("ADDED", f"slow-{i}") for i in range(8)))
            tg.cancel_scope.cancel()
    assert watcher.state.restarts == 0


async def test_a_stream_cut_mid_line_resumes_without_half_or_duplicate_events(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    ns, view = anyop_namespace, View()
    async with proxied(anyop_controlplane) as (proxy, client):
        for index in range(3):
            body = configmap(f"big-{index}")
            body["data"] = {"blob": "x" * 3000}
            await client.create(CONFIGMAPS, body, namespace=ns)
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, policy=QUICK)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            proxy.cut_after(6000)  # new connections die mid-event: TLS records, then JSON
            proxy.reset_all()
            async with await direct_client(anyop_controlplane) as direct:
                for index in range(3):
                    patch = {"data": {"blob": "y" * 3000 + str(index)}}
                    await direct.patch(CONFIGMAPS, patch, name=f"big-{index}", namespace=ns)
            await anyio.sleep(2)  # some attempts through the cutting proxy
            proxy.restore()
            await view.wait_for(lambda: sum(e.type == "MODIFIED" for e in view.events) >= 3)
            tg.cancel_scope.cancel()
    assert proxy.connections >= 3
    modified = [e for e in view.events if e.type == "MODIFIED"]
    versions = [e.object["metadata"]["resourceVersion"] for e in modified]
    assert len(versions) == len(set(versions)) == 3  # no half event, no duplicate
    assert all(e.object["data"]["blob"].startswith("y" * 3000) for e in modified)


async def direct_client(plane: LocalControlPlane) -> KubeClient:
    vault = Vault()
    await vault.populate({"admin": admin(plane)})
    return open_client(vault)
