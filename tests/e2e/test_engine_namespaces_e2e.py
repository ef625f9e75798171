"""Namespace discovery against the real control plane: globs serve namespaces as they appear."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import anyio
import httpx
import pytest

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

DEADLINE = 30  # seconds; only reached when something is broken


def url(namespace: str, name: str | None = None) -> str:
    base = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    return f"{base}/{name}" if name else base


async def create_namespace(api: httpx.AsyncClient, name: str) -> None:
    response = await api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    response.raise_for_status()


async def create_example(api: httpx.AsyncClient, namespace: str, name: str) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}
    response = await api.post(url(namespace), json={**body, "spec": {"field": "value"}})
    response.raise_for_status()


async def status_of(api: httpx.AsyncClient, namespace: str, name: str) -> dict[str, Any]:
    response = await api.get(url(namespace, name))
    response.raise_for_status()
    status: dict[str, Any] = response.json().get("status", {})
    return status


async def test_a_namespace_created_after_start_is_served_if_it_matches(
    api: httpx.AsyncClient,
) -> None:
    uid = uuid.uuid4().hex[:8]
    served, unserved = f"nsglob-{uid}-a", f"nsother-{uid}-a"
    registry = OperatorRegistry()
    handled: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(namespace: str, **_: Any) -> dict[str, str]:
        handled.append(namespace)
        return {"message": "hello"}

    stop, ready = anyio.Event(), anyio.Event()
    operator = functools.partial(
        serve, registry=registry, namespaces=[f"nsglob-{uid}-*"], stop_event=stop, ready_event=ready
    )
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(operator)
            with anyio.fail_after(DEADLINE):
                await ready.wait()
            await create_namespace(api, unserved)
            await create_example(api, unserved, "ex1")
            await create_namespace(api, served)
            await create_example(api, served, "ex1")
            with anyio.fail_after(DEADLINE):
                while "create_fn" not in await status_of(api, served, "ex1"):
                    await anyio.sleep(0.1)
            stop.set()
        assert handled == [served]
        assert "create_fn" not in await status_of(api, unserved, "ex1")
    finally:
        for name in (served, unserved):
            await api.delete(f"/api/v1/namespaces/{name}")
