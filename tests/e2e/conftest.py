"""Fixtures for tests against the real local control plane (kube-apiserver + etcd).

A test module that uses the ``on_cluster`` fixture (``pytest.mark.usefixtures("on_cluster")``) runs
each test twice: on the real control plane and on FakeCluster (``[real]`` and ``[fake]`` in the
test ids). Then ``api``, ``kopfexample_crd``, ``peering_crds`` and the plugin's fixtures
(``anyop_namespace``, ``anyop_kubeconfig``, ``anyop_apply``... through ``anyop_cluster``) give
the fake's equivalents, so the same assertions hold on both.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests.virtual import virtual_backend

from anyop.testing.controlplane import LocalControlPlane

if TYPE_CHECKING:
    from anyop.testing.fake import FakeCluster

EXAMPLES = Path(__file__).parents[2] / "examples"
MANIFESTS = Path(__file__).parents[2] / "manifests"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in tests/e2e needs the control plane: mark it so `-m "not e2e"` skips it."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


VIRTUAL_THRESHOLD = 0.005
"""Real seconds the fake clock waits for threads (sync handlers) and sockets (webhooks) before
it jumps to the next deadline, in the tests on FakeCluster."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends; the tests on FakeCluster (``on_cluster`` is ``fake``) on virtual time."""
    if "on_cluster" in request.fixturenames and request.getfixturevalue("on_cluster") == "fake":
        return virtual_backend(request.param, monkeypatch, autojump_threshold=VIRTUAL_THRESHOLD)
    return request.param


@pytest.fixture(params=["real", "fake"])
def on_cluster(request: pytest.FixtureRequest) -> str:
    """Where a test that uses it runs: the real local control plane, or FakeCluster.

    A test that takes ``anyop_controlplane`` itself (for kubectl or a subprocess operator) runs
    on the real one only.
    """
    if request.param == "fake" and "anyop_controlplane" in request.node.fixturenames:
        pytest.skip("it drives the real control plane itself (kubectl, subprocesses)")
    return str(request.param)


@pytest.fixture
def anyop_cluster(request: pytest.FixtureRequest) -> str:
    """The plugin's fixtures follow ``on_cluster`` where a test uses it (else ``--anyop-fake``)."""
    if "on_cluster" in request.fixturenames:
        return str(request.getfixturevalue("on_cluster"))
    return "fake" if request.config.getoption("--anyop-fake") else "real"


def _fake(request: pytest.FixtureRequest) -> FakeCluster | None:
    """The test's FakeCluster if it runs on the fake, else ``None``."""
    if request.getfixturevalue("anyop_cluster") == "fake":
        fake: FakeCluster = request.getfixturevalue("fake_cluster")
        return fake
    return None


def _plane(request: pytest.FixtureRequest) -> LocalControlPlane:
    plane: LocalControlPlane = request.getfixturevalue("anyop_controlplane")
    return plane


@pytest.fixture
async def api(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    """A plain httpx client with the admin certificate, on the test's own backend."""
    if (fake := _fake(request)) is not None:
        async with fake.client(timeout=30) as client:
            yield client
        return
    plane = _plane(request)
    ctx = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=ctx, timeout=30) as c:
        yield c


@pytest.fixture
def kopfexample_crd(request: pytest.FixtureRequest) -> str:
    """The KopfExample CRD from examples/crd.yaml, Established."""
    if (fake := _fake(request)) is not None:
        fake.apply(EXAMPLES / "crd.yaml")
        return "kopfexamples.kopf.dev"
    name: str = request.getfixturevalue("real_kopfexample_crd")
    return name


@pytest.fixture(scope="session")
def real_kopfexample_crd(anyop_controlplane: LocalControlPlane) -> str:
    """The KopfExample CRD from examples/crd.yaml, applied and Established once per session."""
    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    kubectl(anyop_controlplane, "apply", "-f", str(EXAMPLES / "crd.yaml"))
    wait_for_crd(anyop_controlplane, "kopfexamples.kopf.dev")
    return "kopfexamples.kopf.dev"


@pytest.fixture(scope="session")
def widget_crd(anyop_controlplane: LocalControlPlane) -> str:
    """examples/21-typed's Widget CRD as `anyop manifests` wrote it, applied and Established."""
    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    crds = EXAMPLES / "21-typed" / "manifests" / "crds.yaml"
    kubectl(anyop_controlplane, "apply", "-f", str(crds))
    wait_for_crd(anyop_controlplane, "widgets.demo.example.com")
    return "widgets.demo.example.com"


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


@pytest.fixture
def peering_crds(request: pytest.FixtureRequest) -> None:
    """anyop's peering CRDs from manifests/, and Kopf's namespaced one."""
    if (fake := _fake(request)) is not None:
        fake.apply(MANIFESTS / "peering.yaml")
        fake.create(KOPF_PEERING_CRD)
        return
    request.getfixturevalue("real_peering_crds")


@pytest.fixture(scope="session")
def real_peering_crds(anyop_controlplane: LocalControlPlane) -> None:
    """anyop's peering CRDs from manifests/, and Kopf's namespaced one."""
    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    kubectl(anyop_controlplane, "apply", "-f", str(MANIFESTS / "peering.yaml"))
    kubectl(anyop_controlplane, "apply", "-f", "-", stdin=json.dumps(KOPF_PEERING_CRD))
    for name in ("anyoppeerings.anyop.dev", "clusteranyoppeerings.anyop.dev"):
        wait_for_crd(anyop_controlplane, name)
    wait_for_crd(anyop_controlplane, "kopfpeerings.kopf.dev")


@pytest.fixture
def pod_namespace(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering_crds: None,
) -> str:
    """A fresh namespace with the KopfExample and peering CRDs; needs the controllers."""
    if not anyop_controlplane.controllers:
        pytest.skip("needs kube-controller-manager (not with --anyop-bare)")
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for the Pod's mount namespace")
    return anyop_namespace
