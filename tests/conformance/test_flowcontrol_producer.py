"""Conformance: API Priority and Fairness' config producer, which kube-apiserver runs once a
minute: it creates the bootstrap FlowSchemas and priority levels that are missing, sets their
specs and ``apf.kubernetes.io/autoupdate-spec`` annotations right, and deletes the other
objects that carry that annotation as true.

The real server's minute is waited for (its next pass, 60 s at most); the fake's passes on a
``MockClock`` that jumps (its own Trio run, in a thread), so that its side takes no time. The
server's own objects that the scenario changes are set right by the producer itself, or by
the scenario at its end (unrecorded).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
import trio
import trio.testing
from tests.conformance.conftest import CRDS, run_on
from tests.conformance.harness import Target

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.apf_config_producer import revision
from anyop.testing.fake.bootstrap import flow_control_configuration

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
_GV = "flowcontrol.apiserver.k8s.io/v1"
_FS = f"/apis/{_GV}/flowschemas"
_KEY = "apf.kubernetes.io/autoupdate-spec"
_STRATEGIC = "application/strategic-merge-patch+json"


def _seen(document: Any) -> Any:
    """What the producer decides of an object: its annotation, generation, spec, and who owns
    what (its uid, times and resourceVersion are each server's own)."""
    if not isinstance(document, dict) or "metadata" not in document:
        return document.get("code") if isinstance(document, dict) else document
    metadata = document["metadata"]
    owners = [[entry.get("manager"), entry.get("operation"), entry.get("fieldsV1")]
              for entry in metadata.get("managedFields") or ()]  # fmt: skip
    return {"annotations": metadata.get("annotations"), "generation": metadata.get("generation"),
            "spec": document.get("spec"), "owners": sorted(owners, key=str)}  # fmt: skip


def _flow_schema(name: str, spec: Body, annotations: dict[str, str] | None) -> Body:
    metadata: Body = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": _GV, "kind": "FlowSchema", "metadata": metadata, "spec": spec}


def _names(document: Any, mine: str) -> Any:
    """The bootstrap FlowSchemas and the scenario's (another scenario's may be there too)."""
    names = (item["metadata"]["name"] for item in document.get("items") or ())
    ours = flow_control_configuration()["FlowSchema"]
    return sorted(name for name in names if name in ours or name.startswith(mine))


_CHANGED = ("probes", "service-accounts", "kube-scheduler", "kube-controller-manager", "catch-all")


async def _settled(t: Target, name: str) -> bool:
    """Whether the producer leaves the bootstrap FlowSchema ``name`` as it is now (by the
    fake's rules: where they are wrong, the records differ all the same)."""
    response = await t.api.get(f"{_FS}/{name}")
    if response.status_code != 200:
        return False
    bootstrap = flow_control_configuration()["FlowSchema"][name]
    return revision("FlowSchema", response.json(), bootstrap, mandatory=name == "catch-all") is None


async def _producer_passed(t: Target, mine: str) -> None:
    """Wait (unrecorded) until the producer has made its pass over all the scenario changed:
    the object ``mine``, annotated to be kept up to date but no bootstrap one, deleted, and
    the bootstrap ones it changed set right (130 s at most: a pass that met the scenario's
    writes halfway is followed by another)."""
    with anyio.fail_after(130):
        while (await t.api.get(f"{_FS}/{mine}")).status_code != 404 or not all(
            [await _settled(t, name) for name in _CHANGED]
        ):
            await anyio.sleep(0.5)


async def _scenario(t: Target) -> None:
    spec = {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 5000}
    mine = f"anyop-conf-{t.namespace}"
    for suffix, said in (("-false", {_KEY: "false"}), ("-text", {_KEY: "yes"}),
                         ("-none", None)):  # fmt: skip
        await t.post(_FS, _flow_schema(mine + suffix, spec, said), record=_seen)
    await t.delete(f"{_FS}/probes", record=lambda d: None)
    await t.patch(f"{_FS}/service-accounts", {"spec": {"matchingPrecedence": 7777}}, record=_seen)
    scheduler = {"metadata": {"annotations": {_KEY: None}}, "spec": {"matchingPrecedence": 888}}
    await t.patch(f"{_FS}/kube-scheduler", scheduler, record=_seen)  # generation 2, no annotation
    await t.patch(f"{_FS}/kube-controller-manager",
                  {"metadata": {"annotations": {_KEY: "false"}},
                   "spec": {"matchingPrecedence": 777}}, record=_seen)  # fmt: skip
    await t.patch(f"{_FS}/catch-all", {"metadata": {"annotations": {_KEY: "false"}}},
                  record=_seen)  # fmt: skip
    # The last write: a pass that deletes it has met all the others.
    await t.post(_FS, _flow_schema(mine + "-true", spec, {_KEY: "true"}), record=_seen)
    await _producer_passed(t, mine + "-true")
    for name in _CHANGED:
        await t.get(f"{_FS}/{name}", record=_seen)
    await t.get(_FS, record=functools.partial(_names, mine=mine))
    for suffix in ("-false", "-text", "-none"):  # (unrecorded: the scenario's own)
        await t.api.delete(f"{_FS}/{mine}{suffix}")
    for name in ("kube-scheduler", "kube-controller-manager"):
        bootstrap = flow_control_configuration()["FlowSchema"][name]
        put = {"metadata": {"annotations": {_KEY: "true"}}, "spec": bootstrap["spec"]}
        await t.api.patch(f"{_FS}/{name}", json=put, headers={"Content-Type": _STRATEGIC})


async def _on_fake(namespace: str) -> list[Any]:
    fake = FakeCluster(controllers=False)
    for crd in CRDS:
        fake.create(crd)
    async with fake.client(timeout=30) as api:
        return await run_on("fake", api, _scenario, namespace=namespace)


async def test_the_config_producer_sets_the_bootstrap_configuration_right_each_minute(
    real_api: httpx.AsyncClient,
) -> None:
    namespace = f"conf-{uuid.uuid4().hex[:8]}"
    real = await run_on("real", real_api, _scenario, namespace=namespace)
    clock = trio.testing.MockClock(autojump_threshold=0)
    run = functools.partial(trio.run, _on_fake, namespace, clock=clock)
    fake = await anyio.to_thread.run_sync(run)
    assert fake == real
