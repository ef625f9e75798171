"""/metrics of a running operator on the real control plane: counts match what was handled.

These scrape plain HTTP metrics (``metrics_insecure``): what they count is the point here; who
may read them is tested in test_metrics_secure_e2e.py.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.test_engine_e2e import DEADLINE, create, url, wait_for
from tests.e2e.test_probes_e2e import free_port, operating

import anyop.on as on
from anyop import TemporaryError
from anyop.engine.operator.launch import operator
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape by name and labels (parsing fails on a malformed exposition)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], metric: str,
          **labels: str) -> float:  # fmt: skip
    """The sum over the samples of a metric whose labels include these."""
    return sum(
        v for (n, ls), v in scraped.items() if n == metric and set(labels.items()) <= set(ls)
    )


@contextlib.asynccontextmanager
async def scraping(registry: OperatorRegistry, namespace: str) -> AsyncIterator[httpx.AsyncClient]:
    """The operator with its metrics over plain HTTP on a free port, and a client for them."""
    url = f"http://127.0.0.1:{free_port()}"
    settings = OperatorSettings()
    settings.server.metrics_endpoint = f"{url}/metrics"
    settings.server.metrics_insecure = True
    async with (
        operating(registry, namespace, settings),
        httpx.AsyncClient(base_url=url, timeout=DEADLINE) as scraper,
    ):
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    await scraper.get("/metrics")
                    break
                except httpx.TransportError:
                    await anyio.sleep(0.05)
        yield scraper


async def test_metrics_count_cycles_handler_runs_retries_requests_and_live_objects(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    attempts: list[int] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        return "done"

    @on.create("kopfexamples", registry=registry, id="flaky_fn")
    async def flaky_fn(name: str, **_: Any) -> str:
        if name == "m-flaky" and not attempts:
            attempts.append(1)
            raise TemporaryError("not yet", delay=0.1)
        return "done"

    @on.timer("kopfexamples", registry=registry, id="tick", interval=30)
    async def tick(**_: Any) -> None:
        pass

    async with scraping(registry, anyop_namespace) as scraper:
        for name in ("m-1", "m-2", "m-flaky"):
            await create(api, anyop_namespace, name)
        for name in ("m-1", "m-2", "m-flaky"):
            path = url(anyop_namespace, name)
            await wait_for(api, path, lambda b: "flaky_fn" in b.get("status", {}))
        with anyio.fail_after(DEADLINE):
            while True:
                response = await scraper.get("/metrics")
                scraped = samples(response.text)
                if value(scraped, "anyop_daemons", kind="timer") == 3:
                    break
                await anyio.sleep(0.1)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    resource = "kopfexamples.v1.kopf.dev"
    runs = "anyop_handler_runs_total"
    assert value(scraped, runs, handler="create_fn", outcome="success") == 3
    assert value(scraped, runs, handler="flaky_fn", outcome="success") == 3
    assert value(scraped, runs, handler="flaky_fn", outcome="retry") == 1
    assert value(scraped, "workqueue_retries_total", name=resource) == 1
    assert value(scraped, "anyop_handler_duration_seconds_count", handler="create_fn") == 3
    assert value(scraped, "controller_runtime_reconcile_total", controller=resource) >= 3
    assert value(scraped, "controller_runtime_reconcile_errors_total") == 0
    assert value(scraped, "rest_client_requests_total", method="PATCH", code="200") >= 3
    assert value(scraped, "rest_client_requests_total", method="GET", code="200") >= 1
    assert value(scraped, "anyop_objects", controller=resource, namespace=anyop_namespace) == 3
    assert value(scraped, "anyop_watch_streaming", controller=resource) == 1
    assert value(scraped, "anyop_watch_last_event_age_seconds", controller=resource) < DEADLINE


async def test_the_probes_serve_health_only(anyop_namespace: str) -> None:
    registry = OperatorRegistry()
    on.event("kopfexamples", registry=registry, id="seen")(lambda **_: None)
    async with operating(registry, anyop_namespace) as probes:
        health = await probes.get("/healthz")
        metrics = await probes.get("/metrics")
    assert health.status_code == 200
    assert metrics.status_code == 404
    assert "rest_client" not in metrics.text


async def test_metrics_are_served_on_an_address_of_their_own(anyop_namespace: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    stop = anyio.Event()
    registry = OperatorRegistry()
    insecure = OperatorSettings.model_validate({"server": {"metrics_insecure": True}})
    on.event("kopfexamples", registry=registry, id="seen")(lambda **_: None)
    async with (
        anyio.create_task_group() as tg,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=DEADLINE) as client,
    ):
        tg.start_soon(lambda: operator(
            registry=registry, namespaces=[anyop_namespace], stop_flag=stop,
            metrics_endpoint=f"http://127.0.0.1:{port}/metrics", settings=insecure,
        ))  # fmt: skip
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    response = await client.get("/metrics")
                    if "anyop_watch_streaming{" in response.text:
                        break
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.05)
        missing = await client.get("/healthz")
        stop.set()
    assert response.status_code == 200
    assert missing.status_code == 404
    assert value(samples(response.text), "rest_client_requests_total") >= 1
