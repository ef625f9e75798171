"""Secure metrics on the real control plane: ServiceAccount tokens, RBAC, and what they cost.

The readers are ServiceAccounts with tokens from the TokenRequest API; the one bound to the
``anyop-metrics-reader`` ClusterRole of manifests/rbac.yaml reads the metrics, the others get
401 or 403. The API server's own ``apiserver_request_total`` counts the reviews per scrape.
The operator's own rules for it (tokenreviews, subjectaccessreviews) are taken away one by one
in the Pod-like environment of test_incluster_e2e.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from tests.e2e.conftest import EXAMPLES, MANIFESTS
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_engine_e2e import DEADLINE
from tests.e2e.test_examples_more_e2e import running_example, until
from tests.e2e.test_incluster_e2e import install_operator, operator_in_pod, rbac_documents
from tests.e2e.test_least_privilege_e2e import without
from tests.e2e.test_probes_e2e import free_port

import anyop.on as on
from anyop.engine.operator.launch import operator
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

READER_ROLE = "anyop-metrics-reader"
SCRAPES = 50


def reader_role() -> dict[str, Any]:
    """The metrics-reader ClusterRole, as manifests/rbac.yaml has it."""
    docs = yaml.safe_load_all((MANIFESTS / "rbac.yaml").read_text())
    return next(d for d in docs if d and d["metadata"]["name"] == READER_ROLE)


def reader_binding(namespace: str, account: str) -> dict[str, Any]:
    """A ClusterRoleBinding of the metrics-reader role to one ServiceAccount."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{READER_ROLE}-{namespace}-{account}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": READER_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", "namespace": namespace, "name": account}],
    }


def account_token(plane: LocalControlPlane, namespace: str, account: str, *, reader: bool) -> str:
    """A new ServiceAccount's token (TokenRequest); bound to the metrics-reader role if asked."""
    kubectl(plane, "create", "serviceaccount", "-n", namespace, account)
    if reader:
        role, binding = reader_role(), reader_binding(namespace, account)
        listed = {"apiVersion": "v1", "kind": "List", "items": [role, binding]}
        kubectl(plane, "apply", "-f", "-", stdin=json.dumps(listed))
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context()) as admin:
        response = admin.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            json={"spec": {"expirationSeconds": 3600}},
        )
    response.raise_for_status()
    return str(response.json()["status"]["token"])


@contextlib.contextmanager
def readers(plane: LocalControlPlane, namespace: str) -> Iterator[dict[str, str]]:
    """Tokens: ``reader`` (bound to the role), ``stranger`` (not bound), ``gone`` (its
    ServiceAccount deleted); the cluster-wide binding is deleted afterwards."""
    tokens = {
        "reader": account_token(plane, namespace, "prometheus", reader=True),
        "stranger": account_token(plane, namespace, "stranger", reader=False),
        "gone": account_token(plane, namespace, "gone", reader=False),
    }
    kubectl(plane, "delete", "serviceaccount", "-n", namespace, "gone")
    try:
        yield tokens
    finally:
        name = reader_binding(namespace, "prometheus")["metadata"]["name"]
        kubectl(plane, "delete", "clusterrolebinding", name, "--ignore-not-found")


def reviews_done(plane: LocalControlPlane) -> float:
    """TokenReviews and SubjectAccessReviews created so far (the API server's own count)."""
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as admin:
        text = admin.get("/metrics").text
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{") or 'verb="POST"' not in line:
            continue
        if 'resource="tokenreviews"' in line or 'resource="subjectaccessreviews"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def secure_operator(
    namespace: str, port: int, stranger: str
) -> AsyncIterator[httpx.AsyncClient]:
    """The operator (admin credentials) with secure metrics; a client that trusts any
    certificate (the metrics' certificate is self-signed), once the operator has logged in
    (``stranger``'s token gets 403 then; 503 before)."""
    registry = OperatorRegistry()
    on.event("kopfexamples", registry=registry, id="seen")(lambda **_: None)
    settings = OperatorSettings()
    settings.server.metrics_endpoint = f"https://127.0.0.1:{port}/metrics"
    settings.server.metrics_allow_ttl = 3600  # longer than the test: the count is exact
    stop = anyio.Event()
    async with (
        anyio.create_task_group() as tg,
        httpx.AsyncClient(
            base_url=f"https://127.0.0.1:{port}", verify=False, timeout=DEADLINE
        ) as client,  # fmt: skip
    ):
        tg.start_soon(lambda: operator(
            registry=registry, settings=settings, namespaces=[namespace], stop_flag=stop,
        ))  # fmt: skip
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    response = await client.get("/metrics", headers=bearer(stranger))
                    if response.status_code == 403:
                        break
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.05)
        yield client
        stop.set()


