"""Conformance: the resources kube-apiserver serves without storing objects of their own: a
Pod's binding to a node (``bindings``, ``pods/binding``: valid, refused, dry run, with its
preconditions) and ``componentstatuses``."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]


def _pod(name: str, **spec: Any) -> Body:
    containers = [{"name": "c", "image": "registry.example/app:1"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": containers, **spec}}  # fmt: skip


def _binding(name: str, node: str = "node-1", **metadata: Any) -> Body:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **metadata},
            "target": {"kind": "Node", "name": node}}  # fmt: skip


async def test_a_binding_assigns_a_pod_to_its_node_once(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        bindings = t.core("bindings")
        made = await t.post(t.core("pods"), _pod("p"))
        await t.post(bindings, _binding("p"), params={"dryRun": "All"})
        await t.get(t.core("pods", "p"))  # unchanged
        labelled = _binding("p", annotations={"a": "1"}, labels={"tier": "x"}, uid="other")
        await t.post(bindings, labelled)  # the uid is cleared here: no precondition
        await t.get(t.core("pods", "p"))
        await t.post(bindings, _binding("p", "node-2"))  # bound already
        await t.post(bindings, _binding("missing"))
        await t.post(bindings, {"metadata": {}, "target": {"name": "n"}})
        await t.post(bindings, {"metadata": {"name": "p"}, "target": {}})
        await t.post(bindings, {"metadata": {"name": "p"}, "target": {"kind": "Pod"}})
        await t.get(bindings)
        await t.get(t.core("bindings", "p"))
        await t.post("/api/v1/bindings", _binding("p"))
        await t.post(t.core("pods"), _pod("q"))
        subresource = t.core("pods", "q") + "/binding"
        await t.post(subresource, _binding("other"))
        await t.post(subresource, _binding("q", uid=made["metadata"]["uid"]))  # another pod's
        await t.post(subresource, _binding("q", resourceVersion="1"))
        await t.post(subresource, _binding("q"))
        await t.get(t.core("pods", "q"))
        await t.post(t.core("pods"), _pod("gated", schedulingGates=[{"name": "x.dev/wait"}]))
        await t.post(bindings, _binding("gated"))
        await t.post(t.core("pods"), _pod("held"))
        await t.patch(t.core("pods", "held"), {"metadata": {"finalizers": ["x.dev/hold"]}})
        await t.delete(t.core("pods", "held"), params={"gracePeriodSeconds": "0"})
        await t.post(bindings, _binding("held"))
        await t.patch(t.core("pods", "held"), {"metadata": {"finalizers": None}})

    await conform(scenario)


async def test_component_statuses_are_computed_when_read(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        # (kube-apiserver lists them in the order its probes answer)
        await t.get("/api/v1/componentstatuses", record=lambda listed: sorted(
            listed["items"], key=lambda item: item["metadata"]["name"]))  # fmt: skip
        await t.get("/api/v1/componentstatuses/etcd-0")
        await t.get("/api/v1/componentstatuses/nope")
        await t.get("/api/v1/componentstatuses", params={"watch": "true"})
        await t.get(t.core("componentstatuses"))
        await t.post("/api/v1/componentstatuses", {"metadata": {"name": "x"}})
        await t.delete("/api/v1/componentstatuses/etcd-0")

    await conform(scenario)
