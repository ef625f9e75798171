"""Fixtures for tests against the real local control plane (kube-apiserver + etcd)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from anyop.testing.controlplane import LocalControlPlane

EXAMPLES = Path(__file__).parents[2] / "examples"
MANIFESTS = Path(__file__).parents[2] / "manifests"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in tests/e2e needs the control plane: mark it so `-m "not e2e"` skips it."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
async def api(anyop_controlplane: LocalControlPlane) -> AsyncIterator[httpx.AsyncClient]:
    """A plain httpx client with the admin certificate, on the test's own backend."""
    ctx = anyop_controlplane.ssl_context()
    async with httpx.AsyncClient(base_url=anyop_controlplane.server, verify=ctx, timeout=30) as c:
        yield c


@pytest.fixture(scope="session")
def kopfexample_crd(anyop_controlplane: LocalControlPlane) -> str:
    """The KopfExample CRD from examples/crd.yaml, applied and Established once per session."""
    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    kubectl(anyop_controlplane, "apply", "-f", str(EXAMPLES / "crd.yaml"))
    wait_for_crd(anyop_controlplane, "kopfexamples.kopf.dev")
    return "kopfexamples.kopf.dev"


KOPF_PEERING_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "kopfpeerings.kopf.dev"},
    "spec": {
        "group": "kopf.dev",
        "scope": "Namespaced",
        "names": {"kind": "KopfPeering", "plural": "kopfpeerings", "singular": "kopfpeering"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"status": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        }],
    },
}  # fmt: skip


@pytest.fixture(scope="session")
def peering_crds(anyop_controlplane: LocalControlPlane) -> None:
    """anyop's peering CRDs from manifests/, and Kopf's namespaced one."""
    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    kubectl(anyop_controlplane, "apply", "-f", str(MANIFESTS / "peering.yaml"))
    kubectl(anyop_controlplane, "apply", "-f", "-", stdin=json.dumps(KOPF_PEERING_CRD))
    for name in ("anyoppeerings.anyop.dev", "clusteranyoppeerings.anyop.dev"):
        wait_for_crd(anyop_controlplane, name)
    wait_for_crd(anyop_controlplane, "kopfpeerings.kopf.dev")
