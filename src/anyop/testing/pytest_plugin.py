"""anyop's pytest plugin: a real local control plane, fresh namespaces, and a running operator.

Installed with anyop (a ``pytest11`` entry point), so these fixtures are available in any project
that has anyop installed. Sync, for any test (pytest-trio, AnyIO's plugin, plain tests):

- ``anyop_controlplane``: a session-wide :class:`~anyop.testing.LocalControlPlane` (etcd +
  kube-apiserver on loopback), started on first use and stopped at the end of the session.
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
"""

from __future__ import annotations

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
    from anyop.testing.handle import RunningOperator

__all__ = [
    "Apply",
    "anyop_api",
    "anyop_apply",
    "anyop_async_namespace",
    "anyop_controlplane",
    "anyop_kubeconfig",
    "anyop_namespace",
    "anyop_operator",
    "anyop_registry",
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


@pytest.fixture(scope="session")
def anyop_controlplane() -> Iterator[LocalControlPlane]:
    """A real etcd + kube-apiserver for the whole test session."""
    with LocalControlPlane() as plane:
        yield plane


@pytest.fixture
def anyop_kubeconfig(
    anyop_controlplane: LocalControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The admin kubeconfig; ``KUBECONFIG`` points to it for the duration of the test."""
    monkeypatch.setenv("KUBECONFIG", str(anyop_controlplane.kubeconfig))
    return anyop_controlplane.kubeconfig


@pytest.fixture
def anyop_namespace(anyop_controlplane: LocalControlPlane) -> Iterator[str]:
    """A new namespace for one test; deleted after it (it may stay Terminating: no controllers)."""
    name = _new_namespace_name()
    kubectl(anyop_controlplane, "create", "namespace", name)
    yield name
    kubectl(anyop_controlplane, "delete", "namespace", name, "--wait=false")


@pytest.fixture
def anyop_apply(anyop_controlplane: LocalControlPlane) -> Apply:
    """Apply manifests: ``anyop_apply(path_or_yaml, namespace=None)``; CRDs are awaited.

    A custom resource definition is waited for until it is Established, so objects of it can be
    created right after.
    """

    def apply(manifest: str | os.PathLike[str], namespace: str | None = None) -> str:
        text = Path(manifest).read_text() if _is_path(manifest) else str(manifest)
        ns = ["--namespace", namespace] if namespace else []
        out = kubectl(anyop_controlplane, "apply", *ns, "-o", "name", "-f", "-", stdin=text)
        crds = [line for line in out.split() if line.startswith("customresourcedefinition")]
        for crd in crds:
            wait_for_crd(anyop_controlplane, crd.split("/", 1)[1])
        return out

    return apply


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
async def anyop_api(anyop_controlplane: LocalControlPlane) -> AsyncIterator[httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` of the API server with admin credentials; ``base_url`` is set."""
    import httpx

    tls = anyop_controlplane.ssl_context()
    async with httpx.AsyncClient(base_url=anyop_controlplane.server, verify=tls, timeout=30) as api:
        yield api


@pytest.fixture
async def anyop_async_namespace(anyop_api: httpx.AsyncClient) -> AsyncIterator[str]:
    """A new namespace for one test, created via the API; deleted after it (it may stay
    Terminating: no controllers)."""
    name = _new_namespace_name()
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    (await anyop_api.post("/api/v1/namespaces", json=body)).raise_for_status()
    yield name
    response = await anyop_api.delete(f"/api/v1/namespaces/{name}")
    if response.status_code != 404:  # the test may have deleted it itself
        response.raise_for_status()


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
