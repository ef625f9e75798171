"""A webhook configuration whose caBundle went wrong while the operator runs (fault matrix row 49).

The startup check cannot see it: someone (or something) replaced the caBundle of the managed
ValidatingWebhookConfiguration with another CA's. The real kube-apiserver then fails every
admission with its x509 error, and the operator tells why on its side: the TLS handshakes that
the API server broke off are counted in ``anyop_webhook_tls_errors_total{reason="bad_certificate"}``
(Go's TLS client sends that alert for any x509 error) and said in one WARNING that points at the
caBundle.
"""

from __future__ import annotations

import base64
import logging
import socket
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.test_engine_e2e import DEADLINE, running, url
from tests.e2e.test_webhooks_e2e import (
    ADMISSION,
    PROBE_WARNING,
    kex,
    managed_name,
    with_probe,
)

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.webhooks.certs import CertificateAuthority
from anyop.webhooks.server import WebhookServer

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

X509_UNKNOWN_AUTHORITY = "x509: certificate signed by unknown authority"
STORM = 20  # refused admissions


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tls_errors(text: str) -> dict[str, float]:
    return {
        sample.labels["reason"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "anyop_webhook_tls_errors_total"
    }


async def until_active(api: httpx.AsyncClient, namespace: str) -> None:
    """Until the API server calls the webhooks (its informers see new configurations late)."""
    probe = kex("probe", {"probe": namespace})
    with anyio.fail_after(DEADLINE):
        while True:
            response = await api.post(url(namespace), params={"dryRun": "All"}, json=probe)
            if PROBE_WARNING in response.headers.get("warning", ""):
                return
            await anyio.sleep(0.2)


async def until_refused(api: httpx.AsyncClient, namespace: str) -> httpx.Response:
    """Until the API server uses the replaced caBundle: a dry-run creation fails."""
    body = kex("tls", {"t": "tls"})
    with anyio.fail_after(DEADLINE):
        while True:
            response = await api.post(url(namespace), params={"dryRun": "All"}, json=body)
            if response.status_code >= 500:
                return response
            await anyio.sleep(0.2)


async def test_row49_a_wrong_ca_bundle_at_runtime_is_an_x509_error_counted_and_warned_about(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_controlplane: LocalControlPlane,  # the real API server: FakeCluster has no TLS
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="check", labels={"t": "tls"})(
        lambda **_: None
    )
    with_probe(registry, anyop_namespace)
    name = managed_name(anyop_namespace)
    port = free_port()
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed = name
    settings.server.metrics_endpoint = f"http://127.0.0.1:{port}/metrics"
    settings.server.metrics_insecure = True
    wrong = base64.b64encode(CertificateAuthority("someone-elses-ca").cert_pem).decode()
    caplog.set_level(logging.WARNING, "anyop.webhooks")
    async with (
        running(registry, anyop_namespace, settings),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as scraper,
    ):
        await until_active(api, anyop_namespace)
        before = tls_errors((await scraper.get("/metrics")).text)
        path = f"{ADMISSION}/validatingwebhookconfigurations/{name}"
        hooks: list[dict[str, Any]] = (await api.get(path)).json()["webhooks"]
        patch = [
            {"op": "replace", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": wrong}
            for i in range(len(hooks))
        ]
        patched = await api.patch(
            path, json=patch, headers={"content-type": "application/json-patch+json"}
        )
        refused = [await until_refused(api, anyop_namespace)]
        for _ in range(STORM - 1):
            refused.append(await api.post(url(anyop_namespace), json=kex("tls", {"t": "tls"})))
        with anyio.fail_after(DEADLINE):  # the server reads the alert after the refusal
            while tls_errors((await scraper.get("/metrics")).text) != {"bad_certificate": STORM}:
                await anyio.sleep(0.1)
    warnings = [r.getMessage() for r in caplog.records if "TLS handshake" in r.getMessage()]
    assert patched.status_code == 200
    assert before == {}
    assert [response.status_code for response in refused] == [500] * STORM
    assert all(X509_UNKNOWN_AUTHORITY in response.json()["message"] for response in refused)
    assert f'failed calling webhook "check.{name}"' in refused[0].json()["message"]
    assert len(warnings) == 1  # one per reason and minute, however many handshakes fail
    assert warnings[0].startswith("A TLS handshake with 127.0.0.1:")
    assert "failed: bad_certificate (SSLV3_ALERT_BAD_CERTIFICATE)" in warnings[0]
    assert (
        "Most likely the caBundle of the webhook configuration did not issue this certificate"
        in warnings[0]
    )
