"""The resources that store nothing and answer with a status: TokenReviews and
SelfSubjectReviews (``authentication.k8s.io/v1``), SubjectAccessReviews, LocalSubjectAccessReviews,
SelfSubjectAccessReviews and SelfSubjectRulesReviews (``authorization.k8s.io/v1``), and a
ServiceAccount's ``token`` subresource (a TokenRequest).

Sync. The fake authenticates nobody: its callers are the cluster admin
(:mod:`~anyop.testing.fake.identity`), so a SelfSubjectReview names the admin and a
SelfSubjectAccessReview is allowed. A SubjectAccessReview is decided by
:mod:`~anyop.testing.fake.access_rules` (``system:masters``, then the stored RBAC objects). A
TokenReview authenticates the tokens the fake issued
(through ``serviceaccounts/<name>/token``: JWTs, see
:mod:`~anyop.testing.fake.service_account_tokens`) as kube-apiserver does, and
the fake's own admin token; any other token is ``invalid bearer token``. So anyop's metrics
authorisation (a TokenReview, then a SubjectAccessReview of a non-resource URL) works against a
FakeCluster as against a cluster: a token requested for a ServiceAccount bound to a ClusterRole
that allows ``get`` on ``/metrics`` is allowed, others are not.
"""

from __future__ import annotations

import datetime
import weakref
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import service_account_tokens as tokens
from anyop.testing.fake.access_rules import authorize
from anyop.testing.fake.body_kinds import checked_body_kind
from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.identity import ADMIN_TOKEN, admin_user
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.request_bodies import decode_body
from anyop.testing.fake.routes import Route
from anyop.testing.fake.statuses import (
    bad_request,
    conflict,
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
    if route.name is not None or kind.namespaced != (route.namespace is not None):
        raise no_such_resource()  # (a review of the other scope's path is none)
    if method != "POST":
        return 405, _not_allowed()
    document = decode_body(kind, content_type, body)
    if not isinstance(document, Mapping):
        raise bad_request("the request body is not an object")
    checked_body_kind(kind, document, body)
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
        audiences = [_AUDIENCE]
        if wanted and _AUDIENCE not in wanted:
            error = (f"[invalid bearer token, token audiences {_quoted(audiences)} is invalid "
                     f"for the target audiences {_quoted(wanted)}]")  # fmt: skip
            return {"user": {}, "error": error}
        return {"authenticated": True, "user": admin_user(), "audiences": audiences}

    def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = store.objects[("", plural)].get((namespace, name))
        return found

    now = store.now()
    cache = _authenticated.setdefault(store, {})
    key = (token, tuple(wanted))
    if (cached := cache.get(key)) is not None and now < cached[0]:
        return json_copy(cached[1])  # authenticated a moment ago: kube-apiserver's cache
    try:
        user, audiences = tokens.authenticate(store, token, wanted=wanted, now=now,
                                              lookup=lookup)  # fmt: skip
    except tokens.Refused as refused:
        why = str(refused)
        return {"user": {}, "error": f"[invalid bearer token, {why}]" if why else
                "invalid bearer token"}  # fmt: skip
    status = {"authenticated": True, "user": user, "audiences": audiences}
    cache[key] = (_later(now, _CACHED_SECONDS), json_copy(status))
    return status


_CACHED_SECONDS = 10
"""How long kube-apiserver keeps a token's successful authentication (its token cache's
success TTL; failures are not kept): a token whose service account or bound object goes is
still authenticated for that long."""
_authenticated: weakref.WeakKeyDictionary[Store, dict[Any, tuple[str, dict[str, Any]]]] = (
    weakref.WeakKeyDictionary()
)


def _later(stamp: str, seconds: int) -> str:
    moment = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    return (moment + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quoted(values: Any) -> str:
    return "[" + " ".join(f'"{value}"' for value in values) + "]"


def _bound(store: Store, namespace: str, account: str, ref: Any) -> dict[str, dict[str, str]]:
    """The claims of what a TokenRequest binds its token to (``boundObjectRef``), as
    kube-apiserver checks them.

    Raises:
        StatusError: 400 (another kind, a Pod of another service account), 404, 409 (uid).
    """
    if not isinstance(ref, Mapping):
        return {}
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
    found: dict[str, Any] | None
    bound: dict[str, dict[str, str]] = {}
    if group == "" and kind == "Pod":
        found = store.objects[("", "pods")].get((namespace, name))
        if found is None:
            raise not_found("pods", "", name)
        if (found.get("spec") or {}).get("serviceAccountName") != account:
            raise bad_request(f"cannot bind token for serviceaccount {go_quoted(account)} to pod "
                              "running with different serviceaccount name.")  # fmt: skip
        bound["pod"] = {"name": name, "uid": str(found["metadata"]["uid"])}
        if node := (found.get("spec") or {}).get("nodeName"):
            held = store.objects[("", "nodes")].get(("", str(node)))
            uid = str(held["metadata"]["uid"]) if held is not None else ""
            bound["node"] = {"name": str(node), **({"uid": uid} if uid else {})}
    elif group == "" and kind in ("Node", "Secret"):
        plural, where = ("nodes", "") if kind == "Node" else ("secrets", namespace)
        found = store.objects[("", plural)].get((where, name))
        if found is None:
            raise not_found(plural, "", name)
        bound[kind.lower()] = {"name": name, "uid": str(found["metadata"]["uid"])}
    else:
        shown = f"{group}/{version}, Kind={kind}" if group else f"{version}, Kind={kind}"
        raise bad_request(f"cannot bind token to object of type {shown}")
    uid = found["metadata"]["uid"]
    if ref.get("uid") and ref["uid"] != uid:
        why = (f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
               "record. The object might have been deleted and then recreated")  # fmt: skip
        raise conflict(kind, "", name, why=why)
    return bound


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
    bound = _bound(store, namespace, name, spec.get("boundObjectRef"))
    now = store.now()
    token = tokens.issue(store, now=now, seconds=seconds, audiences=audiences,
                         namespace=namespace, account=account, bound=bound,
                         jti=store.uid())  # fmt: skip
    uid = str(account["metadata"].get("uid") or "")
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
