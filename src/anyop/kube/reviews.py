"""Asking the API server who a bearer token belongs to, and what that user may do.

A :func:`review_token` is a ``TokenReview`` (``authentication.k8s.io/v1``): the API server checks
the token (signature, expiry, a ServiceAccount that still exists) and answers with its user. A
:func:`review_access` is a ``SubjectAccessReview`` (``authorization.k8s.io/v1``): whether that
user may use a verb on a non-resource URL such as ``/metrics``, by the cluster's RBAC. Both
create nothing that stays; the operator needs ``create`` on ``tokenreviews`` and
``subjectaccessreviews`` for them.

The bodies and the verdicts are pure functions; the two requests are thin shells around them.
The token travels in a request body, which :mod:`anyop.kube.client` never logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from anyop.kube.client import KubeClient, Request

__all__ = [
    "ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "ReviewedUser",
    "access_review_body",
    "parse_access_review",
    "parse_token_review",
    "review_access",
    "review_token",
    "token_review_body",
]

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
"""Where TokenReviews are created."""
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
"""Where SubjectAccessReviews are created."""


@dataclass(frozen=True)
class ReviewedUser:
    """Who a token belongs to, as the API server said (``TokenReview.status.user``)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def token_review_body(token: str) -> dict[str, Any]:
    """The TokenReview that asks about ``token``. Pure."""
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }


def parse_token_review(document: Any) -> ReviewedUser | None:
    """The user of an answered TokenReview, or ``None`` if the token is not authenticated. Pure.

    An answer without a user name counts as not authenticated: there is nobody to authorise.
    """
    status = document.get("status") if isinstance(document, Mapping) else None
    if not isinstance(status, Mapping) or status.get("authenticated") is not True:
        return None
    user = status.get("user")
    if not isinstance(user, Mapping) or not isinstance(user.get("username"), str):
        return None
    if not user["username"]:
        return None
    given = user.get("extra")
    extra: Mapping[Any, Any] = given if isinstance(given, Mapping) else {}
    return ReviewedUser(
        username=user["username"],
        uid=str(user.get("uid") or ""),
        groups=tuple(str(group) for group in user.get("groups") or ()),
        extra={str(key): tuple(str(v) for v in values or ()) for key, values in extra.items()},
    )


def access_review_body(user: ReviewedUser, *, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview that asks whether ``user`` may ``verb`` the URL ``path``. Pure."""
    spec: dict[str, Any] = {
        "user": user.username,
        "groups": list(user.groups),
        "nonResourceAttributes": {"path": path, "verb": verb},
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra.items()}
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    }


def parse_access_review(document: Any) -> bool:
    """Whether an answered SubjectAccessReview allows the access (only an explicit yes). Pure."""
    status = document.get("status") if isinstance(document, Mapping) else None
    return isinstance(status, Mapping) and status.get("allowed") is True


async def review_token(client: KubeClient, token: str) -> ReviewedUser | None:
    """Who ``token`` belongs to, or ``None`` if the API server does not authenticate it.

    Raises:
        ApiError: The review itself failed (e.g. 403: the operator may not create TokenReviews).
        TransportError: The API server could not be reached.
    """
    request = Request("POST", TOKEN_REVIEWS, body=token_review_body(token))
    return parse_token_review(await client.request(request))


async def review_access(client: KubeClient, user: ReviewedUser, *, path: str, verb: str) -> bool:
    """Whether ``user`` may ``verb`` the non-resource URL ``path``.

    Raises:
        ApiError: The review itself failed (e.g. 403: the operator may not create
            SubjectAccessReviews).
        TransportError: The API server could not be reached.
    """
    body = access_review_body(user, path=path, verb=verb)
    return parse_access_review(await client.request(Request("POST", ACCESS_REVIEWS, body=body)))
