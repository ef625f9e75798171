"""The metrics server on loopback, with a scripted API server behind its reviews.

The API server is a respx router (tokens: ``READER`` may read the metrics, ``STRANGER`` is
valid but may not, anything else is not authenticated); the scrapes are real HTTPS requests.
"""

from __future__ import annotations

import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import respx

from anyop.engine.operator.metrics_access import MetricsAccess
from anyop.engine.operator.metrics_server import metrics_address, metrics_context, serve_metrics
from anyop.errors import ConfigError
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.reviews import ACCESS_REVIEWS, TOKEN_REVIEWS
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings, ServerSettings
from anyop.webhooks.certs import CertificateAuthority

pytestmark = pytest.mark.anyio

API = "https://k8s.test:6443"
DEADLINE = 10  # seconds; only reached when a test is broken
READER, STRANGER = "tok-R-8d1f2c", "tok-S-77aa01"
USERS = {READER: "system:serviceaccount:mon:prometheus", STRANGER: "system:serviceaccount:x:y"}


def token_review(request: httpx.Request) -> httpx.Response:
    token = json.loads(request.content)["spec"]["token"]
    if token not in USERS:
        return httpx.Response(201, json={"status": {"authenticated": False, "error": "x"}})
    user = {"username": USERS[token], "groups": ["system:authenticated"]}
    return httpx.Response(201, json={"status": {"authenticated": True, "user": user}})


def access_review(request: httpx.Request) -> httpx.Response:
    spec = json.loads(request.content)["spec"]
    allowed = spec["user"] == USERS[READER] and spec["nonResourceAttributes"] == {
        "path": "/metrics",
        "verb": "get",
    }
    return httpx.Response(201, json={"status": {"allowed": allowed}})


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=API, using=None, assert_all_called=False) as router:
        router.post(TOKEN_REVIEWS, name="tokenreviews").mock(side_effect=token_review)
        router.post(ACCESS_REVIEWS, name="accessreviews").mock(side_effect=access_review)
        yield router


@contextlib.asynccontextmanager
async def operator_client(api: respx.MockRouter) -> AsyncIterator[KubeClient]:
    vault = Vault()
    await vault.populate({"op": ConnectionInfo(API, token="operator-token")})
    settings = OperatorSettings.model_validate({"networking": {"error_backoffs": [0.001]}})
    factory = lambda info, context: httpx.MockTransport(api.async_handler)  # noqa: E731
    async with open_client(vault, settings=settings, transport_factory=factory) as client:
        yield client


@contextlib.asynccontextmanager
async def scraping(
    api: respx.MockRouter,
    server: ServerSettings | None = None,
    *,
    logged_in: bool = True,
    verify: ssl.SSLContext | bool = False,
) -> AsyncIterator[httpx.AsyncClient]:
    """Serve the metrics securely on a free port; yield a client to it (no token of its own)."""
    metrics = Metrics()
    metrics.request("GET", 200, 0.01)
    access = MetricsAccess(path="/metrics", allow_ttl=60, deny_ttl=10)
    address = metrics_address("https://127.0.0.1:0/metrics", insecure=False)
    async with operator_client(api) as client, anyio.create_task_group() as tg:
        with access.using(client) if logged_in else contextlib.nullcontext():
            serve = serve_metrics
            bound = await tg.start(serve, metrics, address, server or ServerSettings(), access)
            async with httpx.AsyncClient(
                base_url=bound.url(), verify=verify, timeout=DEADLINE
            ) as scraper:
                yield scraper
        tg.cancel_scope.cancel()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def reviews(api: respx.MockRouter) -> int:
    return int(api["tokenreviews"].call_count + api["accessreviews"].call_count)


async def test_an_authorised_reader_gets_the_metrics_and_the_cache_spares_the_api(
    api: respx.MockRouter,
) -> None:
    async with scraping(api) as scraper:
        scrapes = [await scraper.get("/metrics", headers=bearer(READER)) for _ in range(20)]
    assert {r.status_code for r in scrapes} == {200}
    assert 'rest_client_requests_total{code="200",method="GET"} 1.0' in scrapes[0].text
    assert scrapes[0].headers["content-type"].startswith("text/plain")
    assert (api["tokenreviews"].call_count, api["accessreviews"].call_count) == (1, 1)


async def test_without_a_token_401_and_the_api_is_not_asked(api: respx.MockRouter) -> None:
    async with scraping(api) as scraper:
        response = await scraper.get("/metrics")
        other = await scraper.get("/anything")
    assert (response.status_code, other.status_code) == (401, 401)
    assert response.text == "Unauthorized\n"
    assert response.headers["www-authenticate"] == "Bearer"
    assert reviews(api) == 0


async def test_an_unknown_token_401_a_valid_one_without_permission_403(
    api: respx.MockRouter,
) -> None:
    async with scraping(api) as scraper:
        wrong = [await scraper.get("/metrics", headers=bearer("wrong")) for _ in range(3)]
        stranger = [await scraper.get("/metrics", headers=bearer(STRANGER)) for _ in range(3)]
    assert [r.status_code for r in wrong] == [401] * 3
    assert [r.status_code for r in stranger] == [403] * 3
    assert {r.text for r in stranger} == {"Forbidden\n"}
    assert "rest_client" not in wrong[0].text + stranger[0].text
    assert reviews(api) == 1 + 2  # refusals are kept too: one review each