@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_only_the_bound_service_account_reads_the_metrics_at_two_reviews_per_ttl(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    plane, port = anyop_controlplane, free_port()
    with readers(plane, anyop_namespace) as tokens:
        async with secure_operator(anyop_namespace, port, tokens["stranger"]) as client:
            before = reviews_done(plane)
            scrapes = [await client.get("/metrics", headers=bearer(tokens["reader"]))
                       for _ in range(SCRAPES)]  # fmt: skip
            reviews = reviews_done(plane) - before
            missing = await client.get("/metrics")
            stranger = await client.get("/metrics", headers=bearer(tokens["stranger"]))
            gone = await client.get("/metrics", headers=bearer(tokens["gone"]))
            wrong = await client.get("/metrics", headers=bearer("not-a-token"))
            after = await client.get("/metrics", headers=bearer(tokens["reader"]))
            with pytest.raises(httpx.HTTPError):  # plain HTTP to the HTTPS port
                async with httpx.AsyncClient(timeout=DEADLINE) as plain:
                    await plain.get(f"http://127.0.0.1:{port}/metrics")
    print(f"{SCRAPES} scrapes with one token: {reviews:g} reviews at the API server")
    assert {response.status_code for response in scrapes} == {200}
    assert "rest_client_requests_total" in scrapes[0].text
    assert reviews == 2  # one TokenReview and one SubjectAccessReview, then the cache
    assert (missing.status_code, stranger.status_code) == (401, 403)
    assert (gone.status_code, wrong.status_code) == (401, 401)
    for refused in (missing, stranger, gone, wrong):
        assert refused.text in ("Unauthorized\n", "Forbidden\n")
    assert after.status_code == 200


def test_plain_http_metrics_are_refused_unless_asked_for(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str
) -> None:
    plane, port = anyop_controlplane, free_port()
    example = str(EXAMPLES / "01-minimal" / "example.py")
    plain = f"http://127.0.0.1:{port}/metrics"
    refused = start_operator(plane, example, anyop_namespace, "asyncio", "--metrics", plain)
    with refused:
        output, _ = refused.communicate(timeout=60)
    assert refused.returncode != 0
    assert "--metrics-insecure" in output
    assert "Traceback" not in output
    more = ("--metrics", plain, "--metrics-insecure")
    with running_example(plane, "01-minimal", anyop_namespace, "trio", *more) as lines:
        lines.wait_for("plain HTTP")
        scraped = until(lambda: _get(plain), "the metrics over plain HTTP")
    assert "rest_client_requests_total" in scraped


def _get(url: str) -> str | None:
    try:
        response = httpx.get(url, timeout=5)
    except httpx.TransportError:
        return None
    return response.text if response.status_code == 200 else None


# The operator's own rules: each is needed


ABLATIONS = [
    (None, 200, None),
    ("tokenreviews", 500, 'cannot create resource "tokenreviews"'),
    ("subjectaccessreviews", 500, 'cannot create resource "subjectaccessreviews"'),
]


@pytest.mark.parametrize(
    ("removed", "code", "refusal"), ABLATIONS, ids=[str(a[0] or "all-rules") for a in ABLATIONS]
)
def test_the_operator_needs_each_of_its_review_rules_and_no_more(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    removed: str | None,
    code: int,
    refusal: str | None,
    tmp_path: Path,
) -> None:
    plane, ns, port = anyop_controlplane, pod_namespace, free_port()
    docs = rbac_documents(ns, cluster_wide=False)
    if removed is not None:
        docs = without(docs, removed, None)
    folder, args = install_operator(plane, ns, docs, tmp_path / "serviceaccount")
    metrics = ["--metrics", f"https://127.0.0.1:{port}/metrics"]
    with (
        readers(plane, ns) as tokens,
        operator_in_pod(
            plane, folder, *args, *metrics, backend="asyncio", check=removed is None
        ) as output,
    ):
        scraped = until(lambda: _scrape(port, tokens["reader"]), "an answer other than 503")
        stranger = _scrape(port, tokens["stranger"])
        if refusal is not None:
            until(lambda: refusal in output.text, f"the operator says {refusal!r}")
            assert output.text.count("metrics' readers cannot be reviewed") == 1
    assert scraped.status_code == code
    assert stranger is not None
    assert stranger.status_code == (403 if removed is None else 500)
    if code == 500:
        assert scraped.text == "Internal Server Error\n"
    assert "Traceback" not in output.text
    assert tokens["reader"] not in output.text  # never logged, even with --verbose


def _scrape(port: int, token: str) -> httpx.Response | None:
    try:
        response = httpx.get(
            f"https://127.0.0.1:{port}/metrics", headers=bearer(token), verify=False, timeout=10
        )
    except httpx.TransportError:
        return None
    return None if response.status_code == 503 else response


def test_the_manifests_reader_role_grants_get_on_metrics_only() -> None:
    assert reader_role()["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
