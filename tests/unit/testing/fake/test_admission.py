"""Admission on FakeCluster: anyop's own webhook server called over HTTPS (with its caBundle),
mutations stored, refusals and warnings relayed, failure policies, dry runs; and the pure
matching of webhook rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import anyop.on as on
from anyop.errors import AdmissionError
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings
from anyop.testing import FakeCluster, RunningOperator
from anyop.testing.fake.admission_rules import Admission, matching_webhooks
from anyop.testing.fake.kinds import BUILTIN_KINDS
from anyop.testing.handle import open_operator
from anyop.webhooks.server import WebhookServer

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"
CMS = "/api/v1/namespaces/ns/configmaps"
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@asynccontextmanager
async def with_webhooks(registry: OperatorRegistry) -> AsyncIterator[RunningOperator]:
    """The operator with its webhook server and its managed configurations, on a FakeCluster."""
    fake = FakeCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    settings = OperatorSettings()
    settings.admission.server = WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed = "fake.anyop.dev"
    vault = await fake.vault()
    with fake.routed():
        async with (
            fake.client(timeout=30) as api,
            open_operator(registry, namespace="ns", api=api, vault=vault, settings=settings) as op,
        ):
            yield op


def kex(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


async def test_a_validating_handler_refuses_with_its_message_and_code() -> None:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="picky")
    def picky(spec: Any, **_: Any) -> None:
        if spec.get("field") == "wrong":
            raise AdmissionError("Change the field.", code=418)

    async with with_webhooks(registry) as operator:
        refused = await operator.api.post(
            operator.url(KEX), json={"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                                     **kex("bad", {"field": "wrong"})})  # fmt: skip
        await operator.create(KEX, kex("good", {"field": "right"}))
    assert refused.status_code == 418
    assert (
        'admission webhook "picky.fake.anyop.dev" denied the request' in refused.json()["message"]
    )
    assert "Change the field." in refused.json()["message"]


async def test_a_mutation_is_stored_and_warnings_reach_the_client() -> None:
    registry = OperatorRegistry()

    @on.mutate("kopfexamples", registry=registry, id="inject")
    def inject(patch: Any, warnings: list[str], userinfo: Any, **_: Any) -> None:
        patch.spec["injected"] = 123
        warnings.append(f"Mutated for {userinfo['username']}.")

    async with with_webhooks(registry) as operator:
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", **kex("m", {"a": 1})}
        created = await operator.api.post(operator.url(KEX), json=body)
        stored = (await operator.api.get(operator.url(KEX, "m"))).json()
    assert created.status_code == 201
    assert stored["spec"] == {"a": 1, "injected": 123}
    assert "Mutated for anyop-admin." in created.headers["warning"]


async def test_a_server_side_dry_run_is_admitted_but_not_stored() -> None:
    registry = OperatorRegistry()
    seen: list[bool] = []

    @on.validate("kopfexamples", registry=registry, id="dry", side_effects=True)
    def dry(dryrun: bool, **_: Any) -> None:
        seen.append(dryrun)

    async with with_webhooks(registry) as operator:
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", **kex("d", {})}
        answer = await operator.api.post(operator.url(KEX), params={"dryRun": "All"}, json=body)
        missing = await operator.api.get(operator.url(KEX, "d"))
    assert answer.status_code == 201
    assert seen == [True]
    assert missing.status_code == 404


def _configuration(policy: str) -> dict[str, Any]:
    rule = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}  # fmt: skip
    webhook = {"name": f"{policy.lower()}.x.dev", "failurePolicy": policy, "rules": [rule],
               "clientConfig": {"url": "https://127.0.0.1:1/nowhere"},
               "sideEffects": "None", "admissionReviewVersions": ["v1"]}  # fmt: skip
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": policy.lower()}, "webhooks": [webhook]}  # fmt: skip


@pytest.mark.parametrize(("policy", "code"), [("Fail", 500), ("Ignore", 201)])
async def test_an_unreachable_webhook_refuses_or_is_ignored_by_its_failure_policy(
    policy: str, code: int
) -> None:
    fake = FakeCluster()
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    async with fake.client() as api:
        (await api.post(VALIDATING, json=_configuration(policy))).raise_for_status()
        answer = await api.post(
            "/api/v1/namespaces/ns/configmaps", json={"metadata": {"name": "a"}}
        )
    assert answer.status_code == code
    if code == 500:
        assert 'failed calling webhook "fail.x.dev"' in answer.json()["message"]


def test_webhook_rules_match_operations_resources_subresources_and_selectors() -> None:
    pods = next(kind for kind in BUILTIN_KINDS if kind.plural == "pods")
    config = {"metadata": {"name": "c"}, "webhooks": [
        {"name": "all", "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                                   "resources": ["*/*"]}]},
        {"name": "status", "rules": [{"operations": ["UPDATE"], "apiGroups": [""],
                                      "apiVersions": ["v1"], "resources": ["pods/status"]}]},
        {"name": "labelled", "objectSelector": {"matchLabels": {"a": "b"}},
         "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["pods"]}]},
    ]}  # fmt: skip
    obj = {"metadata": {"name": "p", "labels": {"a": "b"}}}
    create = Admission("CREATE", pods, None, "ns", "p", obj, None)
    status = Admission("UPDATE", pods, "status", "ns", "p", obj, obj)
    unlabelled = Admission("CREATE", pods, None, "ns", "p", {"metadata": {"name": "p"}}, None)
    names = [
        [hook.name for hook in matching_webhooks([config], admission, mutating=False)]
        for admission in (create, status, unlabelled)
    ]
    assert names == [["all", "labelled"], ["all", "status"], ["all"]]
