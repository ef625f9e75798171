"""FakeCluster served in-process and over loopback, on both backends and on virtual time."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import trio
import trio.testing

from anyop.kube.auth import Vault
from anyop.kube.client import open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}


async def _namespace(api: httpx.AsyncClient) -> None:
    (await api.post("/api/v1/namespaces", json={"metadata": {"name": "ns"}})).raise_for_status()


async def test_in_process_client_creates_and_reads_objects() -> None:
    async with FakeCluster().client() as api:
        await _namespace(api)
        created = await api.post("/api/v1/namespaces/ns/configmaps", json=CM)
        fetched = await api.get("/api/v1/namespaces/ns/configmaps/a")
    assert created.status_code == 201
    assert fetched.json()["data"] == {"x": "1"}


async def test_loopback_server_answers_any_http_client_via_its_kubeconfig(tmp_path: Path) -> None:
    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        url = await tg.start(fake.serve)
        config = json.loads(fake.write_kubeconfig(tmp_path / "kubeconfig").read_text())
        async with httpx.AsyncClient(base_url=config["clusters"][0]["cluster"]["server"]) as api:
            await _namespace(api)
            await api.post("/api/v1/namespaces/ns/configmaps", json=CM)
            params = {"watch": "true", "timeoutSeconds": "1", "fieldSelector": "metadata.name=a"}
            path = "/api/v1/namespaces/ns/configmaps"
            async with api.stream("GET", path, params=params) as stream:
                body = await stream.aread()
        tg.cancel_scope.cancel()
    assert url.startswith("http://127.0.0.1:")
    assert [json.loads(line)["type"] for line in body.splitlines()] == ["ADDED"]


async def test_loopback_server_serves_https_with_the_ca_in_its_kubeconfig(tmp_path: Path) -> None:
    import base64
    import ssl

    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        url = await tg.start(functools.partial(fake.serve, tls=True))
        cluster = json.loads(fake.write_kubeconfig(tmp_path / "kubeconfig").read_text())[
            "clusters"
        ][0]["cluster"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        trusting = ssl.create_default_context(cadata=ca)
        async with httpx.AsyncClient(base_url=cluster["server"], verify=trusting) as api:
            await _namespace(api)
            created = await api.post("/api/v1/namespaces/ns/configmaps", json=CM)
        async with httpx.AsyncClient(base_url=url) as untrusting:  # the system's CAs only
            with pytest.raises(httpx.ConnectError):
                await untrusting.get("/api/v1/namespaces")
        tg.cancel_scope.cancel()
    assert url.startswith("https://127.0.0.1:")
    assert created.status_code == 201


async def test_anyops_own_client_works_through_the_transport_factory() -> None:
    fake = FakeCluster()
    vault = Vault()
    await vault.populate({"fake": ConnectionInfo(server="http://fake-cluster.invalid")})
    configmaps = Resource("", "v1", "configmaps", kind="ConfigMap", namespaced=True)
    async with open_client(vault, transport_factory=fake.transport_factory) as client:
        await client.create(
            Resource("", "v1", "namespaces", namespaced=False), {"metadata": {"name": "ns"}}
        )
        await client.create(configmaps, CM, namespace="ns")
        listed = await client.list(configmaps, namespace="ns")
    # and the namespace's kube-root-ca.crt, as in a cluster
    assert [item["metadata"]["name"] for item in listed.items] == ["a", "kube-root-ca.crt"]


async def test_two_clusters_with_one_seed_make_the_same_objects() -> None:
    bodies = []
    for _ in range(2):
        async with FakeCluster(seed=7).client() as api:
            await _namespace(api)
            made = await api.post("/api/v1/namespaces/ns/configmaps",
                                  json={"metadata": {"generateName": "g-"}})  # fmt: skip
            bodies.append(made.json())
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize("changing", [True, False])
def test_watch_timeouts_and_bookmarks_run_on_virtual_time(changing: bool) -> None:
    """A bookmark a minute, and two seconds before the end, whether the resource changes (in
    another namespace here: not an event of the watch's) or not."""

    async def main() -> list[str]:
        async with FakeCluster().client() as api:
            await _namespace(api)
            await api.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})

            async def change() -> None:
                while True:
                    await trio.sleep(30)
                    await api.post("/api/v1/namespaces/other/secrets",
                                   json={"metadata": {"generateName": "s-"}})  # fmt: skip

            params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "600"}
            async with trio.open_nursery() as nursery:
                if changing:
                    nursery.start_soon(change)
                async with api.stream("GET", "/api/v1/namespaces/ns/secrets", params=params) as r:
                    body = await r.aread()
                nursery.cancel_scope.cancel()
        return [json.loads(line)["type"] for line in body.splitlines()]

    clock = trio.testing.MockClock(autojump_threshold=0)
    types = trio.run(main, clock=clock)
    assert types == ["BOOKMARK"] * 10  # at each minute, and at 598 s
    assert clock.current_time() >= 600


