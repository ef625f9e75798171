"""Every namespace of a FakeCluster with controllers has the ServiceAccount ``default``, kept
as kube-controller-manager keeps it."""

from __future__ import annotations

import pytest

from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

DEFAULT = "/api/v1/namespaces/ns/serviceaccounts/default"


async def test_every_namespace_has_a_default_service_account_that_comes_back() -> None:
    async with FakeCluster().client() as api:
        system = await api.get("/api/v1/namespaces/kube-system/serviceaccounts/default")
        await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
        made = (await api.get(DEFAULT)).json()
        await api.delete(DEFAULT)
        again = await api.get(DEFAULT)
        await api.delete("/api/v1/namespaces/ns")
        gone = await api.get(DEFAULT)
    assert system.status_code == 200
    assert made["metadata"]["name"] == "default"
    assert "managedFields" not in made["metadata"]  # (it owns no field: as the real one)
    assert again.status_code == 200
    assert again.json()["metadata"]["uid"] != made["metadata"]["uid"]
    assert gone.status_code == 404


async def test_a_bare_api_server_makes_no_service_account() -> None:
    async with FakeCluster(controllers=False).client() as api:
        await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})
        assert (await api.get(DEFAULT)).status_code == 404
