"""AdmissionReview requests and responses (``admission.k8s.io/v1`` and ``v1beta1``), pure.

The API server POSTs an ``AdmissionReview`` with a ``request``; the webhook must answer with an
``AdmissionReview`` of the same ``apiVersion`` whose ``response.uid`` is the request's ``uid``.
:func:`decode_review` turns raw bytes into JSON, :func:`parse_review` checks the review and
extracts what handlers need, and :func:`build_response` writes the answer: allowed or denied
(with a message and a code), with warnings, and with a base64 ``JSONPatch`` for mutations.

Bad input raises :class:`ReviewError` with the HTTP status to answer (400 for garbage, 404 for
an unknown resource); it never becomes a traceback.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, TypedDict

from anyop._jsons import compact
from anyop.errors import AdmissionError, PermanentError, TemporaryError

__all__ = [
    "MAX_DEPTH",
    "REVIEW_VERSIONS",
    "AdmissionRequest",
    "Headers",
    "Operation",
    "RequestHeaders",
    "ReviewError",
    "SSLPeer",
    "UserInfo",
    "WebhookFn",
    "WebhookServerProtocol",
    "build_response",
    "decode_review",
    "error_status",
    "parse_review",
    "too_deep",
]

REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
"""The AdmissionReview versions understood and answered in kind (the first one is preferred)."""

MAX_DEPTH = 200
"""The deepest nesting of JSON accepted in a review (recursive code must not overflow on it)."""

OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

Headers = Mapping[str, str]
"""The HTTP headers of a review request."""


class RequestHeaders(Mapping[str, str]):
    """A request's headers for handlers: names match in any case (``headers["User-Agent"]``).

    HTTP header names are case-insensitive; ASGI servers give them in lower case. Kopf's
    handlers read them as sent (``User-Agent``): both spellings find the header here.
    """

    __slots__ = ("_items",)

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        self._items = {name.lower(): value for name, value in (headers or {}).items()}

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __repr__(self) -> str:
        return f"RequestHeaders({self._items!r})"


SSLPeer = Mapping[str, Any]
"""The verified client certificate, as :meth:`ssl.SSLSocket.getpeercert` returns it."""


class ReviewError(ValueError):
    """A request that is not a usable AdmissionReview; answered with an HTTP error, not a review.

    Args:
        message: What is wrong, for the client.
        status: The HTTP status to answer with.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class WebhookFn(Protocol):
    """What webhook servers call with each review's JSON; the framework provides it (Kopf's name).

    Servers pass the handler id from the URL as ``webhook``, and the request's ``headers`` and
    verified client certificate (``sslpeer``) for handlers that authenticate the caller. The
    result is the response review, to be serialised as JSON with HTTP status 200.

    Raises:
        ReviewError: The payload is not a usable review; answer with its ``status``.
    """

    async def __call__(
        self,
        request: Any,
        *,
        webhook: str | None = None,
        headers: Headers | None = None,
        sslpeer: SSLPeer | None = None,
    ) -> dict[str, Any]: ...


class WebhookServerProtocol(Protocol):
    """What ``settings.admission.server`` may be (Kopf's name): called once with the framework's
    :class:`WebhookFn`, it serves the reviews with it and yields the client configuration for
    the webhook configurations (``url`` or ``service``, and ``caBundle``) each time it changes.

    :class:`anyop.WebhookServer` is one; any object of this shape works the same.
    """

    def __call__(self, fn: WebhookFn) -> AsyncIterator[Mapping[str, Any]]: ...


Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
"""The ``operation`` kwarg of admission handlers: what the request does to the object."""


class UserInfo(TypedDict):
    """The ``userinfo`` kwarg of admission handlers: who sent the request."""

    username: str
    uid: str
    groups: list[str]


class _GroupVersionResource(TypedDict):
    group: str
    version: str
    resource: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class AdmissionRequest:
    """The parts of an admission review that the handlers see.

    Attributes:
        api_version: The review's ``apiVersion`` (the answer uses the same one).
        uid: The request's uid (echoed in the answer).
        group: The resource's API group (``""`` for the core API).
        version: The resource's API version.
        plural: The resource's plural name.
        kind: The object's kind.
        subresource: E.g. ``"status"``; ``None`` for the main resource.
        operation: ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``.
        dryrun: Whether the request is a dry run (no side effects allowed).
        userinfo: Who sends the API request, as the API server tells it.
        new: The object after the operation (``None`` for deletions).
        old: The object before it (``None`` for creations).
    """

    api_version: str
    uid: str
    group: str
    version: str
    plural: str
    kind: str | None
    subresource: str | None
    operation: str
    dryrun: bool
    userinfo: Mapping[str, Any]
    new: Mapping[str, Any] | None
    old: Mapping[str, Any] | None

    @property
    def body(self) -> Mapping[str, Any]:
        """The object the handlers look at: the new one, or the old one for deletions."""
        return self.new if self.new is not None else self.old or {}


