"""Every namespace of a FakeCluster has kube-root-ca.crt, kept as kube-controller-manager keeps
it (compared with the real cluster in tests/e2e/test_kubectl_session_e2e.py)."""

from __future__ import annotations

import functools

import anyio
import pytest

from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

ROOT = "/api/v1/namespaces/ns/configmaps/kube-root-ca.crt"


async def test_a_namespace_gets_the_ca_that_signs_the_servers_certificate() -> None:
    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        await tg.start(functools.partial(fake.serve, tls=True))
        async with fake.client() as api:
            await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
            found = (await api.get(ROOT)).json()
            default = await api.get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt")
        tg.cancel_scope.cancel()
    assert fake.certificate_authority is not None
    assert found["data"] == {"ca.crt": fake.certificate_authority.decode()}
    assert "kubernetes.io/description" in found["metadata"]["annotations"]
    assert found["metadata"]["managedFields"][0]["manager"] == "kube-controller-manager"
    assert default.status_code == 200


async def test_it_comes_back_when_deleted_or_changed_but_not_in_a_namespace_going_away() -> None:
    async with FakeCluster().client() as api:
        await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
        original = (await api.get(ROOT)).json()["data"]
        await api.delete(ROOT)
        recreated = (await api.get(ROOT)).json()["data"]
        await api.patch(ROOT, json={"data": {"ca.crt": "mine"}},
                        headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
        restored = (await api.get(ROOT)).json()["data"]
        await api.delete("/api/v1/namespaces/ns")
        gone = await api.get(ROOT)
    assert recreated == restored == original
    assert gone.status_code == 404


async def test_a_bare_api_server_publishes_nothing() -> None:
    async with FakeCluster(controllers=False).client() as api:
        await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
        missing = await api.get(ROOT)
    assert missing.status_code == 404
