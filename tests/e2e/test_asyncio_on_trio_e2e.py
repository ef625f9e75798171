"""Kopf's asyncio code under ``--backend trio``: one clear message that names the handler.

A handler that calls ``asyncio.sleep()`` cannot run on Trio. It fails once, permanently, with a
message that says why and what runs it; no traceback, no retry every 60 seconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log

import anyop as kopf
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
    pytest.mark.parametrize("anyio_backend", ["trio"]),  # about Trio on purpose
]


async def test_an_asyncio_handler_on_trio_fails_once_with_what_runs_it(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()
    calls: list[int] = []

    @kopf.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(retry: int, **_: Any) -> None:
        calls.append(retry)
        await asyncio.sleep(0.01)

    @kopf.daemon("kopfexamples", registry=registry, id="daemon_fn")
    async def daemon_fn(**_: Any) -> None:
        await asyncio.sleep(0.01)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "on-trio")
        await wait_for_log(caplog, "Creation is processed: 0 succeeded; 1 failed.")
        await wait_for(api, url(anyop_namespace, "on-trio"), lambda b: bool(b))
        await wait_for_log(caplog, _message("Daemon 'daemon_fn'", "daemon_fn"))

    failures = [r for r in caplog.records if "uses asyncio" in r.getMessage()]
    assert sorted(r.getMessage() for r in failures) == [
        _message("Daemon 'daemon_fn'", "daemon_fn"),
        _message("Handler 'create_fn'", "create_fn"),
    ]
    assert all(r.exc_info is None for r in failures)
    assert calls == [0]


def _message(who: str, name: str) -> str:
    qualname = f"test_an_asyncio_handler_on_trio_fails_once_with_what_runs_it.<locals>.{name}"
    return (
        f"{who} failed permanently: {qualname}() uses asyncio (no running event loop), but "
        f"the operator runs on Trio (--backend trio). Run the operator with --backend asyncio "
        f"(the default), or use AnyIO's functions (anyio.sleep(), anyio.to_thread.run_sync(), "
        f"...), which run on both."
    )
