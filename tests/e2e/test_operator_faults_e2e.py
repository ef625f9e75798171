"""Faults around a whole operator on the real control plane: RELIABILITY.md §5 rows 4, 19, 21,
29 and 37 (no event lost, and the loop-lag watchdog's warning).

The operator runs in the test's event loop (both backends) and serves one namespace. Each test
injects one fault (the API server unreachable at the start, RBAC revoked mid-run, a stop while a
handler runs, a handler that blocks the event loop, etcd gone for a while) and then checks what
must hold: no object is lost, nothing done is done twice, and the operator goes on by itself.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import socket
import threading
import time
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, MERGE, create, running, url, wait_for
from tests.e2e.test_namespaces_forbidden_e2e import ROLE, namespaced_identity
from tests.e2e.test_watch_e2e import admin

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.proxy import FaultyProxy
from anyop.testing.pytest_plugin import kubectl

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


def handled_by(handler_id: str) -> Any:
    """A predicate: the object's status has the handler's result."""
    return lambda body: handler_id in body.get("status", {})


async def until(condition: Any) -> None:
    with anyio.fail_after(DEADLINE):
        while not condition():
            await anyio.sleep(0.05)


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def free_port() -> int:
    """A port where nothing listens (bound, then released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_row19_an_operator_started_before_the_api_server_waits_and_then_serves(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server is unreachable at the start (connections refused behind a proxy)."""
    caplog.set_level(logging.INFO, logger="anyop")
    plane, ns = anyop_controlplane, anyop_namespace
    proxy = FaultyProxy("127.0.0.1", free_port())  # nothing there yet: every connection ends
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "served")
    await create(api, ns, "early")
    stop, ready = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as outer:
        port = await outer.start(proxy.serve)
        vault = Vault()
        through = dataclasses.replace(admin(plane), server=f"https://127.0.0.1:{port}")
        await vault.populate({"admin": through})
        operator = functools.partial(
            serve,
            registry=registry,
            namespaces=[ns],
            vault=vault,
            stop_event=stop,
            ready_event=ready,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(operator)
            await until(lambda: proxy.connections >= 3)  # it tries again and again, and waits
            assert not ready.is_set()
            proxy.port = int(plane.server.rsplit(":", 1)[1])  # the API server "comes up"
            with anyio.fail_after(DEADLINE):
                await ready.wait()
            body = await wait_for(api, url(ns, "early"), handled_by("create_fn"))
            stop.set()
        outer.cancel_scope.cancel()
    assert body["status"]["create_fn"] == "served"


REVOKABLE_SETTINGS = {"watching": {"server_timeout": 2}}  # the watch reconnects every 2 s


async def test_row21_rbac_revoked_mid_run_is_retried_loudly_and_served_again_when_restored(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    plane, ns = anyop_controlplane, anyop_namespace
    identity = await anyio.to_thread.run_sync(namespaced_identity, plane, ns)
    vault = Vault()
    await vault.populate({"sa": identity})
    registry = OperatorRegistry()
    calls: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(name: str, **_: Any) -> str:
        calls.append(name)
        return "served"

    def refusals() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "(403 Forbidden)" in r.getMessage()]

    settings = OperatorSettings.model_validate(REVOKABLE_SETTINGS)
    async with running(registry, ns, settings, vault=vault):
        await create(api, ns, "before")
        await wait_for(api, url(ns, "before"), handled_by("create_fn"))
        revoke = functools.partial(
            kubectl, plane, "delete", "rolebinding", "-n", ns, "kex-operator"
        )
        await anyio.to_thread.run_sync(revoke)
        await until(lambda: len(refusals()) >= 2)  # the watch ended and cannot start again
        await create(api, ns, "during")
        restore = functools.partial(kubectl, plane, "apply", "-f", "-", stdin=ROLE.format(ns=ns))
        await anyio.to_thread.run_sync(restore)
        body = await wait_for(api, url(ns, "during"), handled_by("create_fn"))
    assert body["status"]["create_fn"] == "served"
    assert sorted(calls) == ["before", "during"]  # each once: nothing lost, nothing twice
    assert all(r.levelno >= logging.WARNING for r in refusals())  # said at every attempt
    assert not errors(caplog)


async def test_row29_a_stop_mid_handler_reruns_only_the_interrupted_handler_after_a_restart(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """At-least-once: the interrupted handler runs again; the one recorded as done does not."""
    ns = anyop_namespace
    registry = OperatorRegistry()
    calls: list[str] = []
    entered = anyio.Event()

    @on.create("kopfexamples", registry=registry, id="first_fn")
    def first_fn(**_: Any) -> str:
        calls.append("first")
        return "done"

    @on.create("kopfexamples", registry=registry, id="second_fn")
    async def second_fn(**_: Any) -> str:
        calls.append("second")
        if calls.count("second") == 1:
            entered.set()
            await anyio.sleep_forever()  # cancelled by the stop
        return "done"

    settings = OperatorSettings.model_validate({"queueing": {"exit_timeout": 0.2}})
    async with running(registry, ns, settings):
        await create(api, ns, "interrupted")
        with anyio.fail_after(DEADLINE):
            await entered.wait()
    assert calls == ["first", "second"]
    async with running(registry, ns, settings):
        body = await wait_for(api, url(ns, "interrupted"), handled_by("second_fn"))
    assert calls == ["first", "second", "second"]
    assert body["status"]["first_fn"] == body["status"]["second_fn"] == "done"
    assert not errors(caplog)


async def test_row37_a_handler_that_blocks_the_event_loop_loses_no_event(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An async handler calls ``time.sleep()``: the loop stands still; events meanwhile are kept."""
    plane, ns = anyop_controlplane, anyop_namespace
    registry = OperatorRegistry()
    calls: list[str] = []
    blocked, writer_done = threading.Event(), threading.Event()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        calls.append(name)
        if name == "blocker":
            blocked.set()
            writer_done.wait(DEADLINE)  # the loop is blocked until the writer is done
            time.sleep(1)  # noqa: ASYNC251  # the fault: the loop stands still past the deadline
        return "handled"

    def writer() -> None:
        """Create and change objects from a thread while the operator's loop is blocked."""
        blocked.wait(DEADLINE)
        with httpx.Client(base_url=plane.server, verify=plane.ssl_context()) as sync:
            for index in range(5):
                body = {
                    "apiVersion": "kopf.dev/v1",
                    "kind": "KopfExample",
                    "metadata": {"name": f"meanwhile-{index}"},
                    "spec": {"field": "v"},
                }
                sync.post(url(ns, None), json=body).raise_for_status()
        writer_done.set()

    settings = OperatorSettings.model_validate({"watching": {"inactivity_timeout": 0.5}})
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    async with running(registry, ns, settings):
        await create(api, ns, "blocker")
        for index in range(5):
            await wait_for(api, url(ns, f"meanwhile-{index}"), handled_by("create_fn"))
    thread.join(DEADLINE)
    assert sorted(calls) == ["blocker"] + [f"meanwhile-{i}" for i in range(5)]  # each once


async def test_row37_the_watchdog_warns_while_the_loop_is_blocked_naming_the_handler(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An async handler sleeps 1.5 s in ``time.sleep()``, the threshold is 0.3 s: one warning
    names the handler while it blocks, one message says when the loop runs again."""
    caplog.set_level(logging.INFO, logger="anyop")
    ns = anyop_namespace
    registry = OperatorRegistry()
    warned_meanwhile: list[bool] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def block_the_loop(**_: Any) -> str:
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            time.sleep(0.05)  # noqa: ASYNC251  # the fault: a sync call in an async handler
            if any("blocked for" in m for m in caplog.messages):
                warned_meanwhile.append(True)
        return "handled"

    settings = OperatorSettings.model_validate(
        {"execution": {"loop_lag_threshold": 0.3}, "server": {"metrics_insecure": True}}
    )
    metrics_at = f"http://127.0.0.1:{free_port()}/metrics"
    async with running(registry, ns, settings, metrics_endpoint=metrics_at):
        await create(api, ns, "blocker")
        await wait_for(api, url(ns, "blocker"), handled_by("create_fn"))
        with anyio.fail_after(DEADLINE):
            while len(said := watchdog_records(caplog, after="block_the_loop")) < 2:
                await anyio.sleep(0.05)
        async with httpx.AsyncClient() as scraper:
            before = recoveries(caplog)  # a block is counted when it ends
            scraped = (await scraper.get(metrics_at)).text
            counted = {float(before), float(recoveries(caplog))}
    warning, recovery = said[0], said[1]
    assert len(said) == 2  # one warning per block, never one per tick
    assert warning.levelno == logging.WARNING
    assert f"{__file__}:" in warning.getMessage()
    assert ".block_the_loop (a sync call in an async handler?" in warning.getMessage()
    assert warned_meanwhile  # said while the handler still blocked, not after it
    assert 0.3 <= seconds_in(warning.getMessage()) < 1.5
    assert recovery.getMessage().startswith("The event loop runs again")
    assert 1.4 <= seconds_in(recovery.getMessage()) < DEADLINE
    # Each block counted once, this one and any other (a loaded machine blocks the loop
    # elsewhere too: 0.9 s in a JSON decode was seen on a CI run).
    assert min(counted) >= 1
    assert any(f"anyop_event_loop_blocks_total {blocks}" in scraped for blocks in counted)


def recoveries(caplog: pytest.LogCaptureFixture) -> int:
    """The watchdog's messages that a block ended."""
    return sum(r.getMessage().startswith("The event loop runs again") for r in caplog.records)


def watchdog_records(caplog: pytest.LogCaptureFixture, *, after: str) -> list[logging.LogRecord]:
    """The watchdog's records from its first warning that names ``after``."""
    said = [r for r in caplog.records if r.getMessage().startswith("The event loop")]
    named = [i for i, r in enumerate(said) if after in r.getMessage()]
    return said[named[0] :] if named else []


def seconds_in(message: str) -> float:
    """The seconds of "...blocked for 1.5 s..." in a message."""
    return float(message.split("blocked for ", 1)[1].split()[0])


async def test_row4_etcd_gone_for_a_while_delays_writes_and_the_operator_goes_on(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """etcd stops while a handler runs: its result is written once etcd is back; no watch dies."""
    plane, ns = anyop_controlplane, anyop_namespace
    registry = OperatorRegistry()
    calls: list[str] = []
    entered, release = anyio.Event(), anyio.Event()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        calls.append(name)
        if name == "during":
            entered.set()
            await release.wait()
        return "handled"

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(name: str, **_: Any) -> str:
        calls.append(f"update {name}")
        return "updated"

    assert plane.etcd is not None
    async with running(registry, ns):
        await create(api, ns, "during")
        with anyio.fail_after(DEADLINE):
            await entered.wait()
        await anyio.to_thread.run_sync(plane.etcd.stop)
        release.set()  # the result's patch meets the API server without etcd
        await anyio.sleep(5)  # the outage: a real wait, as etcd is really gone
        plane.etcd.start()  # in the main thread, so that the process is tied to it
        body = await wait_for(api, url(ns, "during"), handled_by("create_fn"))
        patch = {"spec": {"field": "changed"}}
        (await api.patch(url(ns, "during"), json=patch, headers=MERGE)).raise_for_status()
        await wait_for(api, url(ns, "during"), handled_by("update_fn"))  # the watch lives
    assert body["status"]["create_fn"] == "handled"
    assert calls == ["during", "update during"]