def decode_review(raw: bytes) -> Any:
    """Parse a review's bytes as JSON.

    Raises:
        ReviewError: Empty, not UTF-8, not JSON, or nested too deeply to parse.
    """
    if not raw.strip():
        raise ReviewError("The request body is empty; an AdmissionReview is expected.")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ReviewError("The request body is nested too deeply.") from None
    except ValueError as e:  # UnicodeDecodeError included
        raise ReviewError(f"The request body is not JSON: {e}.") from None


def parse_review(payload: Any) -> AdmissionRequest:
    """Check an AdmissionReview and extract its request.

    Raises:
        ReviewError: The payload is not an AdmissionReview of a known version, or its request
            lacks a uid, a resource or an operation, or its objects are not objects.
    """
    if not isinstance(payload, Mapping):
        raise ReviewError("The request body is not a JSON object.")
    api_version, kind = payload.get("apiVersion"), payload.get("kind")
    if kind != "AdmissionReview" or api_version not in REVIEW_VERSIONS:
        expected = " or ".join(REVIEW_VERSIONS)
        raise ReviewError(
            f"Expected kind AdmissionReview of {expected}; got {kind!r} of {api_version!r}."
        )
    request = payload.get("request")
    if not isinstance(request, Mapping):
        raise ReviewError("The AdmissionReview has no request.")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("The AdmissionReview's request has no uid.")
    resource = _resource(request.get("resource"))
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise ReviewError(f"The AdmissionReview has an unknown operation: {operation!r}.")
    kind_info = request.get("kind")
    return AdmissionRequest(
        api_version=api_version,
        uid=uid,
        group=resource["group"],
        version=resource["version"],
        plural=resource["resource"],
        kind=kind_info.get("kind") if isinstance(kind_info, Mapping) else None,
        subresource=request.get("subResource") or None,
        operation=operation,
        dryrun=bool(request.get("dryRun")),
        userinfo=_mapping(request.get("userInfo"), "userInfo") or {},
        new=_mapping(request.get("object"), "object"),
        old=_mapping(request.get("oldObject"), "oldObject"),
    )


def _resource(value: Any) -> _GroupVersionResource:
    if not isinstance(value, Mapping):
        raise ReviewError("The AdmissionReview's request has no resource.")
    group, version, plural = value.get("group", ""), value.get("version"), value.get("resource")
    if not all(isinstance(part, str) for part in (group, version, plural)) or not plural:
        raise ReviewError(f"The AdmissionReview's resource is malformed: {value!r:.200}.")
    return {"group": str(group), "version": str(version), "resource": str(plural)}


def _mapping(value: Any, name: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, Mapping):
        raise ReviewError(f"The AdmissionReview's {name} is not an object.")
    if value is not None and too_deep(value, MAX_DEPTH):
        raise ReviewError(f"The AdmissionReview's {name} is nested deeper than {MAX_DEPTH}.")
    return value


def too_deep(value: Any, limit: int) -> bool:
    """Whether JSON nests deeper than ``limit`` (iteratively: deep input cannot overflow it)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
    return False


def error_status(errors: Iterable[BaseException]) -> tuple[str, int] | None:
    """The one message and code to deny with: admission errors first, then permanent, then
    temporary, then any other error (Kopf's order); ``None`` if there are no errors."""
    error = min(errors, key=_rank, default=None)  # the first of equals, as sorting keeps them
    if error is None:
        return None
    message = str(error) or type(error).__name__
    code = error.code if isinstance(error, AdmissionError) else None
    return message, code if code is not None else 500


def _rank(error: BaseException) -> int:
    for rank, kind in enumerate((AdmissionError, PermanentError, TemporaryError)):
        if isinstance(error, kind):
            return rank
    return 3


def build_response(
    request: AdmissionRequest,
    *,
    warnings: Sequence[str] = (),
    denial: tuple[str, int] | None = None,
    patch: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The AdmissionReview that answers a request (same apiVersion, same uid).

    Args:
        request: The request being answered.
        warnings: Shown to the API client (e.g. by kubectl as ``Warning: ...``).
        denial: ``(message, code)`` to deny the request; ``None`` to allow it.
        patch: JSON-patch operations for the object (ignored when denied).
    """
    response: dict[str, Any] = {"uid": request.uid, "allowed": denial is None}
    if warnings:
        response["warnings"] = [str(warning) for warning in warnings]
    if denial is not None:
        message, code = denial
        response["status"] = {"message": message, "code": code}
    elif patch:
        encoded = compact(list(patch)).encode()
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(encoded).decode("ascii")
    return {"apiVersion": request.api_version, "kind": "AdmissionReview", "response": response}
