"""What a deletion does when its handler keeps failing: release (Kopf's) or keep the finalizer."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log

import anyop
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


def failing_deletion(on_failure: str, attempts: list[int], *, until: int) -> OperatorRegistry:
    registry = OperatorRegistry()
    anyop.on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: None)

    @anyop.on.delete(
        "kopfexamples", registry=registry, id="delete_fn", on_failure=on_failure, backoff=0.2
    )
    def delete_fn(retry: int, **_: Any) -> None:
        attempts.append(retry)
        if retry < until:
            raise anyop.PermanentError("the cloud resource is still in use")

    return registry


async def test_a_failed_deletion_keeps_the_finalizer_and_retries_until_it_succeeds(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    attempts: list[int] = []
    async with running(failing_deletion("keep", attempts, until=3), anyop_namespace):
        await create(api, anyop_namespace, "kept")
        path = url(anyop_namespace, "kept")
        await wait_for(api, path, lambda b: bool(b.get("metadata", {}).get("finalizers")))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        (await api.delete(path)).raise_for_status()
        await wait_for_log(
            caplog,
            "Handler 'delete_fn' failed, and the deletion waits for it to succeed "
            "(on_failure='keep'); retrying in 0.2 seconds: the cloud resource is still in use",
        )
        still = (await api.get(path)).json()
        await wait_for(api, path, lambda b: b == {})
    assert still["metadata"]["finalizers"]  # held while failing
    assert attempts == [0, 1, 2, 3]
    assert "Deletion is processed: 1 succeeded; 0 failed." in caplog.messages


async def test_a_failed_deletion_releases_the_finalizer_by_default_as_kopf(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    attempts: list[int] = []
    async with running(failing_deletion("release", attempts, until=3), anyop_namespace):
        await create(api, anyop_namespace, "released")
        path = url(anyop_namespace, "released")
        await wait_for(api, path, lambda b: bool(b.get("metadata", {}).get("finalizers")))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
    assert attempts == [0]
    assert "Deletion is processed: 0 succeeded; 1 failed." in caplog.messages
