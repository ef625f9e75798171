"""Admission webhooks called by the real kube-apiserver over TLS, on both backends.

The operator serves its webhooks on a generated CA and certificate at https://127.0.0.1:<port>,
and manages the Validating/MutatingWebhookConfigurations (named after the test's namespace, so
tests never see each other's webhooks). Every handler filters on a label that only the test's
objects carry, which also becomes the webhooks' objectSelector.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_engine_e2e import DEADLINE, running, url
from tests.virtual import now

import anyop.on as on
from anyop.engine.operator.launch import single_error
from anyop.engine.operator.serve import serve
from anyop.errors import AdmissionError, ConfigError
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl
from anyop.webhooks.certs import CertificateAuthority
from anyop.webhooks.server import WebhookServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
PROBE_WARNING = "anyop's webhook is active"
EXAMPLES = Path(__file__).parents[2] / "examples"


def managed_name(namespace: str) -> str:
    return f"{namespace}.anyop.dev"


def kex(name: str, labels: dict[str, str], spec: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata = {"name": name, "labels": labels}
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata, "spec": spec}


def with_probe(registry: OperatorRegistry, namespace: str) -> None:
    """A validator that marks dry runs of probe objects, to know when the API server calls us."""

    @on.validate("kopfexamples", registry=registry, id="probe", labels={"probe": namespace})
    def probe(warnings: list[str], **_: Any) -> None:
        warnings.append(PROBE_WARNING)


@asynccontextmanager
async def webhooks(
    api: httpx.AsyncClient,
    registry: OperatorRegistry,
    namespace: str,
    server: Any = None,
) -> AsyncIterator[str]:
    """The operator with its webhook server and managed configurations, active in the API
    server (its webhook informers take a moment to see new configurations)."""
    with_probe(registry, namespace)
    settings = OperatorSettings()
    settings.admission.server = server or WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed = managed_name(namespace)
    async with running(registry, namespace, settings):
        probe = kex("probe", {"probe": namespace})
        with anyio.fail_after(DEADLINE):
            while True:
                response = await api.post(url(namespace), params={"dryRun": "All"}, json=probe)
                if PROBE_WARNING in response.headers.get("warning", ""):
                    break
                await anyio.sleep(0.2)
        yield namespace


async def test_a_denied_creation_shows_the_message_and_the_code(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="picky", labels={"t": "deny"})
    def picky(spec: Any, **_: Any) -> None:
        if spec.get("field") == "wrong":
            raise AdmissionError("Meh! I don't like it. Change the field.", code=418)

    async with webhooks(api, registry, anyop_namespace):
        bad = kex("bad", {"t": "deny"}, {"field": "wrong"})
        good = kex("good", {"t": "deny"}, {"field": "right"})
        refused = await api.post(url(anyop_namespace), json=bad)
        accepted = await api.post(url(anyop_namespace), json=good)
    assert refused.status_code == 418
    assert "Meh! I don't like it. Change the field." in refused.json()["message"]
    assert f"picky.{managed_name(anyop_namespace)}" in refused.json()["message"]
    assert accepted.status_code == 201


async def test_a_mutation_is_visible_in_the_stored_object(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @on.mutate("kopfexamples", registry=registry, id="inject", labels={"t": "mutate"})
    def inject(patch: Any, **_: Any) -> None:
        patch.spec["injected"] = 123
        patch.metadata.labels["mutated"] = "yes"
        patch.fns.append(lambda body: body["spec"].update(by_fn=True))

    async with webhooks(api, registry, anyop_namespace):
        created = await api.post(url(anyop_namespace), json=kex("m", {"t": "mutate"}, {"a": 1}))
        stored = (await api.get(url(anyop_namespace, "m"))).json()
    assert created.status_code == 201
    assert stored["spec"] == {"a": 1, "injected": 123, "by_fn": True}
    assert stored["metadata"]["labels"] == {"t": "mutate", "mutated": "yes"}


async def test_warnings_reach_the_client(api: httpx.AsyncClient, anyop_namespace: str) -> None:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="warner", labels={"t": "warn"})
    def warner(warnings: list[str], userinfo: Any, **_: Any) -> None:
        warnings.append(f"Checked for {userinfo['username']}.")

    async with webhooks(api, registry, anyop_namespace):
        response = await api.post(url(anyop_namespace), json=kex("w", {"t": "warn"}))
    assert response.status_code == 201
    assert "Checked for anyop-admin." in response.headers["warning"]


async def test_a_server_side_dry_run_tells_handlers_to_make_no_side_effects(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    effects: list[str] = []
    seen: list[bool] = []

    @on.validate(
        "kopfexamples", registry=registry, id="effects", labels={"t": "dry"}, side_effects=True
    )
    def effectful(dryrun: bool, name: str, namespace: str, **_: Any) -> None:
        if namespace != anyop_namespace:
            return  # the configuration is cluster-wide: a test beside this one has its own
        seen.append(dryrun)
        if not dryrun:
            effects.append(name)

    async with webhooks(api, registry, anyop_namespace):
        dry = await api.post(
            url(anyop_namespace), params={"dryRun": "All"}, json=kex("d1", {"t": "dry"})
        )
        real = await api.post(url(anyop_namespace), json=kex("d2", {"t": "dry"}))
        config = (
            await api.get(f"{ADMISSION}/validatingwebhookconfigurations/"
                          f"{managed_name(anyop_namespace)}")
        ).json()  # fmt: skip
        missing = await api.get(url(anyop_namespace, "d1"))
    assert dry.status_code == real.status_code == 201
    assert seen == [True, False]
    assert effects == ["d2"]
    assert missing.status_code == 404
    by_name = {hook["name"]: hook for hook in config["webhooks"]}
    assert by_name[f"effects.{managed_name(anyop_namespace)}"]["sideEffects"] == "NoneOnDryRun"


async def test_the_failure_policy_applies_when_a_handler_is_too_slow(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @on.validate(
        "kopfexamples", registry=registry, id="slow-tolerant", labels={"t": "tolerant"},
        timeout=2, ignore_failures=True,
    )  # fmt: skip
    @on.validate("kopfexamples", registry=registry, id="slow-strict", labels={"t": "strict"},
                 timeout=2)  # fmt: skip
    async def slow(**_: Any) -> None:
        await anyio.sleep(5)

    async with webhooks(api, registry, anyop_namespace):
        tolerated = await api.post(url(anyop_namespace), json=kex("t1", {"t": "tolerant"}))
        refused = await api.post(url(anyop_namespace), json=kex("t2", {"t": "strict"}))
    assert tolerated.status_code == 201
    assert "did not finish within" in tolerated.headers["warning"]
    assert refused.status_code >= 400
    assert "did not finish within" in refused.json()["message"]


async def test_managed_configurations_are_created_and_the_non_persistent_removed_at_exit(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    name = managed_name(anyop_namespace)
    validating = f"{ADMISSION}/validatingwebhookconfigurations/{name}"
    mutating = f"{ADMISSION}/mutatingwebhookconfigurations/{name}"
    on.validate("kopfexamples", registry=registry, id="kept", labels={"t": "x"}, persistent=True)(
        lambda **_: None
    )
    on.mutate("kopfexamples", registry=registry, id="gone", labels={"t": "x"}, operation="CREATE")(
        lambda **_: None
    )
    try:
        async with webhooks(api, registry, anyop_namespace):
            during = (await api.get(validating)).json(), (await api.get(mutating)).json()
        after_validating = (await api.get(validating)).json()
        after_mutating = await api.get(mutating)
    finally:
        await api.delete(validating)
    hooks = {hook["name"]: hook for config in during for hook in config["webhooks"]}
    kept, gone = hooks[f"kept.{name}"], hooks[f"gone.{name}"]
    ca = base64.b64decode(kept["clientConfig"]["caBundle"])
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----")
    assert kept["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert kept["clientConfig"]["url"].endswith("/hooks/kept")
    assert kept["rules"][0]["resources"] == ["kopfexamples"]
    assert kept["objectSelector"] == {"matchLabels": {"t": "x"}}
    assert kept["failurePolicy"] == "Fail"
    assert gone["rules"][0]["operations"] == ["CREATE"]
    assert [hook["name"] for hook in after_validating["webhooks"]] == [f"kept.{name}"]
    assert after_mutating.status_code == 404


async def test_the_api_server_applies_the_failure_policy_when_the_webhook_is_unreachable(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    name = managed_name(anyop_namespace)
    validating = f"{ADMISSION}/validatingwebhookconfigurations/{name}"
    options: dict[str, Any] = {"registry": registry, "persistent": True}
    on.validate("kopfexamples", id="open", labels={"t": "open"}, ignore_failures=True, **options)(
        lambda **_: None
    )
    on.validate("kopfexamples", id="closed", labels={"t": "closed"}, **options)(lambda **_: None)
    try:
        async with webhooks(api, registry, anyop_namespace):
            pass  # the persistent webhooks stay, but nobody answers them any more
        passed = await api.post(url(anyop_namespace), json=kex("o", {"t": "open"}))
        failed = await api.post(url(anyop_namespace), json=kex("c", {"t": "closed"}))
    finally:
        await api.delete(validating)
    assert passed.status_code == 201
    assert failed.status_code >= 500
    assert f'failed calling webhook "closed.{name}"' in failed.json()["message"]


def warned(plane: LocalControlPlane, *args: str, stdin: str = "") -> list[str]:
    """The stderr lines (the API server's warnings) of a kubectl command that succeeds."""
    cmd = [str(plane.assets.kubectl), f"--kubeconfig={plane.kubeconfig}", *args]
    result = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=True)
    return result.stderr.splitlines()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_admission_example_denies_mutates_warns_audits_subresources_and_cleans_up(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    source = str(EXAMPLES / "16-admission" / "example.py")
    configs = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
    operator = start_operator(plane, source, ns, backend)
    try:
        # The API server's informers see new configurations after a moment: retry dry runs.
        bad = json.dumps(kex("kex-bad", {}, {"field": "wrong"}))
        deadline = now() + DEADLINE
        while True:
            try:
                kubectl(plane, "create", "--dry-run=server", "-n", ns, "-f", "-", stdin=bad)
            except AssertionError as e:
                denial = str(e)
                break
            assert now() < deadline, "the webhooks never became active"
            time.sleep(0.2)
        probe = json.dumps(kex("kex-probe", {"inject": "yes"}, {}))  # the other configuration
        dry = ("create", "--dry-run=server", "-n", ns, "-f", "-", "-o", "json")
        while "injected" not in json.loads(kubectl(plane, *dry, stdin=probe))["spec"]:
            assert now() < deadline, "the mutating webhook never became active"
            time.sleep(0.2)
        with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as api:
            lazy = api.post(url(ns), json=kex("kex-lazy", {}, {"field": "not-allowed"}))
        created = warned(plane, "create", "-n", ns, "-f", "-",
                         stdin=json.dumps(kex("kex-1", {"inject": "yes"}, {})))  # fmt: skip
        status = warned(plane, "patch", "-n", ns, "kex", "kex-1", "--subresource=status",
                        "--type=merge", "-p", '{"status": {"checked": true}}')  # fmt: skip
        stored = json.loads(kubectl(plane, "get", "-n", ns, "kex", "kex-1", "-o", "json"))
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
        left = kubectl(plane, "get", ",".join(configs), "-o", "name")
        for kind in configs:
            kubectl(plane, "delete", kind, "auto.anyop.dev", "--ignore-not-found")
    assert operator.returncode == 0, output
    assert 'admission webhook "check-field.auto.anyop.dev" denied the request' in denial
    assert "The field must not be 'wrong'. Change it." in denial
    assert "Warning: Audited: CREATE of kex-bad." in denial
    assert lazy.status_code == 555  # the handler's code is the HTTP status of the refusal
    assert lazy.json()["code"] == 555
    assert lazy.json()["message"] == (
        'admission webhook "refuse-not-allowed.spec.field.auto.anyop.dev" denied the request: '
        "I'm too lazy anyway. Go away!"
    )
    assert sorted(created) == [  # from separate webhooks, in any order
        "Warning: Audited: CREATE of kex-1.",
        "Warning: The default field is used; consider setting your own.",
    ]
    assert status == ["Warning: Audited: UPDATE of the status of kex-1."]  # only subresource='*'
    assert stored["spec"] == {"field": "default", "injected": 123}
    assert stored["status"] == {"checked": True}
    assert stored["metadata"]["labels"] == {"inject": "yes", "injected-by": "anyop"}
    assert "auto.anyop.dev" not in left
    assert re.search(r"Webhook server listens at https://127\.0\.0\.1:\d+/admission\.", output)


async def test_a_certificate_without_the_advertised_host_fails_the_startup_clearly(
    anyop_namespace: str, tmp_path: Path
) -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="v")(lambda **_: None)
    CertificateAuthority().issue("op", sans=["elsewhere.example"], server=True).write(
        tmp_path / "tls.crt", tmp_path / "tls.key"
    )
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(
        addr="127.0.0.1", port=0, certfile=tmp_path / "tls.crt", pkeyfile=tmp_path / "tls.key"
    )
    with anyio.fail_after(DEADLINE), pytest.raises((ConfigError, BaseExceptionGroup)) as info:
        await serve(registry=registry, settings=settings, namespaces=[anyop_namespace])
    error = single_error(info.value) if isinstance(info.value, BaseExceptionGroup) else info.value
    assert isinstance(error, ConfigError)
    assert "no SAN for '127.0.0.1'" in str(error)


async def test_the_auto_server_recognises_no_local_cluster_here_and_serves_plainly(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    import anyop

    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="picky", labels={"t": "auto"})
    def picky(spec: Any, **_: Any) -> None:
        if spec.get("field") == "wrong":
            raise AdmissionError("Not with the auto-server either.", code=418)

    server = anyop.WebhookAutoServer(addr="127.0.0.1", port=0, path="/hooks")
    async with webhooks(api, registry, anyop_namespace, server):
        refused = await api.post(
            url(anyop_namespace), json=kex("bad", {"t": "auto"}, {"field": "wrong"})
        )
    assert refused.status_code == 418
    assert server.guessed is None  # the local control plane is no K3s, Minikube or Docker Desktop
    assert server.advertised_host == "127.0.0.1"
