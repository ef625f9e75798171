"""anyop's pytest plugin: a real local control plane and fresh namespaces for operator tests.

Installed with anyop (a ``pytest11`` entry point), so these fixtures are available in any project
that has anyop installed:

- ``anyop_controlplane``: a session-wide :class:`~anyop.testing.LocalControlPlane` (etcd +
  kube-apiserver on loopback), started on first use and stopped at the end of the session.
- ``anyop_kubeconfig``: the path of its admin kubeconfig; ``KUBECONFIG`` points to it during a test.
- ``anyop_namespace``: a fresh namespace for one test, deleted after it.
- ``anyop_apply``: apply YAML manifests (a path or a string) with the built ``kubectl``.

The fixtures are sync, so they work with pytest-trio, anyio's pytest plugin and plain tests alike.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from anyop.testing.controlplane import LocalControlPlane

__all__ = [
    "Apply",
    "anyop_apply",
    "anyop_controlplane",
    "anyop_kubeconfig",
    "anyop_namespace",
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
    name = f"test-{uuid.uuid4().hex[:10]}"
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
