"""The engine under load and bad state, on the real control plane.

Bounded concurrency across objects, a blocked sync handler that blocks nobody else, corrupt stored
state, results that cannot be stored, and retries that survive an operator restart.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log

import anyop.on as on
from anyop.engine.cycle.reconciler import DEFERRING_MESSAGE
from anyop.errors import TemporaryError
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.storage.diffbase import AnnotationsDiffBaseStorage
from anyop.storage.progress import AnnotationsProgressStorage

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


async def test_worker_limit_bounds_how_many_objects_are_handled_at_once(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    running_now: list[str] = []
    peak = 0
    done: set[str] = set()

    @on.resume("kopfexamples", registry=registry, id="slow_fn")
    @on.create("kopfexamples", registry=registry, id="slow_fn")
    async def slow_fn(name: str, **_: Any) -> None:
        nonlocal peak
        running_now.append(name)
        peak = max(peak, len(running_now))
        await anyio.sleep(0.2)
        running_now.remove(name)
        done.add(name)

    names = [f"lim{i}" for i in range(6)]
    for name in names:  # all exist before the operator starts: the listing dispatches them at once
        await create(api, anyop_namespace, name)
    settings = OperatorSettings.model_validate({"queueing": {"worker_limit": 2}})
    async with running(registry, anyop_namespace, settings):
        with anyio.fail_after(DEADLINE):
            while done != set(names):
                await anyio.sleep(0.05)
    assert peak == 2


async def test_a_blocked_sync_handler_does_not_delay_twenty_other_objects(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    release = threading.Event()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(name: str, **_: Any) -> str:
        if name == "blocker":
            assert release.wait(DEADLINE), "never released"
        return name

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "blocker")
        others = [f"other{i}" for i in range(20)]
        for name in others:
            await create(api, anyop_namespace, name)
        for name in others:
            await wait_for(
                api, url(anyop_namespace, name), lambda b: "create_fn" in b.get("status", {})
            )
        blocked = (await api.get(url(anyop_namespace, "blocker"))).json()
        assert "create_fn" not in blocked.get("status", {})  # still blocked: the others overtook it
        release.set()
        await wait_for(
            api, url(anyop_namespace, "blocker"), lambda b: "create_fn" in b.get("status", {})
        )


async def test_a_corrupt_annotation_is_reported_overwritten_and_never_crash_loops(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: calls.append("create"))
    on.update("kopfexamples", registry=registry, id="update_fn")(lambda **_: calls.append("update"))
    key = "anyop.dev/last-handled-configuration"
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": "corrupt", "annotations": {key: "{oops, not json"}},
        "spec": {"field": "value"},
    }
    (await api.post(url(anyop_namespace), json=body)).raise_for_status()
    settings = OperatorSettings.model_validate(
        {
            "persistence": {
                "diffbase_storage": AnnotationsDiffBaseStorage(),
                "progress_storage": AnnotationsProgressStorage(),
            }
        }
    )
    path = url(anyop_namespace, "corrupt")
    async with running(registry, anyop_namespace, settings):

        def repaired(b: dict[str, Any]) -> bool:
            text = b["metadata"].get("annotations", {}).get(key, "")
            return text.startswith("{") and "oops" not in text

        stored = await wait_for(api, path, repaired)
        essence = json.loads(stored["metadata"]["annotations"][key])
        assert essence["spec"] == {"field": "value"}
        change = {"spec": {"field": "changed"}}
        (await api.patch(path, json=change, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    assert calls == ["update"]  # unknown state is not a creation; the change is an update
    assert any("not valid JSON" in message for message in caplog.messages)


async def test_a_result_that_is_not_json_fails_the_handler_and_the_object_goes_on(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> object:
        calls.append("create")
        return {"lock": threading.Lock()}

    on.update("kopfexamples", registry=registry, id="update_fn")(lambda **_: calls.append("update"))
    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "nonjson")
        await wait_for_log(caplog, "Creation is processed: 0 succeeded; 1 failed.")
        path = url(anyop_namespace, "nonjson")
        (await api.patch(path, json={"spec": {"field": "x"}}, headers=MERGE)).raise_for_status()
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    assert calls == ["create", "update"]  # failed for good: not retried, and the worker lives on
    assert any(
        message.startswith("Handler 'create_fn' failed permanently: Its result cannot be stored")
        and "not JSON serializable" in message
        and "a dict was returned" in message
        for message in caplog.messages
    )


async def test_retries_survive_an_operator_restart(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    attempts: list[tuple[int, Any]] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(retry: int, started: Any, **_: Any) -> str:
        attempts.append((retry, started))
        if retry == 0:
            raise TemporaryError("not yet", delay=2.0)
        return "done"

    path = url(anyop_namespace, "restarted")

    def stored_retry(b: dict[str, Any]) -> bool:
        record = b.get("status", {}).get("anyop", {}).get("progress", {}).get("create_fn", {})
        return bool(record.get("retries") == 1)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "restarted")
        await wait_for(api, path, stored_retry)
    async with running(registry, anyop_namespace):
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert body["status"]["create_fn"] == "done"
    assert [retry for retry, _ in attempts] == [0, 1]
    assert attempts[0][1] == attempts[1][1]  # the same `started`, read back from the object


# -- backpressure ---------------------------------------------------------------------------------

SLOW_API = {"networking": {"qps": 15, "burst": 1}}  # the API server takes 15 requests a second


async def handled_times(
    api: httpx.AsyncClient, namespace: str, names: list[str], settings: OperatorSettings
) -> list[float]:
    """Run an operator with a create handler over objects that exist before it starts.

    Returns the times of the handler calls, once every object's status is written.
    """
    registry = OperatorRegistry()
    called: dict[str, float] = {}

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> dict[str, str]:
        called.setdefault(name, anyio.current_time())
        return {"message": "hello"}

    for name in names:
        await create(api, namespace, name)
    async with running(registry, namespace, settings):
        with anyio.fail_after(DEADLINE):
            while True:
                items = (await api.get(url(namespace))).json()["items"]
                if all("create_fn" in (item.get("status") or {}) for item in items):
                    break
                await anyio.sleep(0.1)
    assert set(called) == set(names)
    return sorted(called.values())


async def test_backpressure_starts_handling_new_objects_as_the_api_server_takes_writes(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    names = [f"bp{i}" for i in range(30)]
    settings = OperatorSettings.model_validate(
        {**SLOW_API, "queueing": {"max_requests_in_flight": 2}}
    )
    times = await handled_times(api, anyop_namespace, names, settings)
    # 30 writes at 15 a second: the last handler runs only after most of the others' writes.
    assert times[-1] - times[0] >= 1.0


async def test_without_backpressure_every_listed_object_is_handled_at_once(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    names = [f"nobp{i}" for i in range(30)]
    settings = OperatorSettings.model_validate(
        {**SLOW_API, "queueing": {"max_requests_in_flight": None}}
    )
    times = await handled_times(api, anyop_namespace, names, settings)
    assert times[-1] - times[0] < 0.5  # all handlers first, then the writes wait (Kopf's way)


async def test_backpressure_holds_up_no_handler_that_takes_long_without_the_api(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    running_now: set[str] = set()
    peak = 0

    @on.create("kopfexamples", registry=registry, id="slow_fn")
    async def slow_fn(name: str, **_: Any) -> dict[str, bool]:
        nonlocal peak
        running_now.add(name)
        peak = max(peak, len(running_now))
        await anyio.sleep(1)
        running_now.discard(name)
        return {"done": True}

    names = [f"slow{i}" for i in range(8)]
    for name in names:
        await create(api, anyop_namespace, name)
    settings = OperatorSettings.model_validate({"queueing": {"max_requests_in_flight": 1}})
    async with running(registry, anyop_namespace, settings):
        for name in names:
            await wait_for(
                api, url(anyop_namespace, name), lambda b: "slow_fn" in b.get("status", {})
            )
    assert peak == len(names)


async def test_a_fresh_change_of_a_known_object_goes_ahead_of_a_backlog_of_new_ones(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    order: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> dict[str, str]:
        order.append(f"create {name}")
        return {"message": "hello"}

    @on.update("kopfexamples", registry=registry, id="update_fn", field="spec.field")
    async def update_fn(name: str, **_: Any) -> None:
        order.append(f"update {name}")

    queueing = {"max_requests_in_flight": 1, "idle_timeout": 0}  # no worker waits for the change
    settings = OperatorSettings.model_validate({**SLOW_API, "queueing": queueing})
    async with running(registry, anyop_namespace, settings):
        await create(api, anyop_namespace, "known")
        await wait_for(
            api, url(anyop_namespace, "known"), lambda b: "create_fn" in b.get("status", {})
        )
        backlog = [f"new{i}" for i in range(25)]
        for name in backlog:
            await create(api, anyop_namespace, name)
        with anyio.fail_after(DEADLINE):
            while len(order) < 3:  # the backlog has started to drain
                await anyio.sleep(0.01)
        patch = {"spec": {"field": "changed"}}
        response = await api.patch(url(anyop_namespace, "known"), json=patch, headers=MERGE)
        response.raise_for_status()
        with anyio.fail_after(DEADLINE):
            while "update known" not in order:
                await anyio.sleep(0.05)
        # The backlog of 25 writes takes about 1.7 s at 15 a second; the change did not wait.
        assert sum(entry.startswith("create new") for entry in order) < len(backlog)


async def test_daemons_start_after_their_finalizers_which_wait_their_turn(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    finalized_at_start: dict[str, bool] = {}

    @on.daemon("kopfexamples", registry=registry, id="daemon_fn")
    async def daemon_fn(name: str, body: Any, stopped: Any, **_: Any) -> None:
        finalized_at_start.setdefault(name, bool(body["metadata"].get("finalizers")))
        await stopped.wait()

    names = [f"dm{i}" for i in range(30)]
    for name in names:
        await create(api, anyop_namespace, name)
    settings = OperatorSettings.model_validate(
        {**SLOW_API, "queueing": {"max_requests_in_flight": 2}}
    )
    async with running(registry, anyop_namespace, settings):
        with anyio.fail_after(DEADLINE):
            while len(finalized_at_start) < len(names):
                await anyio.sleep(0.05)
        # 30 finalizers at 15 writes a second: the cycles did not wait to write them, and no
        # daemon ran on an object that could have been deleted past its delete handlers.
        assert DEFERRING_MESSAGE in caplog.text
        assert finalized_at_start == dict.fromkeys(names, True)
        items = (await api.get(url(anyop_namespace))).json()["items"]
    assert len(items) == len(names)
