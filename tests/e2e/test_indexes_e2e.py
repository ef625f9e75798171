"""In-memory indexes on the real control plane: built before handlers, kept current, errors."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, running, url, wait_for_log

import anyop
import anyop.on as on
from anyop.errors import PermanentError
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]

MERGE = {"Content-Type": "application/merge-patch+json"}


async def make(
    api: httpx.AsyncClient, namespace: str, name: str, field: str, labels: dict[str, str]
) -> None:
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name, "labels": labels},
        "spec": {"field": field},
    }
    (await api.post(url(namespace), json=body)).raise_for_status()


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(DEADLINE):
        while not condition():
            await anyio.sleep(0.05)


def as_dict(index: anyop.Index) -> dict[Any, list[Any]]:
    return {key: sorted(store) for key, store in index.items()}


async def test_an_index_is_complete_before_handlers_run_and_stays_current(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()
    seen: dict[str, dict[Any, list[Any]]] = {}
    views: list[anyop.Index] = []

    @on.index("kopfexamples", registry=registry, labels={"indexed": "yes"})
    def by_field(spec: Any, name: str, **_: Any) -> dict[str, str]:
        if name == "broken":
            raise PermanentError("no index for this one")
        return {spec["field"]: name}

    @on.resume("kopfexamples", registry=registry, id="look")
    @on.create("kopfexamples", registry=registry, id="look")
    def look(name: str, by_field: anyop.Index, **_: Any) -> None:
        seen[name] = as_dict(by_field)
        views.append(by_field)

    labels = {"indexed": "yes"}
    for name in ("e1", "e2", "e3"):  # before the operator: found by the initial listing
        await make(api, anyop_namespace, name, "a" if name != "e3" else "b", labels)
    await make(api, anyop_namespace, "broken", "a", labels)
    async with running(registry, anyop_namespace):
        await until(lambda: {"e1", "e2", "e3", "broken"} <= set(seen))
        expected = {"a": ["e1", "e2"], "b": ["e3"]}
        assert seen["e1"] == seen["e2"] == seen["e3"] == expected  # complete from the first run
        index = views[0]

        (
            await api.patch(
                url(anyop_namespace, "e1"), json={"spec": {"field": "b"}}, headers=MERGE
            )
        ).raise_for_status()
        await until(lambda: as_dict(index) == {"a": ["e2"], "b": ["e1", "e3"]})

        (await api.delete(url(anyop_namespace, "e2"))).raise_for_status()
        await until(lambda: as_dict(index) == {"b": ["e1", "e3"]})

        unlabel = {"metadata": {"labels": {"indexed": None}}}
        (
            await api.patch(url(anyop_namespace, "e3"), json=unlabel, headers=MERGE)
        ).raise_for_status()
        await until(lambda: as_dict(index) == {"b": ["e1"]})
        await wait_for_log(
            caplog, "Indexer 'by_field' failed: the object is removed from the index for good."
        )
