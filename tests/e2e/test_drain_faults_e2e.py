"""An API server that drains as it stops: RELIABILITY.md §5 row 3.

A control plane of its own runs kube-apiserver with ``--shutdown-send-retry-after=true``: once
its shutdown delay is over it answers new requests with 429, ``Retry-After`` and
``Connection: close`` while requests are still in flight, then exits. The operator's write that
meets the stopping server is retried once it is back and never counts as a handler failure: each
handler runs once. (With nothing else in flight the draining ends at once, so the write here
meets refused connections; the 429 shape itself is proven in tests/unit/kube.) Both backends.
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from tests.e2e.test_watch_e2e import CONFIGMAPS, DEADLINE, NAMESPACES, admin, configmap

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.kube.client import open_client
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

DRAINING = ["--shutdown-send-retry-after=true", "--shutdown-delay-duration=2s"]


@pytest.fixture(scope="module")
def draining_plane() -> Iterator[LocalControlPlane]:
    """A control plane of our own whose API server drains with 429s when it stops."""
    with LocalControlPlane(apiserver_flags=DRAINING) as plane:
        yield plane


@pytest.mark.slow
async def test_row3_a_draining_api_server_costs_no_handler_a_retry(
    draining_plane: LocalControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    plane = draining_plane
    vault = Vault()
    await vault.populate({"admin": admin(plane)})
    calls: collections.Counter[tuple[str, int]] = collections.Counter()
    entered, release = anyio.Event(), anyio.Event()
    registry = OperatorRegistry()

    mine = {"during", "after"}  # not the controllers' kube-root-ca.crt

    @on.create(
        "",
        "v1",
        "configmaps",
        registry=registry,
        id="create_fn",
        when=lambda name, **_: name in mine,
    )
    async def create_fn(name: str, retry: int, **_: Any) -> None:
        calls[name, retry] += 1
        if name == "during":
            entered.set()
            await release.wait()  # returns while the API server drains: its write meets a 429

    ns = f"drain-{anyio.current_time():.0f}".replace(".", "")
    stop, ready = anyio.Event(), anyio.Event()
    operator = functools.partial(
        serve, registry=registry, namespaces=[ns], vault=vault, stop_event=stop, ready_event=ready
    )
    async with open_client(vault) as client, anyio.create_task_group() as tg:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        tg.start_soon(operator)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        await client.create(CONFIGMAPS, configmap("during"), namespace=ns)
        with anyio.fail_after(DEADLINE):
            await entered.wait()
        async with anyio.create_task_group() as inner:  # SIGTERM: the delay, then the draining
            inner.start_soon(anyio.to_thread.run_sync, plane.stop_apiserver)
            await anyio.sleep(2.5)  # past the shutdown delay: the draining has begun
            release.set()
        plane.start_apiserver()  # in the main thread, so that the process is tied to it
        await client.create(CONFIGMAPS, configmap("after"), namespace=ns)
        with anyio.fail_after(DEADLINE):
            while ("after", 0) not in calls:
                await anyio.sleep(0.05)
        stop.set()
    assert calls == {("during", 0): 1, ("after", 0): 1}  # once each, no handler retry
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
