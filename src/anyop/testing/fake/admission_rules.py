"""Admission webhooks, the pure part: which webhooks a write concerns, the AdmissionReview sent
to them, and what their answers mean.

Pure. The async calls are in :mod:`anyop.testing.fake.webhook_calls`. The rules are those of
``admissionregistration.k8s.io/v1``: ``rules`` (operations, groups, versions, resources with
``/subresource`` and ``*``, scope), ``namespaceSelector`` and ``objectSelector``,
``failurePolicy`` (``Fail`` by default), ``timeoutSeconds`` (10 by default).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.label_selectors import selects
from anyop.testing.fake.statuses import status_body

__all__ = [
    "Admission",
    "Verdict",
    "Webhook",
    "denial",
    "failure",
    "matching_webhooks",
    "review_of",
    "verdict_of",
]

Body = dict[str, Any]
OPERATIONS = {"POST": "CREATE", "PUT": "UPDATE", "PATCH": "UPDATE", "DELETE": "DELETE"}
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
USER = {"username": "anyop-admin", "groups": ["system:masters", "system:authenticated"]}
"""Who makes every request (the local control plane's admin has the same name)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """One write as admission sees it.

    Attributes:
        operation: ``CREATE``, ``UPDATE`` or ``DELETE``.
        kind: The kind written.
        subresource: ``status`` or ``None``.
        namespace: The object's namespace (``None`` if cluster-scoped).
        name: The object's name (``""`` for a create with ``generateName``).
        obj: The object as it would be stored (``None`` for a delete).
        old: The stored object (``None`` for a create).
        namespace_labels: The labels of the object's namespace.
        dry_run: The request is a server-side dry run (``dryRun=All``).
        options: The request's options (``CreateOptions``, ...), as the webhooks get them.
        object_kind: The group, version and kind of ``obj`` and ``old`` where they are not
            the resource's (a ``/scale`` write's ``autoscaling/v1`` Scale).
    """

    operation: str
    kind: Kind
    subresource: str | None
    namespace: str | None
    name: str
    obj: Body | None
    old: Body | None
    namespace_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    dry_run: bool = False
    options: Mapping[str, Any] | None = None
    object_kind: tuple[str, str, str] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Webhook:
    """One entry of a webhook configuration's ``webhooks``.

    Attributes:
        name: The webhook's name.
        mutating: Of a MutatingWebhookConfiguration.
        spec: The entry as stored.
    """

    name: str
    mutating: bool
    spec: Mapping[str, Any]

    @property
    def url(self) -> str:
        """Where to POST: ``clientConfig.url``, or the service's in-cluster address."""
        config = self.spec.get("clientConfig") or {}
        if config.get("url"):
            return str(config["url"])
        service = config.get("service") or {}
        port, path = service.get("port", 443), service.get("path", "")
        return f"https://{service.get('name')}.{service.get('namespace')}.svc:{port}{path}"

    @property
    def ca_bundle(self) -> str | None:
        """The PEM text of ``clientConfig.caBundle``, if any."""
        encoded = (self.spec.get("clientConfig") or {}).get("caBundle")
        return base64.b64decode(encoded).decode() if encoded else None

    @property
    def timeout(self) -> float:
        """``timeoutSeconds`` (10 if unset)."""
        return float(self.spec.get("timeoutSeconds") or 10)

    @property
    def fails_closed(self) -> bool:
        """``failurePolicy: Fail`` (the default): an unreachable webhook refuses the write."""
        return bool(self.spec.get("failurePolicy", "Fail") != "Ignore")


def _listed(value: str, allowed: Sequence[str]) -> bool:
    return "*" in allowed or value in allowed


def _resource_matches(plural: str, subresource: str | None, resources: Sequence[str]) -> bool:
    wanted = f"{plural}/{subresource}" if subresource else plural
    for pattern in resources:
        if pattern in ("*/*", wanted):
            return True
        head, _, tail = pattern.partition("/")
        if not subresource and head == "*" and not tail:
            return True
        if subresource and head == "*" and tail == subresource:
            return True
        if subresource and head == plural and tail == "*":
            return True
    return False


def _rule_matches(rule: Mapping[str, Any], admission: Admission) -> bool:
    kind = admission.kind
    scope = rule.get("scope", "*")
    scoped = scope == "*" or (scope == "Namespaced") == kind.namespaced
    return (
        scoped
        and _listed(admission.operation, rule.get("operations") or ())
        and _listed(kind.group, rule.get("apiGroups") or ())
        and _listed(kind.version, rule.get("apiVersions") or ())
        and _resource_matches(kind.plural, admission.subresource, rule.get("resources") or ())
    )


