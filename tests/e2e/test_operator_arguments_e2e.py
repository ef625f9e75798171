"""``anyop.operator()`` honours Kopf's keyword arguments, or refuses them with a reason."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import threading
import warnings
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, url, wait_for

import anyop
import anyop.on as on
from anyop.engine.operator.launch import operator
from anyop.errors import ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]


@asynccontextmanager
async def operating(registry: OperatorRegistry, **kwargs: Any) -> AsyncIterator[None]:
    """``operator()`` in the test's task group, from readiness to the block's end."""
    stop, ready = anyio.Event(), anyio.Event()
    settings = kwargs.pop("settings", None) or anyop.OperatorSettings()
    settings.peering.standalone = kwargs.pop("standalone", True)
    run = functools.partial(
        operator, registry=registry, settings=settings, stop_flag=stop, ready_flag=ready, **kwargs
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        yield
        stop.set()


@pytest.mark.parametrize("name", ["indexers", "memories", "insights", "_command"])
async def test_kopfs_internal_containers_are_refused_with_what_to_use_instead(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"operator\({name}=\.\.\.\) is Kopf's internal state"):
        await operator(registry=OperatorRegistry(), clusterwide=True, **{name: object()})


async def test_an_unknown_argument_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="namespacez"):
        await operator(registry=OperatorRegistry(), namespacez=["x"])  # type: ignore[call-arg]


async def test_without_namespaces_the_whole_cluster_is_served_after_a_warning(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "seen")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with operating(registry):
            await create(api, anyop_namespace, "anywhere")
            path = url(anyop_namespace, "anywhere")
            await wait_for(api, path, lambda b: b.get("status", {}).get("create_fn") == "seen")
    assert [w.category for w in caught if "cluster" in str(w.message)] == [FutureWarning]


async def test_the_lifecycle_orders_this_operators_handlers(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    order: list[str] = []
    for name in ("first", "second", "third"):
        on.create("kopfexamples", registry=registry, id=name)(
            lambda _tag=name, **_: order.append(_tag)
        )

    def backwards(handlers: Sequence[Any], **_: Any) -> list[Any]:
        return list(reversed(handlers))

    async with operating(registry, namespaces=[anyop_namespace], lifecycle=backwards):
        await create(api, anyop_namespace, "ordered")
        with anyio.fail_after(DEADLINE):
            while len(order) < 3:
                await anyio.sleep(0.05)
    assert order == ["third", "second", "first"]
    assert anyop.get_default_lifecycle() is not backwards


@pytest.mark.usefixtures("peering_crds")
async def test_the_identity_is_this_operators_name_among_its_peers(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=json.dumps(body))

    def peers() -> dict[str, Any]:
        args = ("get", "-n", anyop_namespace, "anyoppeering", "default", "-o", "json")
        return dict(json.loads(kubectl(anyop_controlplane, *args)).get("status") or {})

    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: None)
    async with operating(
        registry, namespaces=[anyop_namespace], identity="the-named-one", standalone=False
    ):
        with anyio.fail_after(DEADLINE):
            while "the-named-one" not in await anyio.to_thread.run_sync(peers):
                await anyio.sleep(0.1)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_run_takes_its_backend_from_the_settings(anyop_namespace: str, backend: str) -> None:
    import sniffio

    registry = OperatorRegistry()
    seen: list[str] = []
    stop = threading.Event()

    @on.startup(registry=registry)
    async def startup(**_: Any) -> None:
        seen.append(sniffio.current_async_library())
        stop.set()

    settings = anyop.OperatorSettings()
    settings.server.backend = backend  # type: ignore[assignment]
    settings.peering.standalone = True
    anyop.run(registry=registry, settings=settings, namespaces=[anyop_namespace], stop_flag=stop)
    assert seen == [backend]


def test_run_runs_in_the_asyncio_loop_it_is_given(anyop_namespace: str) -> None:
    """Kopf's custom event loops: ``run(loop=uvloop.EventLoopPolicy().new_event_loop())``."""
    import asyncio

    registry = OperatorRegistry()
    loop = asyncio.new_event_loop()
    seen: list[bool] = []
    stop = concurrent.futures.Future[None]()

    @on.startup(registry=registry)
    async def startup(**_: Any) -> None:
        seen.append(asyncio.get_running_loop() is loop)
        stop.set_result(None)

    settings = anyop.OperatorSettings()
    settings.peering.standalone = True
    try:
        anyop.run(
            loop=loop, registry=registry, settings=settings, namespaces=[anyop_namespace],
            stop_flag=stop,
        )  # fmt: skip
        assert not loop.is_closed()
    finally:
        loop.close()
    assert seen == [True]
