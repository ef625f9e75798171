"""An object whose essence is too large for the annotations (256 KiB for all of them together):
its handlers run once, its deletion is never blocked, and where anyop cannot keep its state the
error says why and what to do."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, delete_and_wait, running, url

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.storage.defaults import anyop_storages

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]

BIG = "x" * (300 * 1024)


def annotations_storage() -> OperatorSettings:
    settings = OperatorSettings()
    settings.persistence.progress_storage = anyop_storages().progress
    settings.persistence.diffbase_storage = anyop_storages().diffbase
    return settings


@pytest.mark.parametrize("storage", ["status", "annotations"])
async def test_a_300_kib_spec_is_created_and_deleted_with_each_handler_once(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture, storage: str
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()
    calls: Counter[str] = Counter()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        calls["create"] += 1
        return "created"

    @on.delete("kopfexamples", registry=registry, id="delete_fn")
    async def delete_fn(**_: Any) -> None:
        calls["delete"] += 1

    settings = annotations_storage() if storage == "annotations" else None
    async with running(registry, anyop_namespace, settings):
        body = {
            "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": "big"}, "spec": {"field": BIG},
        }  # fmt: skip
        (await api.post(url(anyop_namespace), json=body)).raise_for_status()
        with anyio.fail_after(DEADLINE):
            while not calls["create"]:
                await anyio.sleep(0.05)
        await anyio.sleep(1.0)  # the echoes of our writes: no second call
        await delete_and_wait(api, anyop_namespace, "big")
    assert calls == {"create": 1, "delete": 1}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    if storage == "annotations":  # too large for the annotations: a digest, said once
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        digests = [w for w in warned if w.startswith("Only a digest of the handled state")]
        assert len(digests) == 1
        assert "anyop.status_storages()" in digests[0]
