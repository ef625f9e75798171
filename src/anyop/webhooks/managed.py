"""Managed ``ValidatingWebhookConfiguration`` and ``MutatingWebhookConfiguration`` objects.

With ``settings.admission.managed = "name.example.com"``, the operator keeps one configuration
of each kind by that name: one webhook entry per handler, pointing to the server's URL plus the
handler's id. The builders here are pure; :func:`apply_configuration` and
:func:`remove_configuration` are the thin async shells that write them.

Each entry (for a handler ``check`` and ``managed="auto.anyop.dev"``)::

    name: check.auto.anyop.dev           # the id, lowercased, '/' -> '.', '_' -> '-'
    clientConfig: {url: https://host:port/path/check, caBundle: ...}
    rules: one per resource the handler selects, with its operations (default '*') and
           subresource (plural, plural/status, or both plural and plural/* for '*')
    objectSelector: from labels= (exact values, PRESENT, ABSENT; callbacks are checked later)
    sideEffects: NoneOnDryRun if side_effects=True, else None
    failurePolicy: Ignore if ignore_failures=True, else Fail
    matchPolicy: Equivalent
    timeoutSeconds: the handler's timeout= (1-30), else 30
    admissionReviewVersions: [v1, v1beta1]
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from anyop.errors import ConflictError, NotFoundError
from anyop.handlers.causes import WebhookType
from anyop.handlers.filters import ABSENT, PRESENT
from anyop.handlers.records import ResourceWebhookHandler
from anyop.kube.client import KubeClient, PatchType
from anyop.kube.resources import Resource

__all__ = [
    "CONFIGURATIONS",
    "DEFAULT_TIMEOUT",
    "WebhookClientConfig",
    "WebhookClientConfigService",
    "apply_configuration",
    "build_configuration",
    "build_webhooks",
    "client_config_for",
    "object_selector",
    "remove_configuration",
    "webhook_name",
]

DEFAULT_TIMEOUT = 30
"""``timeoutSeconds`` of webhooks whose handlers set no ``timeout=`` (Kubernetes' maximum)."""

_GROUP = "admissionregistration.k8s.io"
CONFIGURATIONS = {
    WebhookType.VALIDATING: Resource(
        _GROUP,
        "v1",
        "validatingwebhookconfigurations",
        kind="ValidatingWebhookConfiguration",
        namespaced=False,
    ),
    WebhookType.MUTATING: Resource(
        _GROUP,
        "v1",
        "mutatingwebhookconfigurations",
        kind="MutatingWebhookConfiguration",
        namespaced=False,
    ),
}
"""The configuration resource for each kind of webhook."""


class WebhookClientConfigService(TypedDict, total=False):
    """A Service through which API servers reach the webhook server (Kopf's name)."""

    namespace: str
    name: str
    path: str
    port: int


class WebhookClientConfig(TypedDict, total=False):
    """How API servers reach a webhook server: ``.webhooks[].clientConfig`` as is (Kopf's name).

    Servers yield it with the root URL (or Service path); the framework appends each handler's
    id as the last path component.
    """

    caBundle: str
    url: str
    service: WebhookClientConfigService


def webhook_name(handler_id: str, managed: str) -> str:
    """The webhook's name: the handler id as a DNS label chain, then the managed name."""
    label = handler_id.lower().replace("/", ".").replace("_", "-")
    label = re.sub(r"[^a-z0-9.-]+", "-", label).strip(".-")
    label = re.sub(r"\.+", ".", label) or "webhook"
    return f"{label}.{managed}"


def client_config_for(config: Mapping[str, Any], handler_id: str) -> dict[str, Any]:
    """The server's client config with the handler id appended to its URL or Service path."""
    quoted = urllib.parse.quote(handler_id, safe="")
    result = dict(config)
    if "url" in result:
        result["url"] = result["url"].rstrip("/") + "/" + quoted
    if "service" in result:
        service = dict(result["service"])
        service["path"] = (service.get("path") or "").rstrip("/") + "/" + quoted
        result["service"] = service
    return result


def object_selector(handler: ResourceWebhookHandler) -> dict[str, Any] | None:
    """The ``objectSelector`` implied by the handler's ``labels=`` filter (``None`` if none)."""
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for key, expected in (handler.labels or {}).items():
        if isinstance(expected, str):
            match_labels[key] = expected
        elif expected is PRESENT:
            expressions.append({"key": key, "operator": "Exists"})
        elif expected is ABSENT:
            expressions.append({"key": key, "operator": "DoesNotExist"})
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector or None


def _rules(handler: ResourceWebhookHandler, resources: Iterable[Resource]) -> list[dict[str, Any]]:
    operations = sorted(handler.operations or ()) or ["*"]
    if "*" in operations:
        operations = ["*"]
    rules = []
    for resource in resources:
        if handler.selector is None or not handler.selector.check(resource):
            continue
        if handler.subresource is None:
            names = [resource.plural]
        elif handler.subresource == "*":
            names = [resource.plural, f"{resource.plural}/*"]
        else:
            names = [f"{resource.plural}/{handler.subresource}"]
        scope = {True: "Namespaced", False: "Cluster", None: "*"}[resource.namespaced]
        rules.append(
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "resources": names,
                "operations": operations,
                "scope": scope,
            }
        )
    return rules


