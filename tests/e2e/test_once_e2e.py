"""Each handler runs once per cause: the engine's own writes never call a handler again.

Kopf's "all at once" shape: several create handlers, one of which fails on its first attempt and
waits for its retry, and a delete handler. Each object is deleted while its create handler waits
for the retry, so the deletion's cycle carries the create handlers' records and its last cycle
writes more than the finalizer's release. The delete handler must run exactly once per object,
whatever the storage keeps the state in.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, create, delete_and_wait, running

import anyop.on as on
from anyop.errors import TemporaryError
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.storage.defaults import anyop_storages, kopf_compatible_storages, status_storages

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig"),
]

OBJECTS = 50

STORAGES = {
    "status": status_storages,
    "annotations": anyop_storages,
    "kopf": kopf_compatible_storages,
}


def settings_for(storage: str) -> OperatorSettings:
    persistence = STORAGES[storage]()
    settings = OperatorSettings()
    settings.persistence.progress_storage = persistence.progress
    settings.persistence.diffbase_storage = persistence.diffbase
    settings.persistence.finalizer = persistence.finalizer
    return settings


@pytest.fixture(autouse=True)
def quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="anyop")


@pytest.mark.parametrize("storage", sorted(STORAGES))
async def test_an_object_deleted_while_a_create_handler_waits_for_its_retry_is_deleted_once(
    api: httpx.AsyncClient, anyop_namespace: str, storage: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    deletions: Counter[str] = Counter()
    creations: Counter[str] = Counter()
    waiting: dict[str, anyio.Event] = {}

    @on.create("kopfexamples", registry=registry, id="create_1")
    async def create_1(**_: Any) -> dict[str, str]:
        return {"message": "first"}

    @on.create("kopfexamples", registry=registry, id="create_2")
    async def create_2(name: str, retry: int, **_: Any) -> None:
        creations[name] += 1
        waiting[name].set()
        raise TemporaryError("not yet", delay=60)

    @on.create("kopfexamples", registry=registry, id="create_3")
    async def create_3(patch: Any, **_: Any) -> None:
        patch.metadata.labels["created"] = "yes"

    @on.delete("kopfexamples", registry=registry, id="delete")
    async def delete(name: str, **_: Any) -> str:
        deletions[name] += 1
        return "deleted"

    names = [f"once-{storage}-{index}" for index in range(OBJECTS)]
    async with running(registry, anyop_namespace, settings_for(storage)):
        for name in names:
            waiting[name] = anyio.Event()
            await create(api, anyop_namespace, name)
            with anyio.fail_after(DEADLINE):
                await waiting[name].wait()
            await delete_and_wait(api, anyop_namespace, name)
        # Echoes of the last writes still on their way would show a second call here.
        await anyio.sleep(0.5)
    assert creations == Counter(dict.fromkeys(names, 1))
    assert deletions == Counter(dict.fromkeys(names, 1))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert [e for e in errors if e != "Handler 'create_2' failed temporarily: not yet"] == []
