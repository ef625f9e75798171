"""anyop's pytest plugin: a real local control plane, fresh namespaces, and a running operator.

Installed with anyop (a ``pytest11`` entry point), so these fixtures are available in any project
that has anyop installed. Sync, for any test (pytest-trio, AnyIO's plugin, plain tests):

- ``anyop_controlplane``: a session-wide :class:`~anyop.testing.LocalControlPlane` (etcd,
  kube-apiserver, kube-controller-manager, kube-scheduler and KWOK with a fake node, on loopback),
  started on first use and stopped at the end of the session; ``pytest --anyop-bare`` starts only
  etcd and kube-apiserver.
- ``anyop_kubeconfig``: the path of its admin kubeconfig; ``KUBECONFIG`` points to it during a test.
- ``anyop_namespace``: a fresh namespace for one test, deleted after it.
- ``anyop_apply``: apply YAML manifests (a path or a string) with the built ``kubectl``.
- ``anyop_registry``: the handlers that ``anyop_operator`` serves (the default registry unless
  overridden).

Async, for async tests run by pytest-trio (``trio_mode = true`` or ``@pytest.mark.trio``) or by
AnyIO's plugin (``@pytest.mark.anyio``, on asyncio or Trio):

- ``anyop_api``: an ``httpx.AsyncClient`` of the API server with admin credentials.
- ``anyop_async_namespace``: a fresh namespace for one test, created and deleted via the API.
- ``anyop_operator``: a :class:`~anyop.testing.RunningOperator`: the operator serving
  ``anyop_registry``'s handlers in that namespace, in the test's own event loop, ready.

With ``pytest --anyop-fake`` (or ``anyop_cluster`` overridden to ``"fake"``), the fixtures above
but ``anyop_controlplane`` give a :class:`~anyop.testing.FakeCluster` instead: the same tests run
without a control plane. And directly (in-process, on the test's clock):

- ``fake_cluster``: a fresh FakeCluster for one test (sync), seeded by ``fake_cluster_seed`` (0;
  override or parametrize it); apply CRDs with ``fake_cluster.apply(path_or_yaml)``.
- ``fake_operator``: the same :class:`~anyop.testing.RunningOperator` as ``anyop_operator``, but
  serving a fresh namespace of ``fake_cluster``; its ``api`` is an in-process client.
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from anyop.testing.controlplane import LocalControlPlane

if TYPE_CHECKING:
    import httpx

    from anyop.handlers.registry import OperatorRegistry
    from anyop.testing.fake.cluster import FakeCluster
    from anyop.testing.handle import RunningOperator

__all__ = [
    "Apply",
    "anyop_api",
    "anyop_apply",
    "anyop_async_namespace",
    "anyop_cluster",
    "anyop_controlplane",
    "anyop_kubeconfig",
    "anyop_namespace",
    "anyop_operator",
    "anyop_registry",
    "fake_cluster",
    "fake_cluster_seed",
    "fake_operator",
    "kubectl",
    "wait_for_crd",
]

Apply = Callable[..., str]


def kubectl(plane: LocalControlPlane, *args: str, stdin: str | None = None) -> str:
    """Run the control plane's kubectl with its admin kubeconfig; return stdout.

    Raises:
        AssertionError: kubectl failed (with its stderr), so that tests report it plainly.
    """
    cmd = [str(plane.assets.kubectl), f"--kubeconfig={plane.kubeconfig}", *args]
    proc = subprocess.run(
        cmd, input=stdin, capture_output=True, text=True, check=False, timeout=120
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def wait_for_crd(plane: LocalControlPlane, name: str, timeout: float = 60) -> None:
    """Wait until a CRD is Established and its objects can be listed.

    Right after it is Established, the API server may still answer 429 ("storage is
    (re)initializing") for a second or so.
    """
    kubectl(
        plane, "wait", "--for=condition=Established", f"--timeout={timeout:.0f}s", f"crd/{name}"
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            kubectl(plane, "get", name, "--all-namespaces", "--ignore-not-found", "-o", "name")
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--anyop-bare``: the control plane without controllers, scheduler and fake nodes.
    ``--anyop-fake``: the fixtures give a FakeCluster instead (see ``anyop_cluster``)."""
    parser.addoption(
        "--anyop-bare",
        action="store_true",
        help="anyop_controlplane: only etcd and kube-apiserver (no controllers, no Pods run).",
    )
    parser.addoption(
        "--anyop-fake",
        action="store_true",
        help="anyop_api, anyop_namespace, anyop_apply, anyop_kubeconfig and anyop_operator: "
        "a FakeCluster in the test's process instead of the local control plane.",
    )


@pytest.fixture
def anyop_cluster(request: pytest.FixtureRequest) -> str:
    """Where the fixtures below point: ``"real"`` (the local control plane), or ``"fake"``
    (the test's ``fake_cluster``) with ``pytest --anyop-fake``.

    Override it to choose per test, or parametrize it to run tests on both
    (``@pytest.mark.parametrize("anyop_cluster", ["real", "fake"])``).
    """
    return "fake" if request.config.getoption("--anyop-fake") else "real"


def _fake_of(request: pytest.FixtureRequest) -> FakeCluster | None:
    """The test's ``fake_cluster`` if ``anyop_cluster`` says so, else ``None``."""
    if request.getfixturevalue("anyop_cluster") != "fake":
        return None
    fake: FakeCluster = request.getfixturevalue("fake_cluster")
    return fake


def _plane_of(request: pytest.FixtureRequest) -> LocalControlPlane:
    plane: LocalControlPlane = request.getfixturevalue("anyop_controlplane")
    return plane


@pytest.fixture(scope="session")
def anyop_controlplane(request: pytest.FixtureRequest) -> Iterator[LocalControlPlane]:
    """A real control plane for the whole test session (a cluster unless ``--anyop-bare``)."""
    cluster = not request.config.getoption("--anyop-bare")
    with LocalControlPlane(controllers=cluster, nodes=cluster) as plane:
        yield plane


@pytest.fixture(autouse=True)
def _anyop_controlplane_revived(request: pytest.FixtureRequest) -> None:
    """Before each test on the session's control plane: its cluster components that exited
    meanwhile are started again (:meth:`LocalControlPlane.revive`)."""
    if "anyop_controlplane" in request.fixturenames:
        _plane_of(request).revive()


@pytest.fixture
def anyop_kubeconfig(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Path]:
    """The admin kubeconfig; ``KUBECONFIG`` points to it for the duration of the test.

    On a FakeCluster, it names the cluster's in-process URL, to which anyop's clients are routed
    meanwhile (see :meth:`FakeCluster.routed <anyop.testing.FakeCluster.routed>`).
    """
    if (fake := _fake_of(request)) is not None:
        path = fake.write_kubeconfig(tmp_path / "kubeconfig", in_process=True)
        monkeypatch.setenv("KUBECONFIG", str(path))
        with fake.routed():
            yield path
        return
    plane = _plane_of(request)
    monkeypatch.setenv("KUBECONFIG", str(plane.kubeconfig))
    yield plane.kubeconfig


@pytest.fixture
def anyop_namespace(request: pytest.FixtureRequest) -> Iterator[str]:
    """A new namespace for one test; deleted after it (it stays Terminating with --anyop-bare).

    Before it is deleted, the custom objects in it lose the finalizers that a stopped operator
    left on them (:mod:`anyop.testing.leftovers`), so that it goes.
    """
    import httpx

    from anyop.testing.leftovers import release_finalizers

    name = _new_namespace_name()
    if (fake := _fake_of(request)) is not None:
        fake.create(_namespace(name))
        yield name
        return
    plane = _plane_of(request)
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as api:
        _answered(api.post("/api/v1/namespaces", json=_namespace(name)), "create", name)
        yield name
        release_finalizers(api, name)
        _answered(api.delete(f"/api/v1/namespaces/{name}"), "delete", name)


def _namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _answered(response: httpx.Response, verb: str, name: str) -> None:
    """Fail the test plainly if the API server refused to create or delete a namespace (a
    namespace that the test deleted itself is gone already: fine)."""
    if response.is_success or (verb == "delete" and response.status_code == 404):
        return
    raise AssertionError(f"{verb} namespace {name}: {response.status_code} {response.text}")


@pytest.fixture
def anyop_apply(request: pytest.FixtureRequest) -> Apply:
    """Apply manifests: ``anyop_apply(path_or_yaml, namespace=None)``; CRDs are awaited.

    A custom resource definition is waited for until it is Established, so objects of it can be
    created right after. It answers as ``kubectl apply -o name`` does.
    """
    if (fake := _fake_of(request)) is not None:
        return functools.partial(_apply_to_fake, fake)
    anyop_controlplane = _plane_of(request)

    def apply(manifest: str | os.PathLike[str], namespace: str | None = None) -> str:
        text = Path(manifest).read_text() if _is_path(manifest) else str(manifest)
        ns = ["--namespace", namespace] if namespace else []
        out = kubectl(anyop_controlplane, "apply", *ns, "-o", "name", "-f", "-", stdin=text)
        crds = [line for line in out.split() if line.startswith("customresourcedefinition")]
        for crd in crds:
            wait_for_crd(anyop_controlplane, crd.split("/", 1)[1])
        return out

    return apply


def _apply_to_fake(
    fake: FakeCluster, manifest: str | os.PathLike[str], namespace: str | None = None
) -> str:
    import yaml

    text = Path(manifest).read_text() if _is_path(manifest) else str(manifest)
    documents = [dict(document) for document in yaml.safe_load_all(text) if document]
    names = []
    for document in documents:
        if namespace is not None:  # as ``kubectl -n``: cluster-scoped kinds ignore it
            document["metadata"] = {"namespace": namespace, **(document.get("metadata") or {})}
        made = fake.create(document)
        group = made["apiVersion"].rpartition("/")[0]
        names.append(
            f"{made['kind'].lower()}{'.' + group if group else ''}/{made['metadata']['name']}"
        )
    return "".join(f"{name}\n" for name in names)


def _is_path(manifest: str | os.PathLike[str]) -> bool:
    if isinstance(manifest, os.PathLike):
        return True
    return "\n" not in manifest and manifest.endswith((".yaml", ".yml", ".json"))


def _new_namespace_name() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


# -- the operator in the test's own event loop (pytest-trio, or AnyIO's plugin) -----------------


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    """The handlers that ``anyop_operator`` serves: the default registry, where ``@anyop.on...``
    puts handlers unless given ``registry=`` (as ``anyop run`` serves them).

    Override it to serve other handlers: a fixture of the same name in a ``conftest.py``, a test
    module or a class, or ``@pytest.mark.parametrize("anyop_registry", [registry])`` on one test.
    """
    from anyop.handlers.registry import get_default_registry

    return get_default_registry()


@pytest.fixture
async def anyop_api(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` of the API server with admin credentials; ``base_url`` is set
    (on a FakeCluster, an in-process client)."""
    import httpx

    if (fake := _fake_of(request)) is not None:
        async with fake.client(timeout=30) as client:
            yield client
        return
    plane = _plane_of(request)
    tls = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=tls, timeout=30) as api:
        yield api


@pytest.fixture
async def anyop_async_namespace(anyop_api: httpx.AsyncClient) -> AsyncIterator[str]:
    """A new namespace for one test, created via the API; deleted after it as
    ``anyop_namespace`` is (it stays Terminating with --anyop-bare: no namespace controller)."""
    from anyop.testing.leftovers import release_finalizers_async

    name = _new_namespace_name()
    _answered(await anyop_api.post("/api/v1/namespaces", json=_namespace(name)), "create", name)
    yield name
    await release_finalizers_async(anyop_api, name)
    _answered(await anyop_api.delete(f"/api/v1/namespaces/{name}"), "delete", name)


@pytest.fixture
async def anyop_operator(
    anyop_registry: OperatorRegistry,
    anyop_api: httpx.AsyncClient,
    anyop_async_namespace: str,
    anyop_kubeconfig: Path,
) -> AsyncIterator[RunningOperator]:
    """The operator serving ``anyop_registry``'s handlers in ``anyop_async_namespace``.

    Its positional parameters are the fixtures it uses (pytest passes them by name).

    It runs in the test's own event loop and is ready (its startup handlers done, every resource
    listed) when the test starts; it is stopped gracefully after the test (its cleanup handlers
    run). What the operator raised fails the test: from the handle's waits as soon as it
    happens, else at teardown.
    """
    from anyop.testing.handle import open_operator

    async with open_operator(
        anyop_registry, namespace=anyop_async_namespace, api=anyop_api
    ) as operator:
        yield operator


# -- FakeCluster: no control plane, the test's own event loop and clock -------------------------


@pytest.fixture
def fake_cluster_seed() -> int:
    """The seed of ``fake_cluster`` (uids, generated names, seeded faults): 0 unless overridden
    or parametrized (``@pytest.mark.parametrize("fake_cluster_seed", [1, 2])``)."""
    return 0


@pytest.fixture
def fake_cluster(fake_cluster_seed: int) -> FakeCluster:
    """A fresh :class:`~anyop.testing.FakeCluster` for one test: namespaces ``default`` and the
    ``kube-*`` ones, the built-in kinds; add CRDs with ``fake_cluster.apply(...)``."""
    from anyop.testing.fake.cluster import FakeCluster

    return FakeCluster(seed=fake_cluster_seed)


@pytest.fixture
async def fake_operator(
    anyop_registry: OperatorRegistry, fake_cluster: FakeCluster
) -> AsyncIterator[RunningOperator]:
    """The operator serving ``anyop_registry``'s handlers in a new namespace of ``fake_cluster``.

    As ``anyop_operator`` (ready when the test starts, stopped gracefully after it), but without
    a socket: the operator and the handle's ``api`` reach the cluster in-process, so they run on
    the test's clock (virtual under Trio's ``MockClock``). Apply the CRDs the handlers need in
    ``fake_cluster`` before this fixture starts (in a fixture that ``fake_operator``'s test
    requests first, or in an override of ``fake_cluster``).
    """
    from anyop.testing.handle import open_operator

    namespace = _new_namespace_name()
    fake_cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    vault = await fake_cluster.vault()
    with fake_cluster.routed():
        async with (
            fake_cluster.client(timeout=30) as api,
            open_operator(anyop_registry, namespace=namespace, api=api, vault=vault) as operator,
        ):
            yield operator
