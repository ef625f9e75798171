"""Probe handlers get the ``@anyop.index`` indexes as kwargs, as Kopf's do."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_engine_e2e import create
from tests.e2e.test_probes_e2e import operating, until_status

import anyop
import anyop.engine.operator.health as probes_module
import anyop.on as on
from anyop.handlers.registry import OperatorRegistry

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


async def test_probes_see_the_indexes_empty_at_startup_and_full_when_serving(
    api: httpx.AsyncClient, anyop_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probes_module, "PROBE_CACHE", 0.0)  # Kopf's 10 s, too long to wait here
    registry = OperatorRegistry()
    release = anyio.Event()

    @on.startup(registry=registry)
    async def slow_start(**_: Any) -> None:
        await release.wait()

    @anyop.index("kopfexamples", registry=registry, id="by_name")
    def by_name(name: str, **_: Any) -> dict[str, bool]:
        return {name: True}

    @on.probe(registry=registry, id="names")
    def names(by_name: anyop.Index, **_: Any) -> list[str]:
        return sorted(str(key) for key in by_name)

    await create(api, anyop_namespace, "indexed-1")
    await create(api, anyop_namespace, "indexed-2")
    async with operating(registry, anyop_namespace) as probes:
        early = await probes.get("/healthz")  # during the startup: nothing is indexed yet
        release.set()
        await until_status(probes, "/readyz", 200)
        late = await probes.get("/healthz")
    assert (early.status_code, early.json()) == (200, {"names": []})
    assert (late.status_code, late.json()) == (200, {"names": ["indexed-1", "indexed-2"]})
