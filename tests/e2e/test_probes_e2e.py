"""/healthz and /readyz of a running operator, on the real control plane."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE

import anyop.on as on
from anyop.engine.operator.launch import operator
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def operating(
    registry: OperatorRegistry, namespace: str, settings: OperatorSettings | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The operator with probes on a free port, and a client for them."""
    port = free_port()
    stop = anyio.Event()
    async with (
        anyio.create_task_group() as tg,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=DEADLINE) as probes,
    ):
        tg.start_soon(
            lambda: operator(
                registry=registry,
                settings=settings or OperatorSettings(),
                namespaces=[namespace],
                stop_flag=stop,
                liveness_endpoint=f"http://127.0.0.1:{port}/healthz",
            )
        )
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    await probes.get("/readyz")
                    break
                except httpx.TransportError:
                    await anyio.sleep(0.05)
        yield probes
        stop.set()


async def until_status(probes: httpx.AsyncClient, path: str, code: int) -> httpx.Response:
    with anyio.fail_after(DEADLINE):
        while (response := await probes.get(path)).status_code != code:
            await anyio.sleep(0.1)
    return response


async def test_readiness_waits_for_startup_and_liveness_reports_probes(
    anyop_namespace: str,
) -> None:
    registry = OperatorRegistry()
    release = anyio.Event()
    calls: list[int] = []

    @on.startup(registry=registry)
    async def slow_start(**_: Any) -> None:
        await release.wait()

    @on.probe(registry=registry, id="answer")
    def answer(**_: Any) -> int:
        calls.append(1)
        return 42

    @on.probe(registry=registry, id="broken")
    async def broken(**_: Any) -> None:
        raise RuntimeError("no luck")

    async with operating(registry, anyop_namespace) as probes:
        assert (await probes.get("/readyz")).status_code == 503  # the startup is not over
        health = await probes.get("/healthz")
        assert health.status_code == 500  # a probe fails; the endpoint answers anyway
        assert health.json() == {"answer": 42, "broken": {"error": "RuntimeError: no luck"}}
        await probes.get("/healthz")
        assert calls == [1]  # cached for 10 s, as in Kopf
        release.set()
        ready = await until_status(probes, "/readyz", 200)
        assert ready.json() == {"ready": True}
        assert (await probes.get("/nope")).status_code == 404


async def test_liveness_fails_while_the_api_server_is_unreachable(
    anyop_namespace: str, anyop_controlplane: LocalControlPlane
) -> None:
    registry = OperatorRegistry()

    @on.event("kopfexamples", registry=registry)
    async def seen(**_: Any) -> None:
        pass

    settings = OperatorSettings.model_validate(
        {"watching": {"inactivity_timeout": 1.0, "connect_timeout": 0.5}}
    )
    async with operating(registry, anyop_namespace, settings) as probes:
        await until_status(probes, "/readyz", 200)
        assert (await probes.get("/healthz")).status_code == 200
        anyop_controlplane.pause_apiserver()
        try:
            failing = await until_status(probes, "/healthz", 500)
        finally:
            anyop_controlplane.resume_apiserver()
        problems = failing.json()["anyop"]["watches"]
        assert list(problems) == [f"kopfexamples.v1.kopf.dev in {anyop_namespace}"]
        await until_status(probes, "/healthz", 200)  # it recovers on its own
