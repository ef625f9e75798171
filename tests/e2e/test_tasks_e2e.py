"""Kopf's manual orchestration: ``spawn_tasks()`` and ``run_tasks()`` in a plain asyncio program."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import trio
from tests.e2e.test_engine_e2e import url

import anyop
from anyop.errors import ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")


def test_the_spawned_tasks_run_the_operator_until_it_is_stopped(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    anyop.on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "spawned")
    settings = anyop.OperatorSettings()
    settings.peering.standalone = True

    async def main() -> dict[str, Any]:
        stop, ready = asyncio.Event(), asyncio.Event()
        tasks = await anyop.spawn_tasks(
            registry=registry, settings=settings, namespaces=[anyop_namespace],
            stop_flag=stop, ready_flag=ready,
        )  # fmt: skip
        assert all(isinstance(task, asyncio.Task) for task in tasks)
        ctx = anyop_controlplane.ssl_context()
        async with httpx.AsyncClient(base_url=anyop_controlplane.server, verify=ctx) as api:

            async def use_it() -> dict[str, Any]:
                await asyncio.wait_for(ready.wait(), 30)
                body = {
                    "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                    "metadata": {"name": "spawned"}, "spec": {},
                }  # fmt: skip
                (await api.post(url(anyop_namespace), json=body)).raise_for_status()
                for _ in range(300):
                    found = (await api.get(url(anyop_namespace, "spawned"))).json()
                    if "create_fn" in found.get("status", {}):
                        stop.set()
                        return dict(found)
                    await asyncio.sleep(0.1)
                raise AssertionError("not handled")

            found, _ = await asyncio.gather(use_it(), anyop.run_tasks(tasks))
        assert all(task.done() for task in tasks)
        return found

    found = asyncio.run(main())
    assert found["status"]["create_fn"] == "spawned"


def test_on_trio_the_tasks_are_refused_with_what_to_use_instead() -> None:
    async def main() -> None:
        with pytest.raises(ConfigError, match=r"on trio, run anyop\.operator"):
            await anyop.spawn_tasks(registry=OperatorRegistry(), clusterwide=True)
        with pytest.raises(ConfigError, match="on trio"):
            await anyop.run_tasks([])

    trio.run(main)
