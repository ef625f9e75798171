"""Daemons on the real control plane: spawning, live bodies, stopping, finalizers, restarts.

Timings are short (tenths of seconds); every wait has a deadline that only a bug reaches.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log
from tests.virtual import now

import anyop
import anyop.on as on
from anyop.engine.daemons.stop_flags import DaemonStopped
from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.settings import OperatorSettings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]

MERGE = {"Content-Type": "application/merge-patch+json"}
FINALIZER = "anyop.dev/finalizer"


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


def finalizers(body: dict[str, Any]) -> list[str]:
    return list(body.get("metadata", {}).get("finalizers") or [])


async def until(predicate: Any, deadline: float = DEADLINE) -> None:
    with anyio.fail_after(deadline):
        while not predicate():
            await anyio.sleep(0.02)


async def merge(api: httpx.AsyncClient, path: str, patch: dict[str, Any]) -> None:
    (await api.patch(path, json=patch, headers=MERGE)).raise_for_status()


async def test_daemons_spawn_for_listed_and_created_objects_and_see_live_bodies(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    seen: dict[str, list[Any]] = {}

    @anyop.daemon("kopfexamples", registry=registry, id="watcher")
    async def watcher(
        name: str, spec: anyop.Spec, stopped: DaemonStopped, patch: anyop.Patch, **_: Any
    ) -> dict[str, bool]:
        assert isinstance(stopped, anyop.AsyncDaemonStopped)
        while not stopped:
            fields = seen.setdefault(name, [])
            if not fields or fields[-1] != spec.get("field"):
                fields.append(spec.get("field"))
            if spec.get("field") == "finish":
                patch.status["last"] = "finish"
                return {"finished": True}
            await stopped.wait(0.05)
        return {"finished": False}

    await create(api, anyop_namespace, "listed")
    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "created")
        await until(lambda: "listed" in seen and "created" in seen)
        path = url(anyop_namespace, "created")
        await merge(api, path, {"spec": {"field": "changed"}})
        await until(lambda: seen["created"][-1:] == ["changed"])
        await merge(api, path, {"spec": {"field": "finish"}})
        body = await wait_for(api, path, lambda b: "watcher" in b.get("status", {}))
        assert body["status"]["watcher"] == {"finished": True}
        assert body["status"]["last"] == "finish"
    assert seen["created"] == ["value", "changed", "finish"]
    assert seen["listed"] == ["value"]


async def test_a_daemon_that_returns_is_not_restarted_and_deletion_is_not_held(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    @anyop.daemon("kopfexamples", registry=registry, id="once")
    async def once(name: str, **_: Any) -> None:
        calls.append(name)

    @anyop.daemon("kopfexamples", registry=registry, id="fails")
    def fails(**_: Any) -> None:
        raise PermanentError("no more")

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "once")
        path = url(anyop_namespace, "once")
        await wait_for_log(
            caplog, "Daemon 'once' has exited on its own and will not be retried or restarted."
        )
        await wait_for_log(
            caplog, "Daemon 'fails' has exited on its own and will not be retried or restarted."
        )
        await merge(api, path, {"spec": {"field": "other"}})
        await merge(api, path, {"metadata": {"labels": {"x": "y"}}})
        await anyio.sleep(0.3)
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
    assert calls == ["once"]
    assert "Daemon 'fails' failed permanently: no more" in caplog.messages


async def test_temporary_errors_restart_a_daemon_which_reports_its_retries(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @anyop.daemon("kopfexamples", registry=registry, backoff=0.1, id="flaky")
    async def flaky(retry: int, patch: anyop.Patch, **_: Any) -> dict[str, int]:
        patch.status["message"] = f"Failed {retry} times."
        if retry < 3:
            raise TemporaryError("not yet", delay=0.1)
        if retry < 4:
            raise ValueError("arbitrary")  # retried after backoff=0.1
        patch.status["message"] = "done"
        return {"retries": retry}

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "flaky")
        path = url(anyop_namespace, "flaky")
        messages: list[str] = []
        with anyio.fail_after(DEADLINE):
            while not messages or messages[-1] != "done":
                body = (await api.get(path)).json()
                message = body.get("status", {}).get("message")
                if message and (not messages or messages[-1] != message):
                    messages.append(message)
                await anyio.sleep(0.01)
    assert body["status"]["flaky"] == {"retries": 4}
    order = [f"Failed {n} times." for n in range(4)] + ["done"]
    positions = [order.index(message) for message in messages]
    assert positions == sorted(positions)
    assert len(positions) >= 2  # each attempt was patched


async def test_deletion_stops_daemons_and_releases_the_finalizer_after_they_exit(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    reasons: list[DaemonStoppingReason] = []
    exiting = anyio.Event()

    @anyop.daemon("kopfexamples", registry=registry, id="slow_exit")
    async def slow_exit(stopped: DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        reasons.append(stopped.reason)
        exiting.set()
        await anyio.sleep(0.5)  # the finalizer must be held during this

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "held")
        path = url(anyop_namespace, "held")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        await anyio.sleep(0.2)
        (await api.delete(path)).raise_for_status()
        with anyio.fail_after(DEADLINE):
            await exiting.wait()
        body = (await api.get(path)).json()
        assert FINALIZER in finalizers(body), "released while the daemon was still exiting"
        await wait_for(api, path, lambda b: b == {})
    assert reasons
    assert reasons[0] & DaemonStoppingReason.RESOURCE_DELETED
    assert "Daemon 'slow_exit' has exited gracefully." in caplog.messages


async def test_a_sync_daemon_ignoring_its_flag_is_abandoned_and_the_finalizer_released(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    release = threading.Event()
    started = threading.Event()

    @anyop.daemon(
        "kopfexamples",
        registry=registry,
        cancellation_backoff=0.2,
        cancellation_timeout=0.3,
        id="stubborn",
    )
    def stubborn(stopped: DaemonStopped, **_: Any) -> None:
        assert isinstance(stopped, anyop.SyncDaemonStopped)
        started.set()
        release.wait(DEADLINE)  # ignores the flag

    try:
        async with running(registry, anyop_namespace):
            await create(api, anyop_namespace, "stubborn")
            path = url(anyop_namespace, "stubborn")
            await until(started.is_set)
            # The daemon starts before the finalizer lands (both in the first cycle): a deletion
            # before that would delete the object at once, with no daemon to wait for.
            await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
            t0 = now()
            (await api.delete(path)).raise_for_status()
            with pytest.warns(ResourceWarning, match="Leaving it orphaned"):
                await wait_for(api, path, lambda b: b == {})
            elapsed = now() - t0
    finally:
        release.set()
    assert elapsed < 0.2 + 0.3 + 1.5  # backoff + timeout + the API round trips
    assert "Daemon 'stubborn' did not exit in time. Leaving it orphaned." in caplog.messages


async def test_an_async_daemon_that_swallows_one_cancellation_still_exits(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    swallowed: list[bool] = []
    cancelled = anyio.get_cancelled_exc_class()

    @anyop.daemon("kopfexamples", registry=registry, cancellation_timeout=2.0, id="swallower")
    async def swallower(**_: Any) -> None:
        try:
            await anyio.sleep(DEADLINE)
        except cancelled:
            swallowed.append(True)
        await anyio.sleep(DEADLINE)  # cancelled again: the scope stays cancelled

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "swallow")
        path = url(anyop_namespace, "swallow")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        await anyio.sleep(0.2)
        t0 = now()
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
        elapsed = now() - t0
    assert swallowed == [True]
    assert elapsed < 2.0, "it was abandoned rather than cancelled"
    assert "Daemon 'swallower' is cancelled." in caplog.messages
    assert "Daemon 'swallower' did not exit in time. Leaving it orphaned." not in caplog.messages


async def test_without_a_timeout_the_finalizer_is_kept_while_the_daemon_runs(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    release = anyio.Event()

    @anyop.daemon("kopfexamples", registry=registry, cancellation_polling=0.2, id="patient")
    async def patient(**_: Any) -> None:
        await release.wait()  # ignores its flag, and there is no timeout

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "patient")
        path = url(anyop_namespace, "patient")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        (await api.delete(path)).raise_for_status()
        await wait_for_log(
            caplog, "Daemon 'patient' is still exiting. The next check is in 0.2 seconds."
        )
        body = (await api.get(path)).json()
        assert FINALIZER in finalizers(body)
        release.set()
        await wait_for(api, path, lambda b: b == {})


async def test_deletion_during_the_initial_delay_never_starts_the_daemon(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []
    delays: list[str] = []

    def delay_of(name: str, **_: Any) -> float:
        delays.append(name)
        return DEADLINE

    @anyop.daemon("kopfexamples", registry=registry, initial_delay=delay_of, id="late")
    async def late(name: str, **_: Any) -> None:
        calls.append(name)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "late")
        path = url(anyop_namespace, "late")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        await until(lambda: delays == ["late"])
        t0 = now()
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
        assert now() - t0 < 2.0
    assert calls == []


async def test_filters_stop_daemons_on_mismatch_and_respawn_them_on_match(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    runs: list[str] = []
    reasons: list[DaemonStoppingReason] = []

    @anyop.daemon("kopfexamples", registry=registry, labels={"watched": "yes"}, id="filtered")
    async def filtered(stopped: DaemonStopped, **_: Any) -> None:
        runs.append("start")
        await stopped.wait()
        reasons.append(stopped.reason)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "filtered")
        path = url(anyop_namespace, "filtered")
        await wait_for(api, path, lambda b: bool(b.get("metadata", {}).get("resourceVersion")))
        await anyio.sleep(0.3)
        assert runs == []
        await merge(api, path, {"metadata": {"labels": {"watched": "yes"}}})
        await until(lambda: runs == ["start"])
        await merge(api, path, {"metadata": {"labels": {"watched": "no"}}})
        await until(lambda: len(reasons) == 1)
        assert reasons[0] & DaemonStoppingReason.FILTERS_MISMATCH
        await merge(api, path, {"metadata": {"labels": {"watched": "yes"}}})
        await until(lambda: runs == ["start", "start"])


async def test_sync_daemons_never_starve_the_handlers_threads(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    handled: list[str] = []
    running_daemons: set[str] = set()

    @anyop.daemon("kopfexamples", registry=registry, id="busy")
    def busy(name: str, stopped: DaemonStopped, **_: Any) -> None:
        running_daemons.add(name)
        while not stopped:
            stopped.wait(0.05)

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(name: str, **_: Any) -> None:
        handled.append(name)

    settings = OperatorSettings.model_validate({"execution": {"max_workers": 2}})
    names = [f"busy{i}" for i in range(5)]
    async with running(registry, anyop_namespace, settings):
        for name in names:
            await create(api, anyop_namespace, name)
        await until(lambda: running_daemons == set(names))
        await merge(api, url(anyop_namespace, "busy0"), {"spec": {"field": "x"}})
        await until(lambda: handled == ["busy0"])


async def test_operator_exit_stops_daemons_with_their_reason(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    reasons: list[DaemonStoppingReason] = []

    @anyop.daemon("kopfexamples", registry=registry, id="sleeper")
    async def sleeper(stopped: DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        reasons.append(stopped.reason)

    t0 = 0.0
    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "sleeper")
        await wait_for(api, url(anyop_namespace, "sleeper"), lambda b: FINALIZER in finalizers(b))
        await anyio.sleep(0.3)
        t0 = now()
    assert now() - t0 < 2.0
    assert len(reasons) == 1
    assert reasons[0] & DaemonStoppingReason.OPERATOR_EXITING


async def test_a_terminating_daemon_is_respawned_only_after_it_has_exited(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    starts: list[float] = []
    exited: list[float] = []

    @anyop.daemon("kopfexamples", registry=registry, labels={"on": "yes"}, id="lingering")
    async def lingering(stopped: DaemonStopped, **_: Any) -> None:
        starts.append(now())
        await stopped.wait()
        if len(starts) == 1:
            await anyio.sleep(0.8)  # still terminating for a while
            exited.append(now())

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "lingering")
        path = url(anyop_namespace, "lingering")
        await merge(api, path, {"metadata": {"labels": {"on": "yes"}}})
        await until(lambda: len(starts) == 1)
        await merge(api, path, {"metadata": {"labels": {"on": "no"}}})
        await anyio.sleep(0.2)
        await merge(api, path, {"metadata": {"labels": {"on": "yes"}}})  # matches again at once
        # Its exit wakes the object's worker (a new one, as the object left the watch's
        # selection and came back): no other event is needed for the new run.
        await until(lambda: len(starts) == 2)
    assert starts[1] >= exited[0], "respawned while the old one was still exiting"


async def test_a_daemon_out_of_retries_exits_for_good(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    attempts: list[int] = []

    @anyop.daemon("kopfexamples", registry=registry, retries=3, backoff=0.05, id="hopeless")
    async def hopeless(retry: int, **_: Any) -> None:
        attempts.append(retry)
        raise ValueError("never works")

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "hopeless")
        message = "Daemon 'hopeless' has exited on its own and will not be retried or restarted."
        await wait_for_log(caplog, message)
        await merge(api, url(anyop_namespace, "hopeless"), {"spec": {"field": "again"}})
        await anyio.sleep(0.3)
    assert attempts == [0, 1, 2]


async def test_a_daemon_that_returns_sets_its_flag_with_done_for_threads_it_started(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    reasons: list[DaemonStoppingReason] = []

    @anyop.daemon("kopfexamples", registry=registry, id="starter")
    def starter(stopped: DaemonStopped, **_: Any) -> None:
        def helper() -> None:
            if stopped.wait(DEADLINE):  # woken when the daemon is gone, not after the deadline
                reasons.append(stopped.reason)

        threading.Thread(target=helper, daemon=True).start()
        # Returns at once: the daemon is done, and so should its helper be.

    await create(api, anyop_namespace, "starting")
    async with running(registry, anyop_namespace):
        await until(lambda: bool(reasons))
    assert reasons == [DaemonStoppingReason.DONE]