async def test_only_an_authorised_reader_learns_of_other_paths_and_methods(
    api: respx.MockRouter,
) -> None:
    async with scraping(api) as scraper:
        stranger = await scraper.get("/other", headers=bearer(STRANGER))
        missing = await scraper.get("/other", headers=bearer(READER))
        posted = await scraper.post("/metrics", headers=bearer(READER), content=b"x" * 100)
    assert stranger.status_code == 403
    assert missing.status_code == 404
    assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")


async def test_before_the_operator_logs_in_scrapes_get_503(api: respx.MockRouter) -> None:
    async with scraping(api, logged_in=False) as scraper:
        response = await scraper.get("/metrics", headers=bearer(READER))
    assert (response.status_code, response.text) == (503, "Service Unavailable\n")
    assert reviews(api) == 0


async def test_failing_reviews_answer_500_without_detail_logged_once_and_recover(
    api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    forbidden = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "nope"}
    api["tokenreviews"].mock(return_value=httpx.Response(403, json=forbidden))
    caplog.set_level(logging.INFO, logger="anyop.engine")
    async with scraping(api) as scraper:
        failed = [await scraper.get("/metrics", headers=bearer(READER)) for _ in range(3)]
        api["tokenreviews"].mock(side_effect=token_review)
        recovered = await scraper.get("/metrics", headers=bearer(READER))
    assert [r.status_code for r in failed] == [500] * 3
    assert {r.text for r in failed} == {"Internal Server Error\n"}
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "cannot be reviewed" in errors[0].getMessage()
    assert READER not in caplog.text  # the token is never logged
    assert recovered.status_code == 200
    assert "The reviews of the metrics' readers work again." in caplog.messages
    assert api["tokenreviews"].call_count == 4  # failures are not kept


async def test_garbage_and_plain_http_get_nothing_and_the_server_keeps_serving(
    api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    async with scraping(api) as scraper:
        port = scraper.base_url.port
        assert port is not None
        async with httpx.AsyncClient(timeout=DEADLINE) as plain:
            with pytest.raises(httpx.HTTPError):
                await plain.get(f"http://127.0.0.1:{port}/metrics", headers=bearer(READER))
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(b"\x16\x03\x01\x00\x05garbage" * 10)
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                await stream.receive()
        odd = await scraper.get("/metrics", headers={"Authorization": "Bearer a b"})
        after = await scraper.get("/metrics", headers=bearer(READER))
    assert odd.status_code == 401
    assert after.status_code == 200
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_certificate_from_files_is_served_and_reloaded_when_it_changes(
    api: respx.MockRouter, tmp_path: Path
) -> None:
    ca = CertificateAuthority("test-ca")
    certfile, keyfile = tmp_path / "tls.crt", tmp_path / "tls.key"
    ca.issue("127.0.0.1", sans=["127.0.0.1"], server=True).write(certfile, keyfile)
    trust = ssl.create_default_context(cadata=ca.cert_pem.decode())
    server = ServerSettings(
        metrics_certfile=str(certfile),
        metrics_keyfile=str(keyfile),
        metrics_cert_check_interval=0.02,
    )
    async with scraping(api, server, verify=trust) as scraper:
        assert (await scraper.get("/metrics", headers=bearer(READER))).status_code == 200
        renewed = CertificateAuthority("renewed-ca")
        renewed.issue("127.0.0.1", sans=["127.0.0.1"], server=True).write(certfile, keyfile)
        new_trust = ssl.create_default_context(cadata=renewed.cert_pem.decode())
        port = scraper.base_url.port
        with anyio.fail_after(DEADLINE):
            while True:
                async with httpx.AsyncClient(verify=new_trust, timeout=DEADLINE) as fresh:
                    try:
                        url = f"https://127.0.0.1:{port}/metrics"
                        response = await fresh.get(url, headers=bearer(READER))
                        break
                    except httpx.ConnectError:  # still the old certificate
                        await anyio.sleep(0.02)
    assert response.status_code == 200


def test_only_one_of_the_certificate_files_is_a_clear_error() -> None:
    address = metrics_address("https://127.0.0.1:0/metrics", insecure=False)
    with pytest.raises(ConfigError, match="both metrics_certfile and metrics_keyfile"):
        metrics_context(address, ServerSettings(metrics_certfile="/nonexistent"))


def test_unreadable_certificate_files_are_a_clear_error(tmp_path: Path) -> None:
    address = metrics_address("https://127.0.0.1:0/metrics", insecure=False)
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    files = dict(metrics_certfile=str(tmp_path / "tls.crt"), metrics_keyfile=str(tmp_path / "k"))
    with pytest.raises(ConfigError, match="The metrics certificate cannot be loaded"):
        metrics_context(address, ServerSettings.model_validate(files))


async def test_plain_http_serves_anyone_after_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    address = metrics_address("http://127.0.0.1:0/metrics", insecure=True)
    async with anyio.create_task_group() as tg:
        bound = await tg.start(serve_metrics, metrics, address, ServerSettings(), None)
        async with httpx.AsyncClient(base_url=bound.url(), timeout=DEADLINE) as scraper:
            response = await scraper.get("/metrics")
        tg.cancel_scope.cancel()
    assert response.status_code == 200
    assert "plain HTTP" in caplog.text
    assert any(r.levelno == logging.WARNING for r in caplog.records)


async def test_an_operator_with_plain_http_metrics_does_not_start_without_the_flag() -> None:
    from anyop.engine.operator.serve import serve
    from anyop.handlers.registry import OperatorRegistry

    with pytest.raises(ConfigError, match="--metrics-insecure"):
        await serve(
            OperatorRegistry(), clusterwide=True, metrics_endpoint="http://127.0.0.1:0/metrics"
        )
