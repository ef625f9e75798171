"""@anyop.reconcile on the real control plane: read-your-own-writes with a slow watch, own
status writes, errors, the finalizer, and Kopf's handlers, daemons and indexes beside it."""

from __future__ import annotations

import math
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, MERGE, delete_and_wait, running, url, wait_for
from tests.e2e.test_metrics_e2e import samples, scraping, value

import anyop
import anyop.on as on
from anyop.engine.reconciling import controller as controller_module
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watch import Watcher, WatchEvent
from anyop.settings import OperatorSettings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

WATCH_DELAY = 2.0


class DelayedWatcher(Watcher):
    """A fault: the owned resources' watch events (not the listing) arrive 2 s late, in order."""

    async def run(  # type: ignore[override]
        self, handle: Any, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        send, receive = anyio.create_memory_object_stream[tuple[float, WatchEvent]](math.inf)

        async def pump() -> None:
            async for due, event in receive:
                await anyio.sleep_until(due)
                await handle(event)

        async def delayed(event: WatchEvent) -> None:
            if event.listed:
                await handle(event)
            else:
                send.send_nowait((anyio.current_time() + WATCH_DELAY, event))

        with send, receive:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await super().run(delayed, task_status=task_status)


async def make(api: httpx.AsyncClient, namespace: str, name: str, **spec: Any) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}
    (await api.post(url(namespace), json={**body, "spec": spec})).raise_for_status()


async def children_of(api: httpx.AsyncClient, namespace: str, label: str) -> list[dict[str, Any]]:
    found = await api.get(f"/api/v1/namespaces/{namespace}/configmaps?labelSelector={label}")
    found.raise_for_status()
    return list(found.json()["items"])


@pytest.mark.parametrize("writes_timeout", [10.0, 0.5], ids=["waits", "reads-live"])
async def test_a_slow_watch_never_makes_a_replicaset_like_reconciler_create_too_many(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    writes_timeout: float,
) -> None:
    monkeypatch.setattr(controller_module, "Watcher", DelayedWatcher)
    registry, created, seen = OperatorRegistry(), [], []
    settings = OperatorSettings()
    settings.reconciling.writes_timeout = writes_timeout  # shorter than the delay: a live read

    @anyop.reconcile("kopfexamples", owns=["configmaps"], labels={"rs": "yes"}, registry=registry)
    async def replicas(spec: Any, children: Any, api: Any, **_: Any) -> anyop.Requeue:
        seen.append(len(children["configmaps"]))
        for _missing in range(spec["replicas"] - len(children["configmaps"])):
            child = await api.create("configmaps", {"metadata": {"generateName": "rs-"}})
            created.append(child["metadata"]["name"])
        return anyop.Requeue(after=0.1)  # called again and again while the watch lags

    async with running(registry, anyop_namespace, settings):
        await make(api, anyop_namespace, "rs", replicas=5)
        with anyio.fail_after(DEADLINE):
            while 5 not in seen:
                await anyio.sleep(0.05)
        await anyio.sleep(WATCH_DELAY + 1)  # every event there is has come meanwhile
    assert len(created) == 5
    assert len(await children_of(api, anyop_namespace, "rs=yes")) == 5
    assert all(count in (0, 5) for count in seen), seen  # never a stale view of its own writes


