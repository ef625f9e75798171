"""Conformance: kubectl's commands that read the OpenAPI documents, against the real API server
and FakeCluster served over a socket: ``apply`` (of a CRD, its objects, a Deployment, a
ConfigMap; with server-side field validation, whose refusals must read the same),
``apply --server-side`` and ``explain``; a ``kind: List`` file, which kubectl validates on the
client by ``/openapi/v2`` (in protobuf). Each step's exit code and output must be the same."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import CRDS

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

GROUP = "kubectl.anyop.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"doohickeys.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Doohickey", "plural": "doohickeys", "singular": "doohickey"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "description": "What the doohickey should be.",
                         "properties": {
                             "size": {"type": "integer", "description": "How big it is."},
                             "port": {"x-kubernetes-int-or-string": True},
                         }},
            }}},
        }],
    },
}  # fmt: skip


def _objects(namespace: str, *, data: str, extra: dict[str, Any] | None = None) -> str:
    labels = {"app": "d"}
    objects = [
        {"apiVersion": f"{GROUP}/v1", "kind": "Doohickey",
         "metadata": {"name": "dh", "namespace": namespace},
         "spec": {"size": 2 if data == "1" else 3, "port": "http"}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "namespace": namespace},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "cm", "namespace": namespace}, "data": {"key": data},
         **(extra or {})},
    ]  # fmt: skip
    return "\n---\n".join(json.dumps(obj) for obj in objects)


class Kubectl:
    """kubectl with one kubeconfig and its own discovery cache; records each step."""

    def __init__(self, binary: Path, kubeconfig: Path, cache: Path, namespace: str) -> None:
        self.base = [str(binary), f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}"]
        self.namespace = namespace
        self.records: list[Any] = []

    async def run(self, *args: str, stdin: str | None = None, record: bool = True) -> int:
        result = await anyio.run_process(
            [*self.base, *args], input=stdin.encode() if stdin else None, check=False
        )
        out = result.stdout.decode().replace(self.namespace, "<ns>")
        err = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", result.stderr.decode())
        err = re.sub(r'\\"uid\\":\\"[0-9a-f-]+\\"', '\\"uid\\":<uid>', err)
        err = err.replace(self.namespace, "<ns>")
        if record:
            self.records.append({"args": args, "code": result.returncode, "out": out, "err": err})
        return result.returncode

    async def until(self, *args: str) -> None:
        """Wait (unrecorded) until a command succeeds: a new CRD's kind is served a moment
        after it is Established."""
        with anyio.fail_after(60):
            while await self.run(*args, record=False) != 0:
                await anyio.sleep(0.2)


async def _session(kubectl: Kubectl) -> list[Any]:
    ns = kubectl.namespace
    await kubectl.run("create", "namespace", ns, "--dry-run=client", "-o", "json")
    await kubectl.run("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))  # fmt: skip
    await kubectl.run("apply", "-f", "-", stdin=json.dumps(CRD))
    await kubectl.until("wait", "--for=condition=Established", f"crd/doohickeys.{GROUP}")
    await kubectl.until("get", "doohickeys", "-n", ns)
    await kubectl.run("apply", "-f", "-", stdin=_objects(ns, data="1"))
    await kubectl.run("apply", "-f", "-", stdin=_objects(ns, data="1"))
    await kubectl.run("apply", "-f", "-", stdin=_objects(ns, data="2"))
    bad = _objects(ns, data="3", extra={"bogus": True})
    await kubectl.run("apply", "-f", "-", stdin=bad)
    fresh = bad.replace('"name": "cm"', '"name": "cm-new"')
    await kubectl.run("apply", "-f", "-", stdin=fresh)
    await kubectl.run("apply", "--validate=warn", "-f", "-", stdin=fresh)
    await kubectl.run("apply", "--validate=false", "-f", "-", stdin=bad)
    await kubectl.run("get", "configmap", "cm", "-n", ns, "-o", "jsonpath={.data}")
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed", "namespace": ns},
         "data": {"a": "1"}}]}  # fmt: skip
    await kubectl.run("apply", "-f", "-", stdin=json.dumps(listed))
    listed["items"][0]["bogus"] = 1
    listed["items"][0]["data"] = {"a": 2}
    await kubectl.run("apply", "-f", "-", stdin=json.dumps(listed))
    await kubectl.run("delete", "configmap", "listed", "-n", ns)
    await kubectl.run("explain", "deployment.spec.replicas")
    await kubectl.run("explain", "pods.spec.containers.imagePullPolicy")
    await kubectl.run("explain", "deployment.spec.strategy", "--recursive")
    await kubectl.run("explain", "widgets.spec")
    await kubectl.run("explain", "doohickeys.spec")
    await kubectl.run("explain", "configmaps", "--recursive")
    await kubectl.run("apply", "--server-side", "-f", "-", stdin=_objects(ns, data="4"))
    await kubectl.run("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=bad)
    await kubectl.run(
        "get", "configmap", "cm", "-n", ns, "-o", "jsonpath={.metadata.managedFields[*].manager}"
    )
    await kubectl.run("delete", "-f", "-", stdin=_objects(ns, data="4"))
    await kubectl.run("delete", "crd", f"doohickeys.{GROUP}")
    return list(kubectl.records)


async def test_kubectl_apply_explain_and_server_side_apply_as_against_the_real_server(
    bare_controlplane: LocalControlPlane, conformance_crds: None, tmp_path: Path
) -> None:
    namespace = f"kubectl-{uuid.uuid4().hex[:8]}"
    binary = bare_controlplane.assets.kubectl
    real = Kubectl(binary, bare_controlplane.kubeconfig, tmp_path / "real-cache", namespace)
    expected = await _session(real)
    fake = FakeCluster(controllers=False)
    for crd in CRDS:
        fake.create(crd)
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        kubeconfig = fake.write_kubeconfig(tmp_path / "fake.kubeconfig")
        fake_kubectl = Kubectl(binary, kubeconfig, tmp_path / "fake-cache", namespace)
        faked = await _session(fake_kubectl)
        fallback = await _v2_fallback(fake_kubectl)
        tg.cancel_scope.cancel()
    for want, got in zip(expected, faked, strict=True):
        assert got == want
    assert fallback["code"] == 0, fallback
    assert re.search(r'url="[^"]*/openapi/v2[?"][^"]*" status="200', fallback["err"]), fallback
    assert "widget.conformance.anyop.dev/v2-document configured" in fallback["out"], fallback


async def _v2_fallback(kubectl: Kubectl) -> Any:
    """Against the fake: patching a custom resource, kubectl asks for ``/openapi/v2`` in
    protobuf (to find the kind's patch type), which the fake serves, and goes on with a merge
    patch (the document has no definition of the kind, as kube-apiserver's has no strategic
    merge for it)."""
    metadata = {"name": "v2-document", "namespace": "default"}
    widget = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget", "metadata": metadata,
              "spec": {"size": 1}}  # fmt: skip
    await kubectl.run("apply", "-f", "-", stdin=json.dumps(widget), record=False)
    widget["spec"] = {"size": 2}
    await kubectl.run("apply", "-v=6", "-f", "-", stdin=json.dumps(widget))
    return kubectl.records[-1]
