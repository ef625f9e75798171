"""Building the managed webhook configurations: pure."""

from __future__ import annotations

from typing import Any

import pytest

import anyop.on as on
from anyop.handlers.causes import WebhookType
from anyop.handlers.filters import ABSENT, PRESENT
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import DeclarationValueError
from anyop.kube.resources import Resource
from anyop.webhooks.managed import (
    build_configuration,
    build_webhooks,
    client_config_for,
    webhook_name,
)

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
PODS = Resource("", "v1", "pods", kind="Pod", namespaced=True)
CONFIG = {"url": "https://127.0.0.1:9443/hooks", "caBundle": "Q0E="}


def noop(**_: Any) -> None:
    return None


def hooks(registry: OperatorRegistry, reason: WebhookType, **kw: Any) -> list[dict[str, Any]]:
    return build_webhooks(
        registry.webhooks.handlers, [KEX, PODS], CONFIG, managed="auto.anyop.dev",
        reason=reason, **kw,
    )  # fmt: skip


def test_a_default_validator_gets_kopfs_defaults() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="check_it")(noop)
    [hook] = hooks(registry, WebhookType.VALIDATING)
    assert hook == {
        "name": "check-it.auto.anyop.dev",
        "clientConfig": {"url": "https://127.0.0.1:9443/hooks/check_it", "caBundle": "Q0E="},
        "rules": [
            {
                "apiGroups": ["kopf.dev"],
                "apiVersions": ["v1"],
                "resources": ["kopfexamples"],
                "operations": ["*"],
                "scope": "Namespaced",
            }
        ],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "timeoutSeconds": 30,
        "admissionReviewVersions": ["v1", "v1beta1"],
    }
    assert hooks(registry, WebhookType.MUTATING) == []


def test_options_become_the_webhook_fields() -> None:
    registry = OperatorRegistry()
    on.mutate(
        "pods", registry=registry, id="m", operations={"CREATE", "UPDATE"}, subresource="*",
        side_effects=True, ignore_failures=True, timeout=5,
        labels={"app": "x", "on": PRESENT, "off": ABSENT, "cb": lambda value, **_: True},
    )(noop)  # fmt: skip
    [hook] = hooks(registry, WebhookType.MUTATING)
    assert hook["rules"][0]["resources"] == ["pods", "pods/*"]
    assert hook["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert hook["rules"][0]["apiGroups"] == [""]
    assert hook["sideEffects"] == "NoneOnDryRun"
    assert hook["failurePolicy"] == "Ignore"
    assert hook["timeoutSeconds"] == 5
    assert hook["objectSelector"] == {
        "matchLabels": {"app": "x"},
        "matchExpressions": [
            {"key": "on", "operator": "Exists"},
            {"key": "off", "operator": "DoesNotExist"},
        ],
    }


def test_a_subresource_handler_gets_only_that_subresource() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="s", subresource="status")(noop)
    [hook] = hooks(registry, WebhookType.VALIDATING)
    assert hook["rules"][0]["resources"] == ["kopfexamples/status"]


def test_at_exit_only_persistent_webhooks_stay() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="kept", persistent=True)(noop)
    on.validate("kopfexamples", registry=registry, id="gone")(noop)
    names = [h["name"] for h in hooks(registry, WebhookType.VALIDATING, persistent_only=True)]
    assert names == ["kept.auto.anyop.dev"]


def test_handlers_of_missing_resources_get_no_webhook() -> None:
    registry = OperatorRegistry()
    on.validate("nothings", registry=registry, id="x")(noop)
    assert hooks(registry, WebhookType.VALIDATING) == []


@pytest.mark.parametrize(
    ("handler_id", "name"),
    [
        ("fn", "fn.m.dev"),
        ("Outer.inner_fn", "outer.inner-fn.m.dev"),
        ("fn/spec.field", "fn.spec.field.m.dev"),
        ("lambda:/a/b.py:3", "lambda-.a.b.py-3.m.dev"),
        ("//", "webhook.m.dev"),
    ],
)
def test_webhook_names_are_dns_names(handler_id: str, name: str) -> None:
    assert webhook_name(handler_id, "m.dev") == name


def test_the_handler_id_is_appended_to_the_url_or_the_service_path() -> None:
    service = {"service": {"namespace": "ns", "name": "op", "path": "/hooks/", "port": 443}}
    assert client_config_for(service, "a/b")["service"]["path"] == "/hooks/a%2Fb"
    assert client_config_for({"url": "https://h/"}, "x") == {"url": "https://h/x"}
    assert service["service"]["path"] == "/hooks/"  # the server's config is untouched


def test_a_whole_configuration_object() -> None:
    body = build_configuration(WebhookType.MUTATING, "auto.anyop.dev", [])
    assert body["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert body["kind"] == "MutatingWebhookConfiguration"
    assert body["metadata"]["name"] == "auto.anyop.dev"


@pytest.mark.parametrize("timeout", [0.5, 31])
def test_a_webhook_timeout_out_of_kubernetes_range_is_refused(timeout: float) -> None:
    with pytest.raises(DeclarationValueError, match="timeout="):
        on.validate("kex", registry=OperatorRegistry(), timeout=timeout)(noop)
