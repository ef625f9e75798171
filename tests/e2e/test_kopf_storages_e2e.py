"""Storages written for Kopf, as Kopf's documentation shows them, work unchanged.

They subclass ``ProgressStorage`` and ``DiffBaseStorage``, implement ``fetch``/``store``/``purge``
/``touch``/``clear``, and handle Kopf's records: dicts of JSON values (``json.dumps(record)``,
``record["retries"]``). Both keep their data in annotations of their own, so the test sees what
they wrote on the object itself.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import MERGE, create, running, url, wait_for, wait_for_log

import anyop as kopf
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]

PREFIX = "storage.example.com"


def _owned(annotations: Mapping[str, Any]) -> list[str]:
    return [name for name in annotations if name.startswith(f"{PREFIX}/")]


class KopfAnnotationsProgress(kopf.ProgressStorage):
    """A progress storage written for Kopf: one JSON annotation per handler."""

    def __init__(self) -> None:  # Kopf's own storages need no super().__init__()
        self.stored: list[dict[str, Any]] = []

    def fetch(self, *, key: str, body: Any) -> kopf.ProgressRecord | None:
        text = body.get("metadata", {}).get("annotations", {}).get(f"{PREFIX}/{key}")
        return None if text is None else json.loads(text)  # type: ignore[no-any-return]

    def store(self, *, key: str, record: kopf.ProgressRecord, body: Any, patch: Any) -> None:
        self.stored.append(dict(record))
        assert record["retries"] is None or isinstance(record["retries"], int)
        patch.meta.annotations[f"{PREFIX}/{key}"] = json.dumps(record)

    def purge(self, *, key: str, body: Any, patch: Any) -> None:
        if f"{PREFIX}/{key}" in body.get("metadata", {}).get("annotations", {}):
            patch.meta.annotations[f"{PREFIX}/{key}"] = None

    def touch(self, *, body: Any, patch: Any, value: str | None) -> None:
        if body.get("metadata", {}).get("annotations", {}).get(f"{PREFIX}/touch") != value:
            patch.meta.annotations[f"{PREFIX}/touch"] = value

    def clear(self, *, essence: Any) -> Any:
        essence = copy.deepcopy(dict(essence))
        annotations = essence.get("metadata", {}).get("annotations", {})
        for name in _owned(annotations):
            del annotations[name]
        return essence


class KopfAnnotationsDiffBase(kopf.DiffBaseStorage):
    """A diff-base storage written for Kopf: the essence as JSON in one annotation."""

    def __init__(self) -> None:
        pass

    def fetch(self, *, body: Any) -> dict[str, Any] | None:
        text = body.get("metadata", {}).get("annotations", {}).get(f"{PREFIX}/last")
        return None if text is None else json.loads(text)  # type: ignore[no-any-return]

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        patch.meta.annotations[f"{PREFIX}/last"] = json.dumps(essence)


def settings_with(progress: kopf.ProgressStorage) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = progress
    settings.persistence.diffbase_storage = KopfAnnotationsDiffBase()
    return settings


async def test_kopf_written_storages_keep_progress_retries_and_diffs(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    retries: list[int] = []
    diffs: list[list[Any]] = []

    @kopf.on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(retry: int, **_: Any) -> str:
        retries.append(retry)
        if retry < 2:
            raise kopf.TemporaryError("not yet", delay=0.1)
        return "done"

    @kopf.on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(diff: Any, **_: Any) -> None:
        diffs.append([tuple(item) for item in diff])

    caplog.set_level(logging.INFO, logger="anyop")
    progress = KopfAnnotationsProgress()
    async with running(registry, anyop_namespace, settings_with(progress)):
        await create(api, anyop_namespace, "kopf-stored")
        path = url(anyop_namespace, "kopf-stored")
        created = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        spec = await api.patch(path, json={"spec": {"field": "changed"}}, headers=MERGE)
        spec.raise_for_status()
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")

    assert retries == [0, 1, 2]
    assert diffs == [[("change", ("spec", "field"), "value", "changed")]]
    assert created["status"]["create_fn"] == "done"
    first = progress.stored[0]
    assert set(first) >= {"started", "stopped", "delayed", "purpose", "retries", "success",
                          "failure", "message", "subrefs"}  # fmt: skip
    assert isinstance(first["started"], str)
    assert isinstance(first["delayed"], str)
    assert (first["purpose"], first["retries"], first["message"]) == ("create", 1, "not yet")
    essence = json.loads(created["metadata"]["annotations"][f"{PREFIX}/last"])
    assert essence["spec"] == {"field": "value"}
    assert not _owned(essence.get("metadata", {}).get("annotations", {}))
    assert not any("kopf.zalando.org/" in name or "anyop.dev/" in name
                   for name in created["metadata"]["annotations"])  # fmt: skip