async def test_own_status_writes_call_nothing_but_spec_changes_do(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, calls = OperatorRegistry(), []

    @anyop.reconcile("kopfexamples", registry=registry)
    def mirror(spec: Any, patch: anyop.Patch, **_: Any) -> None:
        calls.append(spec["n"])
        patch.status["mirrored"] = spec["n"]

    async with running(registry, anyop_namespace):
        await make(api, anyop_namespace, "m", n=1)
        path = url(anyop_namespace, "m")
        await wait_for(api, path, lambda b: b.get("status", {}).get("mirrored") == 1)
        await anyio.sleep(1)  # the echo of the status write has come, and called nothing
        assert calls == [1]
        await api.patch(path, json={"spec": {"n": 2}}, headers=MERGE)
        await wait_for(api, path, lambda b: b.get("status", {}).get("mirrored") == 2)
        await anyio.sleep(1)
    assert calls == [1, 2]


async def test_errors_back_off_and_a_permanent_error_waits_for_a_change(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry, calls = OperatorRegistry(), []
    settings = OperatorSettings()
    settings.reconciling.backoff_base = 0.05

    @anyop.reconcile("kopfexamples", registry=registry, id="flaky")
    def flaky(spec: Any, retry: int, **_: Any) -> None:
        calls.append((spec["mode"], retry))
        if spec["mode"] == "crash" and retry < 2:
            raise RuntimeError("boom")
        if spec["mode"] == "stop":
            raise anyop.PermanentError("no way")

    async with running(registry, anyop_namespace, settings):
        await make(api, anyop_namespace, "f", mode="crash")
        with anyio.fail_after(DEADLINE):
            while ("crash", 2) not in calls:
                await anyio.sleep(0.05)
        await api.patch(url(anyop_namespace, "f"), json={"spec": {"mode": "stop"}}, headers=MERGE)
        with anyio.fail_after(DEADLINE):
            while not any(mode == "stop" for mode, _ in calls):
                await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # no retry of a permanent error
    assert calls[:3] == [("crash", 0), ("crash", 1), ("crash", 2)]
    assert [mode for mode, _ in calls[3:]] == ["stop"]
    messages = caplog.messages
    assert "Reconciler 'flaky' failed with an exception. Will retry." in messages
    assert "Reconciler 'flaky' failed permanently: no way" in messages


async def test_a_finalizer_holds_the_object_until_a_call_while_deleting_succeeds(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, deleting = OperatorRegistry(), []

    @anyop.reconcile("kopfexamples", owns=["configmaps"], finalizer=True, registry=registry)
    async def cleanup(meta: Any, children: Any, api: Any, **_: Any) -> None:
        if meta.get("deletionTimestamp"):
            deleting.append(len(children["configmaps"]))
            for child in children["configmaps"]:
                await api.delete("configmaps", child["metadata"]["name"])
        elif not children["configmaps"]:
            await api.create("configmaps", {"metadata": {"name": "fin-child"}})

    async with running(registry, anyop_namespace):
        await make(api, anyop_namespace, "fin")
        path = url(anyop_namespace, "fin")
        body = await wait_for(api, path, lambda b: bool(b["metadata"].get("finalizers")))
        assert body["metadata"]["finalizers"] == ["reconcile.anyop.dev/finalizer"]
        await wait_for(api, f"/api/v1/namespaces/{anyop_namespace}/configmaps/fin-child", bool)
        await delete_and_wait(api, anyop_namespace, "fin")
    assert deleting[:1] == [1]
    gone = await api.get(f"/api/v1/namespaces/{anyop_namespace}/configmaps/fin-child")
    assert gone.status_code == 404  # deleted by the call, not by a garbage collector


async def test_a_reconciler_runs_beside_handlers_daemons_timers_and_indexes(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, seen, daemons, ticks = OperatorRegistry(), [], [], []

    @on.index("kopfexamples", registry=registry)
    def by_name(name: str, **_: Any) -> dict[str, str]:
        return {name: name}

    @on.create("kopfexamples", registry=registry, id="created")
    def created(**_: Any) -> str:
        return "created"

    @on.daemon("kopfexamples", registry=registry)
    async def beside(name: str, stopped: Any, **_: Any) -> None:
        daemons.append(name)
        await stopped.wait()

    @on.timer("kopfexamples", interval=0.2, registry=registry)
    def tick(name: str, **_: Any) -> None:
        ticks.append(name)

    @anyop.reconcile("kopfexamples", owns=["configmaps"], registry=registry)
    async def both(name: str, by_name: anyop.Index, memo: Any, children: Any, **_: Any) -> None:
        memo.calls = getattr(memo, "calls", 0) + 1
        seen.append((name, sorted(map(str, by_name)), len(children["configmaps"])))

    async with running(registry, anyop_namespace):
        await make(api, anyop_namespace, "all")
        path = url(anyop_namespace, "all")
        await wait_for(api, path, lambda b: b.get("status", {}).get("created") == "created")
        with anyio.fail_after(DEADLINE):
            while not (seen and daemons and ticks):
                await anyio.sleep(0.05)
        await delete_and_wait(api, anyop_namespace, "all")
    assert seen[0] == ("all", ["all"], 0)


async def test_metrics_count_the_calls_by_result_under_controller_runtimes_names(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry, calls = OperatorRegistry(), []

    @anyop.reconcile("kopfexamples", registry=registry, id="counted")
    def counted(spec: Any, **_: Any) -> anyop.Requeue | None:
        calls.append(spec)
        if len(calls) == 1:
            raise anyop.TemporaryError("once", delay=0.1)
        return anyop.Requeue(after=60) if len(calls) == 2 else None

    controller = "kopfexamples.v1.kopf.dev/counted"
    async with scraping(registry, anyop_namespace) as scraper:
        await make(api, anyop_namespace, "counted", n=1)
        with anyio.fail_after(DEADLINE):
            while len(calls) < 2:
                await anyio.sleep(0.05)
        await api.patch(url(anyop_namespace, "counted"), json={"spec": {"n": 2}}, headers=MERGE)
        with anyio.fail_after(DEADLINE):
            while True:
                scraped = samples((await scraper.get("/metrics")).text)
                if value(scraped, "controller_runtime_reconcile_total", result="success"):
                    break
                await anyio.sleep(0.1)
    total = "controller_runtime_reconcile_total"
    assert value(scraped, total, controller=controller, result="error") == 1
    assert value(scraped, total, controller=controller, result="requeue_after") == 1
    assert value(scraped, total, controller=controller, result="success") == 1
    errors = "controller_runtime_reconcile_errors_total"
    assert value(scraped, errors, controller=controller) == 1
    seconds = "controller_runtime_reconcile_time_seconds_count"
    assert value(scraped, seconds, controller=controller) == 3
    assert any(n == "workqueue_depth" and ("name", controller) in ls for n, ls in scraped)


async def test_a_child_deleted_right_after_its_creation_is_put_back_without_a_timeout(
    api: httpx.AsyncClient, anyop_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch has shown its creation, then its deletion: the next call waits for nothing."""
    registry, settings = OperatorRegistry(), OperatorSettings()
    settings.reconciling.writes_timeout = 3600  # a wait for it would outlast the test's DEADLINE

    @anyop.reconcile(
        "kopfexamples", owns=["configmaps"], labels={"fresh": "yes"}, registry=registry
    )
    async def keep_one(children: Any, api: Any, **_: Any) -> None:
        if not children["configmaps"]:
            await api.create("configmaps", {"metadata": {"generateName": "fresh-"}})

    base = f"/api/v1/namespaces/{anyop_namespace}/configmaps"
    took: list[float] = []

    async def new_child(gone: set[str]) -> str:
        with anyio.fail_after(DEADLINE):
            while True:
                found = await children_of(api, anyop_namespace, "fresh=yes")
                if names := {child["metadata"]["name"] for child in found} - gone:
                    (name,) = names
                    return name
                await anyio.sleep(0.01)

    async with running(registry, anyop_namespace, settings):
        await make(api, anyop_namespace, "fresh")
        gone: set[str] = set()
        name = await new_child(gone)
        for _ in range(20):
            (await api.delete(f"{base}/{name}")).raise_for_status()  # right after its creation
            gone.add(name)
            started = anyio.current_time()
            name = await new_child(gone)
            took.append(anyio.current_time() - started)
    took.sort()
    print(f"put back in {took[len(took) // 2]:.3f}s (p50), {took[-1]:.3f}s (max) of {len(took)}")
