"""`await anyop.serve(registry)` is the whole operator, in the caller's task group.

Startup handlers run before the first watch, the probes answer while it runs, the handlers handle,
the cleanup handlers run at the end, and nothing of it (no task, no thread) outlives the call.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, url, wait_for

import anyop
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.testing.controlplane import free_port

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


async def test_serve_runs_the_activities_probes_and_handlers_and_leaves_nothing_behind(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    steps: list[str] = []

    @on.startup(registry=registry)
    async def start(memo: anyop.Memo, **_: Any) -> None:
        steps.append("startup")
        memo.greeting = "hello"

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(memo: anyop.Memo, **_: Any) -> str:
        steps.append("create")
        return str(memo.greeting)

    @on.probe(registry=registry, id="steps")
    def probe(**_: Any) -> int:
        return len(steps)

    @on.cleanup(registry=registry)
    async def clean(**_: Any) -> None:
        steps.append("cleanup")

    port = free_port()
    stop, ready = anyio.Event(), anyio.Event()
    tasks_before = len(anyio.get_running_tasks())
    threads_before = set(threading.enumerate())
    operator = functools.partial(
        anyop.serve, registry, namespaces=[anyop_namespace], stop_event=stop, ready_event=ready,
        liveness_endpoint=f"http://127.0.0.1:{port}/healthz",
    )  # fmt: skip
    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        assert steps == ["startup"]
        await create(api, anyop_namespace, "served")
        path = url(anyop_namespace, "served")
        found = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probes:
            health = (await probes.get("/healthz")).json()
            assert (await probes.get("/readyz")).status_code == 200
        stop.set()
    assert found["status"]["create_fn"] == "hello"
    assert health["steps"] >= 1
    assert steps == ["startup", "create", "cleanup"]
    assert len(anyio.get_running_tasks()) == tasks_before
    with anyio.move_on_after(DEADLINE):  # its threads end with serve()
        while leftover := new_threads(threads_before):
            await anyio.sleep(0.05)
    assert not leftover, [t.name for t in leftover]


def new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started since, but Trio's own cache (the test runner's, not the operator's)."""
    started = set(threading.enumerate()) - before
    return [t for t in started if t.is_alive() and not t.name.startswith("Trio thread")]


async def test_serve_without_namespaces_serves_the_cluster_after_a_warning(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "seen")
    stop, ready = anyio.Event(), anyio.Event()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(anyop.serve, registry, stop_event=stop,
                                            ready_event=ready))  # fmt: skip
            with anyio.fail_after(DEADLINE):
                await ready.wait()
            await create(api, anyop_namespace, "anywhere")
            path = url(anyop_namespace, "anywhere")
            await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
            stop.set()
    futures = [w for w in caught if issubclass(w.category, FutureWarning)]
    assert [str(w.message) for w in futures] == [
        "Absence of either namespaces or the cluster-wide flag: serving the whole cluster. "
        "Pass clusterwide=True (or namespaces=[...]) to silence this."
    ]


async def test_two_operators_with_two_registries_run_in_one_process(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    """Kopf's embedding of several operators: each serves its own registry, side by side."""
    first, second = OperatorRegistry(), OperatorRegistry()
    on.create("kopfexamples", registry=first, id="first_fn")(lambda **_: "first")
    on.create("kopfexamples", registry=second, id="second_fn")(lambda **_: "second")
    settings = anyop.OperatorSettings()
    settings.persistence.finalizer = "second.example.com/finalizer"  # two operators, two keys
    settings.persistence.progress_storage = anyop.AnnotationsProgressStorage(prefix="second.dev")
    settings.persistence.diffbase_storage = anyop.AnnotationsDiffBaseStorage(prefix="second.dev")
    stop = anyio.Event()
    readies = [anyio.Event(), anyio.Event()]
    async with anyio.create_task_group() as tg:
        for registry, ready, options in ((first, readies[0], {}),
                                         (second, readies[1], {"settings": settings})):  # fmt: skip
            tg.start_soon(functools.partial(
                anyop.serve, registry, namespaces=[anyop_namespace], stop_event=stop,
                ready_event=ready, **options,
            ))  # fmt: skip
        with anyio.fail_after(DEADLINE):
            for ready in readies:
                await ready.wait()
        await create(api, anyop_namespace, "shared")
        path = url(anyop_namespace, "shared")
        found = await wait_for(
            api, path, lambda b: {"first_fn", "second_fn"} <= set(b.get("status", {}))
        )
        stop.set()
    assert found["status"]["first_fn"] == "first"
    assert found["status"]["second_fn"] == "second"
