"""The resources that store nothing and answer with a status: TokenReviews and
SelfSubjectReviews (``authentication.k8s.io/v1``), SubjectAccessReviews, LocalSubjectAccessReviews,
SelfSubjectAccessReviews and SelfSubjectRulesReviews (``authorization.k8s.io/v1``), and a
ServiceAccount's ``token`` subresource (a TokenRequest).

Sync. The fake authenticates nobody: its callers are the cluster admin
(:mod:`~anyop.testing.fake.identity`), so a SelfSubjectReview names the admin and a
SelfSubjectAccessReview is allowed. A SubjectAccessReview is decided by
:mod:`~anyop.testing.fake.access_rules` (``system:masters``, then the stored RBAC objects). A
TokenReview authenticates the tokens the fake issued (through ``serviceaccounts/<name>/token``,
while the ServiceAccount exists and for the audiences asked for) as their service account, and
the fake's own admin token; any other token is ``invalid bearer token``. So anyop's metrics
authorisation (a TokenReview, then a SubjectAccessReview of a non-resource URL) works against a
FakeCluster as against a cluster: a token requested for a ServiceAccount bound to a ClusterRole
that allows ``get`` on ``/metrics`` is allowed, others are not.
"""

from __future__ import annotations

import dataclasses
import datetime
import weakref
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.access_rules import authorize
from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.identity import ADMIN_TOKEN, CREDENTIAL_ID, admin_user
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.request_bodies import decode_body
from anyop.testing.fake.routes import Route
from anyop.testing.fake.statuses import (
    bad_request,
    invalid,
    no_such_resource,
    not_found,
    status_body,
)
from anyop.testing.fake.store import Store

__all__ = ["answer", "handles"]

_AUDIENCE = "https://kubernetes.default.svc"
_AUTHN, _AUTHZ = "authentication.k8s.io", "authorization.k8s.io"
_ACCESS = ("SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview")


@dataclasses.dataclass(frozen=True, slots=True)
class _Issued:
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    jti: str


_issued: weakref.WeakKeyDictionary[Store, dict[str, _Issued]] = weakref.WeakKeyDictionary()


def handles(kind: Kind, route: Route) -> bool:
    """Whether this module answers the request's path: a create-only resource, or a
    ServiceAccount's ``token``."""
    if kind.custom:
        return False
    if kind.verbs == ("create",) and kind.group in (_AUTHN, _AUTHZ):
        return True
    return (kind.group, kind.plural, route.subresource) == ("", "serviceaccounts", "token")


def answer(
    store: Store, kind: Kind, route: Route, method: str, content_type: str, body: bytes
) -> tuple[int, Any]:
    """The answer to a request of a path :func:`handles` (its code and body)."""
    if route.subresource == "token":
        if method != "POST":
            return 405, _not_allowed()
        document = decode_body(kind, content_type, body)
        return 201, _token_request(store, route, document)
    if route.name is not None:
        raise no_such_resource()
    if method != "POST":
        return 405, _not_allowed()
    document = decode_body(kind, content_type, body)
    if not isinstance(document, Mapping):
        raise bad_request("the request body is not an object")
    review: dict[str, Any] = {
        "kind": kind.kind,
        "apiVersion": kind.api_version,
        "metadata": {"namespace": route.namespace} if kind.namespaced else {},
        "spec": dict(document.get("spec") or {}),
    }
    review["status"] = _status(store, kind, review, document, route)
    return 201, review


def _not_allowed() -> dict[str, Any]:
    message = "the server does not allow this method on the requested resource"
    return status_body(405, "MethodNotAllowed", message, details={})


