"""The client libraries' logins read ``KUBECONFIG`` when they log in, not when first imported."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import anyop

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: later
  cluster: {server: "https://later.invalid:6443", insecure-skip-tls-verify: true}
users:
- name: someone
  user: {token: "a-token"}
contexts:
- name: later
  context: {cluster: later, user: someone}
current-context: later
"""


@pytest.fixture
def kubeconfig_set_after_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The libraries are imported while ``KUBECONFIG`` names nothing; it is set afterwards."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config to fall back on
    pytest.importorskip("kubernetes.config")  # in the dev environment, not the oldest
    pytest.importorskip("kubernetes_asyncio.config")
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))


@pytest.mark.usefixtures("kubeconfig_set_after_import")
def test_the_kubernetes_clients_login_reads_kubeconfig_when_it_logs_in() -> None:
    info = anyop.login_via_client(logger=logging.getLogger("test"))
    assert info is not None
    assert (info.server, info.token) == ("https://later.invalid:6443", "a-token")


@pytest.mark.anyio
@pytest.mark.usefixtures("kubeconfig_set_after_import")
async def test_the_kubernetes_asyncio_login_reads_kubeconfig_when_it_logs_in() -> None:
    info = await anyop.login_via_async_client(logger=logging.getLogger("test"))
    assert info is not None
    assert (info.server, info.token) == ("https://later.invalid:6443", "a-token")