async def test_a_compacted_resource_version_ends_a_watch_with_a_410_error_event() -> None:
    fake = FakeCluster()
    async with fake.client() as api:
        await _namespace(api)
        old = (await api.post("/api/v1/namespaces/ns/configmaps", json=CM)).json()
        fake.compact()
        rv = old["metadata"]["resourceVersion"]
        params = {"watch": "1", "resourceVersion": str(int(rv) - 1)}
        async with api.stream("GET", "/api/v1/namespaces/ns/configmaps", params=params) as resp:
            events = [json.loads(line) for line in (await resp.aread()).splitlines()]
        exact = {"resourceVersion": str(int(rv) - 1), "resourceVersionMatch": "Exact"}
        listed = await api.get("/api/v1/namespaces/ns/configmaps", params=exact)
    assert [(e["type"], e["object"]["code"], e["object"]["reason"]) for e in events] == [
        ("ERROR", 410, "Expired")
    ]
    assert (listed.status_code, listed.json()["reason"]) == (410, "Expired")


async def test_a_bad_request_gets_a_status_and_the_cluster_keeps_serving() -> None:
    async with FakeCluster().client() as api:
        bad = await api.post("/api/v1/namespaces", content=b"{garbage")
        good = await api.get("/api/v1/namespaces/default")
    assert (bad.status_code, bad.json()["reason"]) == (400, "BadRequest")
    assert good.status_code == 200


async def test_loopback_status_lines_carry_the_api_servers_reason_phrases() -> None:
    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        url = await tg.start(fake.serve)
        async with httpx.AsyncClient(base_url=url) as api:
            await _namespace(api)
            missing = await api.get("/api/v1/namespaces/ns/configmaps/missing")
            nameless = {**CM, "metadata": {}}
            invalid = await api.post("/api/v1/namespaces/ns/configmaps", json=nameless)
            found = await api.get("/api/v1/namespaces/ns")
        tg.cancel_scope.cancel()
    assert (missing.status_code, missing.reason_phrase) == (404, "Not Found")
    assert (invalid.status_code, invalid.reason_phrase) == (422, "Unprocessable Entity")
    assert (found.status_code, found.reason_phrase) == (200, "OK")


async def test_a_failure_of_the_fake_itself_is_a_500_and_the_server_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeCluster()
    respond = fake.respond

    async def broken(request: Any) -> Any:
        if request.path.endswith("/broken"):
            raise KeyError("a bug")
        return await respond(request)

    monkeypatch.setattr(fake, "respond", broken)
    async with anyio.create_task_group() as tg:
        url = await tg.start(fake.serve)
        async with httpx.AsyncClient(base_url=url) as api:
            failed = await api.get("/api/v1/namespaces/broken")
            found = await api.get("/api/v1/namespaces/default")
        tg.cancel_scope.cancel()
    assert (failed.status_code, failed.json()["reason"]) == (500, "InternalError")
    assert "KeyError: 'a bug'" in failed.json()["message"]
    assert found.status_code == 200
    assert "FakeCluster failed to answer GET /api/v1/namespaces/broken" in caplog.text