def _timeout(handler: ResourceWebhookHandler) -> int:
    if handler.timeout is None:
        return DEFAULT_TIMEOUT
    return max(1, min(DEFAULT_TIMEOUT, int(handler.timeout)))


def build_webhooks(
    handlers: Iterable[ResourceWebhookHandler],
    resources: Iterable[Resource],
    client_config: Mapping[str, Any],
    *,
    managed: str,
    reason: WebhookType,
    persistent_only: bool = False,
) -> list[dict[str, Any]]:
    """The webhook entries of one configuration: one per handler of that kind with resources.

    Args:
        handlers: All admission handlers (others than ``reason`` are skipped).
        resources: The resources that exist (a handler's selector picks among them).
        client_config: How API servers reach the server (before the handler ids are appended).
        managed: The configuration's name, also the suffix of every webhook's name.
        reason: Validating or mutating.
        persistent_only: Only the handlers declared ``persistent=True`` (for the exit).
    """
    resources = list(resources)
    webhooks, seen = [], set()
    for handler in handlers:
        if handler.reason != reason or handler.id in seen:
            continue
        if persistent_only and not handler.persistent:
            continue
        rules = _rules(handler, resources)
        if not rules:
            continue
        seen.add(handler.id)
        webhook: dict[str, Any] = {
            "name": webhook_name(handler.id, managed),
            "clientConfig": client_config_for(client_config, handler.id),
            "rules": rules,
            "sideEffects": "NoneOnDryRun" if handler.side_effects else "None",
            "failurePolicy": "Ignore" if handler.ignore_failures else "Fail",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": _timeout(handler),
            "admissionReviewVersions": ["v1", "v1beta1"],
        }
        if (selector := object_selector(handler)) is not None:
            webhook["objectSelector"] = selector
        webhooks.append(webhook)
    return webhooks


def build_configuration(
    reason: WebhookType, name: str, webhooks: list[dict[str, Any]]
) -> dict[str, Any]:
    """A whole configuration object of that kind and name."""
    resource = CONFIGURATIONS[reason]
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "anyop"}},
        "webhooks": webhooks,
    }


async def apply_configuration(
    client: KubeClient, reason: WebhookType, *, name: str, webhooks: list[dict[str, Any]]
) -> None:
    """Create the configuration, or replace its webhooks; delete it if there are none.

    Raises:
        ApiError: The API server refused (e.g. 403 without RBAC permissions for it).
    """
    resource = CONFIGURATIONS[reason]
    if not webhooks:
        await remove_configuration(client, reason, name)
        return
    try:
        await client.patch(resource, {"webhooks": webhooks}, name=name, patch_type=PatchType.MERGE)
    except NotFoundError:
        try:
            await client.create(resource, build_configuration(reason, name, webhooks))
        except ConflictError:  # created meanwhile (e.g. by another replica): overwrite
            await client.patch(resource, {"webhooks": webhooks}, name=name)


async def remove_configuration(client: KubeClient, reason: WebhookType, name: str) -> None:
    """Delete the configuration if it exists."""
    with contextlib.suppress(NotFoundError):
        await client.delete(CONFIGURATIONS[reason], name=name)