def _status(
    store: Store, kind: Kind, review: dict[str, Any], sent: Mapping[str, Any], route: Route
) -> dict[str, Any]:
    spec = review["spec"]
    match kind.kind:
        case "TokenReview":
            review["metadata"] = {}
            return _token_review(store, spec)
        case "SelfSubjectReview":
            review.pop("spec")
            review["metadata"] = {"creationTimestamp": store.now()}
            return {"userInfo": admin_user()}
        case "SelfSubjectRulesReview":
            if not spec.get("namespace"):
                raise bad_request("no namespace on request")
            review["spec"] = {}
            return {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
    _check_access(kind, sent, spec, route)
    resource = spec.get("resourceAttributes") is not None
    attributes = spec.get("resourceAttributes") or spec.get("nonResourceAttributes") or {}
    if kind.kind == "SelfSubjectAccessReview":
        user = admin_user()
        allowed, reason = authorize(
            store.objects, user["username"], user["groups"], attributes, resource=resource
        )
    else:
        groups = [str(group) for group in spec.get("groups") or ()]
        allowed, reason = authorize(
            store.objects, str(spec.get("user") or ""), groups, attributes, resource=resource
        )
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def _check_access(
    kind: Kind, sent: Mapping[str, Any], spec: Mapping[str, Any], route: Route
) -> None:
    """``ValidateSubjectAccessReview`` and its kin."""
    causes = []
    resources, others = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    shown_others = (
        None if others is None else {"Path": others.get("path", ""), "Verb": others.get("verb", "")}
    )
    if resources is not None and others is not None:
        causes.append(
            _shown(
                "spec.nonResourceAttributes",
                shown_others,
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resources is None and others is None:
        causes.append(
            _shown(
                "spec.resourceAttributes",
                shown_others,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if kind.kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(
            field_invalid(
                "spec.user",
                str(spec.get("user") or ""),
                "at least one of user or group must be specified",
            )
        )
    metadata = {k: v for k, v in (sent.get("metadata") or {}).items() if v not in (None, "", {})}
    metadata.pop("managedFields", None)
    if kind.kind == "LocalSubjectAccessReview":
        metadata.pop("namespace", None)
        if metadata:
            causes.append(("metadata", _meta_cause("must be empty except for namespace")))
        if resources is not None and (resources.get("namespace") or "") != route.namespace:
            causes.append(
                field_invalid(
                    "spec.resourceAttributes.namespace",
                    str(resources.get("namespace") or ""),
                    "must match metadata.namespace",
                )
            )
        if others is not None:
            causes.append(
                _shown(
                    "spec.nonResourceAttributes", shown_others, "disallowed on this kind of request"
                )
            )
    elif metadata:
        causes.append(("metadata", _meta_cause("must be empty")))
    if causes:
        error = invalid("", _AUTHZ, None, causes=causes)
        error.body["details"].pop("kind", None)  # (the internal review's kind is empty)
        raise error


def _shown(field: str, value: Any, detail: str) -> tuple[str, dict[str, str]]:
    shown = "null" if value is None else go_marshalled(value, sort_keys=False)
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def _meta_cause(detail: str) -> dict[str, str]:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: <metadata>: {detail}"}


def _token_review(store: Store, spec: Mapping[str, Any]) -> dict[str, Any]:
    token = str(spec.get("token") or "")
    if not token:
        raise bad_request("token is required for TokenReview in authentication")
    wanted = [str(audience) for audience in spec.get("audiences") or ()]
    if token == ADMIN_TOKEN:
        audiences: tuple[str, ...] = (_AUDIENCE,)
        user = admin_user()
    else:
        issued = _issued.get(store, {}).get(token)
        account = None
        if issued is not None:
            account = store.objects[("", "serviceaccounts")].get((issued.namespace, issued.name))
        if issued is None or account is None or account["metadata"].get("uid") != issued.uid:
            return {"user": {}, "error": "invalid bearer token"}
        user = {
            "username": f"system:serviceaccount:{issued.namespace}:{issued.name}",
            "uid": issued.uid,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{issued.namespace}",
                "system:authenticated",
            ],
            "extra": {CREDENTIAL_ID: [f"JTI={issued.jti}"]},
        }
        audiences = issued.audiences
    if wanted:
        common = [audience for audience in wanted if audience in audiences]
        if not common:
            error = (
                f"[invalid bearer token, token audiences {_quoted(audiences)} is invalid for "
                f"the target audiences {_quoted(wanted)}]"
            )
            return {"user": {}, "error": error}
        audiences = tuple(common)
    return {"authenticated": True, "user": user, "audiences": list(audiences)}


def _quoted(values: Any) -> str:
    return "[" + " ".join(f'"{value}"' for value in values) + "]"


def _token_request(store: Store, route: Route, document: Any) -> dict[str, Any]:
    namespace, name = route.namespace or "", route.name or ""
    account = store.objects[("", "serviceaccounts")].get((namespace, name))
    if account is None:
        raise not_found("serviceaccounts", "", name)
    spec = dict((document or {}).get("spec") or {})
    seconds = spec.get("expirationSeconds")
    seconds = 3600 if seconds is None else seconds
    if not isinstance(seconds, int) or seconds < 600:
        cause = field_invalid(
            "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
        )
        raise invalid("TokenRequest", _AUTHN, None, causes=[cause])
    if seconds > 2**32:
        cause = field_invalid(
            "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"
        )
        raise invalid("TokenRequest", _AUTHN, None, causes=[cause])
    audiences = tuple(str(a) for a in spec.get("audiences") or ()) or (_AUDIENCE,)
    now = store.now()
    token = "eyJhbGciOiJSUzI1NiJ9." + store.uid().replace("-", "") + store.uid().replace("-", "")
    uid = str(account["metadata"].get("uid") or "")
    _issued.setdefault(store, {})[token] = _Issued(namespace, name, uid, audiences, store.uid())
    expiry = datetime.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ") + datetime.timedelta(
        seconds=seconds
    )
    return {
        "kind": "TokenRequest",
        "apiVersion": f"{_AUTHN}/v1",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": now},
        "spec": {
            "audiences": list(audiences),
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {"token": token, "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")},
    }
