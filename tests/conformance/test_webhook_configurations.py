"""Conformance: ValidatingWebhookConfigurations and MutatingWebhookConfigurations, as operators
write them: their defaults, and what kube-apiserver refuses of them, on create and update.
(A match condition's CEL expression is not compiled by the fake: the expressions here are valid.)"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio

_GROUP = "/apis/admissionregistration.k8s.io/v1"
HOOK: dict[str, Any] = {
    "name": "a.example.com",
    "admissionReviewVersions": ["v1"],
    "sideEffects": "None",
    "clientConfig": {"url": "https://example.com/x"},
}
_RULE = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
_SERVICE = {"service": {"name": "s", "namespace": "n", "path": "/validate"}}

WEBHOOKS: list[list[dict[str, Any]]] = [
    [{**HOOK, "rules": [_RULE], "clientConfig": _SERVICE,
      "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}],
    [{**HOOK, "name": "bad"}],
    [{**HOOK, "name": ""}, {**HOOK, "name": "Not_A.Domain.x"}],
    [{**HOOK, "sideEffects": "Some", "admissionReviewVersions": []}],
    [{**HOOK, "sideEffects": None, "admissionReviewVersions": ["v2", "v2", "V3"]}],
    [{**HOOK, "clientConfig": {"url": "http://user@x/p?q=1#f"}}],
    [{**HOOK, "clientConfig": {"url": "https:///x"}}],
    [{**HOOK, "clientConfig": {}}],
    [{**HOOK, "clientConfig": {"url": "https://x", **_SERVICE}}],
    [{**HOOK, "clientConfig": {"service": {"name": "", "namespace": "", "port": 0,
                                           "path": "x//Y/"}}}],
    [{**HOOK, "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "//"}}}],
    [{**HOOK, "rules": [{"operations": ["GET", "*"], "apiGroups": ["*", "apps"],
                         "apiVersions": ["v1", ""], "resources": ["pods/*", "pods/log", "*/x",
                                                                  "a/x", ""], "scope": "Bad"}]}],
    [{**HOOK, "rules": [{"operations": [], "apiGroups": [], "apiVersions": [],
                         "resources": ["*", "pods"]}]}],
    [{**HOOK, "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                         "resources": ["*/*", "pods"]}]}],
    [{**HOOK, "timeoutSeconds": 31, "failurePolicy": "Maybe", "matchPolicy": "X"}],
    [{**HOOK, "timeoutSeconds": 0}],
    [HOOK, HOOK],
    [{**HOOK, "namespaceSelector": {"matchLabels": {"-": "x"}},
      "objectSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}}],
    [{**HOOK, "matchConditions": [{"name": "a", "expression": "true"},
                                  {"name": "a", "expression": " "},
                                  {"name": "", "expression": "false"},
                                  {"name": "-x", "expression": "true"}]}],
]  # fmt: skip


async def _written(t: Target, plural: str, webhooks: list[dict[str, Any]]) -> None:
    kind = "MutatingWebhookConfiguration" if plural.startswith("mutating") else (
        "ValidatingWebhookConfiguration")  # fmt: skip
    name = f"anyop-conformance-{t.namespace}"
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": webhooks}  # fmt: skip
    path = f"{_GROUP}/{plural}"
    made = await t.post(path, body)
    if made.get("kind") == "Status":
        return
    try:  # an update: a webhook added, then one the checks refuse
        changed = {**made, "webhooks": [*made["webhooks"], {**HOOK, "name": "b.example.com"}]}
        made = await t.put(f"{path}/{name}", changed)
        made["webhooks"][0]["timeoutSeconds"] = 60
        await t.put(f"{path}/{name}", made)
    finally:  # cluster-wide: leave nothing behind
        await t.call("DELETE", f"{path}/{name}", record=lambda d: None)


@pytest.mark.parametrize("webhooks", WEBHOOKS)
async def test_a_validating_webhook_configuration_is_defaulted_and_checked(
    conform: Conform, webhooks: list[dict[str, Any]]
) -> None:
    async def scenario(t: Target) -> None:
        await _written(t, "validatingwebhookconfigurations", webhooks)

    await conform(scenario)


@pytest.mark.parametrize(
    "webhooks",
    [[HOOK], [{**HOOK, "reinvocationPolicy": "IfNeeded"}], [{**HOOK, "reinvocationPolicy": "X"}]],
)
async def test_a_mutating_webhook_configuration_is_defaulted_and_checked(
    conform: Conform, webhooks: list[dict[str, Any]]
) -> None:
    async def scenario(t: Target) -> None:
        await _written(t, "mutatingwebhookconfigurations", webhooks)

    await conform(scenario)