def matching_webhooks(
    configurations: Sequence[Mapping[str, Any]], admission: Admission, *, mutating: bool
) -> list[Webhook]:
    """The webhooks of these configurations that this write concerns, in the API server's
    order (configurations by name, then their webhooks in order)."""
    found = []
    objects = [body for body in (admission.obj, admission.old) if body is not None]
    ordered = sorted(configurations, key=lambda config: config["metadata"]["name"])
    for config in ordered:
        for spec in config.get("webhooks") or ():
            if not any(_rule_matches(rule, admission) for rule in spec.get("rules") or ()):
                continue
            if admission.namespace is not None and not selects(
                spec.get("namespaceSelector"), admission.namespace_labels
            ):
                continue
            labels = [(body.get("metadata") or {}).get("labels") or {} for body in objects]
            if not any(selects(spec.get("objectSelector"), found) for found in labels):
                continue
            found.append(Webhook(str(spec.get("name")), mutating, spec))
    return found


def review_of(admission: Admission, uid: str) -> Body:
    """The ``AdmissionReview`` (v1) request for one write."""
    kind = admission.kind
    group, version, kind_name = admission.object_kind or (kind.group, kind.version, kind.kind)
    group_version_kind = {"group": group, "version": version, "kind": kind_name}
    resource = {"group": kind.group, "version": kind.version, "resource": kind.plural}
    request: Body = {
        "uid": uid,
        "kind": group_version_kind,
        "resource": resource,
        "requestKind": group_version_kind,
        "requestResource": resource,
        "operation": admission.operation,
        "userInfo": USER,
        "object": admission.obj,
        "oldObject": admission.old,
        "dryRun": admission.dry_run,
        "options": admission.options
        or {"kind": _OPTIONS[admission.operation], "apiVersion": "meta.k8s.io/v1"},
    }
    if admission.name:  # (a create's with ``generateName``: none yet for the mutating ones)
        request["name"] = admission.name
    if admission.subresource:
        request["subResource"] = request["requestSubResource"] = admission.subresource
    if admission.namespace is not None:
        request["namespace"] = admission.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What a webhook answered: a refusal (its ``Status``) or ``None``, a JSON patch, warnings."""

    refusal: Body | None = None
    patch: list[Any] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)


def verdict_of(webhook: Webhook, review: Any, uid: str) -> Verdict:
    """What a webhook answered.

    Raises:
        ValueError: The answer is not a valid ``AdmissionReview`` response for this request.
    """
    response = review.get("response") if isinstance(review, Mapping) else None
    if not isinstance(response, Mapping):
        raise ValueError("the response is not an AdmissionReview with a response")
    if response.get("uid") != uid:
        raise ValueError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    warnings = [str(warning) for warning in response.get("warnings") or ()]
    if not response.get("allowed"):
        return Verdict(denial(webhook, response.get("status") or {}), warnings=warnings)
    if not response.get("patch"):
        return Verdict(warnings=warnings)
    if not webhook.mutating:
        raise ValueError("a validating webhook may not return a patch")
    if response.get("patchType") != "JSONPatch":
        raise ValueError(f"unsupported patchType {response.get('patchType')!r}")
    patch = json.loads(base64.b64decode(response["patch"]))
    if not isinstance(patch, list):
        raise ValueError("the patch is not a list of JSON patch operations")
    return Verdict(patch=patch, warnings=warnings)


def denial(webhook: Webhook, status: Mapping[str, Any]) -> Body:
    """The ``Status`` of a write that a webhook refused (at least 400, as the API server says
    who refused it and why)."""
    code = int(status.get("code") or 0)
    who = f'admission webhook "{webhook.name}" denied the request'
    why = status.get("message") or status.get("reason")
    message = f"{who}: {why}" if why else f"{who} without explanation"
    body = status_body(max(code, 400), str(status.get("reason") or ""), message)
    if status.get("details"):
        body["details"] = status["details"]
    return body


def failure(webhook: Webhook, error: str) -> Body:
    """The ``Status`` of a write whose webhook could not be called (``failurePolicy: Fail``)."""
    message = f'Internal error occurred: failed calling webhook "{webhook.name}": {error}'
    cause = {"message": f'failed calling webhook "{webhook.name}": {error}'}
    return status_body(500, "InternalError", message, details={"causes": [cause]})
