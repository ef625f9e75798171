"""The one exception tree of anyop.

Everything anyop raises on purpose derives from :class:`AnyopError`. Errors that come from the
Kubernetes API are :class:`ApiError` subclasses chosen by HTTP status, so callers decide by type
whether to retry; httpx's own exceptions never leave ``anyop.kube``. Errors that user handlers raise
to steer the framework (:class:`TemporaryError`, :class:`PermanentError`) keep Kopf's names and
meanings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AdmissionError",
    "AnyopError",
    "ApiError",
    "BadRequestError",
    "ConfigError",
    "ConflictError",
    "ControlPlaneError",
    "ForbiddenError",
    "GoneError",
    "HandlerError",
    "HandlerRetriesError",
    "HandlerTimeoutError",
    "InvalidError",
    "LoginError",
    "NotFoundError",
    "PermanentError",
    "ResourceError",
    "ServerError",
    "TemporaryError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "api_error_for",
]


class AnyopError(Exception):
    """The base of every error that anyop raises on purpose."""


class ConfigError(AnyopError):
    """Bad configuration: a kubeconfig, a setting, a decorator argument, a CLI option.

    The message names the culprit (the file and field, the setting, the handler).
    """


class LoginError(AnyopError):
    """No credentials could be obtained: every login handler failed or returned nothing usable."""


class ControlPlaneError(AnyopError):
    """The local control plane could not be built, started, or reached."""


class ResourceError(AnyopError):
    """A resource selector matched nothing, or more than one resource."""


class TransportError(AnyopError):
    """The API server could not be reached, or the connection broke mid-request.

    Retryable for idempotent requests. Wraps the transport's own exception as ``__cause__``.

    Attributes:
        origin: Which API server, and where its address and credentials come from (``the API
            server https://... of the kubeconfig ..., context '...'``); the final error of a
            request names it.
    """

    origin: str | None = None


class ApiError(AnyopError):
    """The API server answered with an error status.

    Attributes:
        status: The HTTP status code.
        reason: The Kubernetes ``Status.reason`` (``NotFound``, ``Conflict``, ``Expired``...),
            or ``""``.
        message: The Kubernetes ``Status.message``, or the start of a non-JSON body.
        details: The Kubernetes ``Status.details`` mapping, or an empty one.
        retry_after: Seconds the server asked us to wait (``Retry-After`` or
            ``details.retryAfterSeconds``), if it said so.
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int,
        reason: str = "",
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        reason = f" {self.reason}" if self.reason else ""
        return f"({self.status}{reason}) {self.message}"


class BadRequestError(ApiError):
    """400: the request itself is malformed."""


class UnauthorizedError(ApiError):
    """401: the credentials are missing, expired or revoked; re-login may help."""


class ForbiddenError(ApiError):
    """403: RBAC denies it, or the namespace is terminating."""


class NotFoundError(ApiError):
    """404: the object, the namespace, or the resource does not exist."""


class ConflictError(ApiError):
    """409: a stale resourceVersion, an existing name, or a server-side-apply conflict."""


class GoneError(ApiError):
    """410: the requested resourceVersion was compacted away; relist."""


class InvalidError(ApiError):
    """422: the object fails validation, or a JSON-patch ``test`` failed."""


class TooManyRequestsError(ApiError):
    """429: API priority and fairness or max-in-flight rejected us; wait ``retry_after``."""

    retryable = True


class ServerError(ApiError):
    """5xx: the API server or etcd failed, or is shutting down."""

    retryable = True


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def api_error_for(status: int) -> type[ApiError]:
    """Return the :class:`ApiError` subclass that stands for an HTTP status code."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


class HandlerError(AnyopError):
    """The base of errors that handlers raise to tell the framework what to do next."""


class PermanentError(HandlerError):
    """The handler failed for good; it is not retried for this cause."""


class TemporaryError(HandlerError):
    """The handler failed for now; retry it after ``delay`` seconds (``None``: at once).

    Args:
        message: What went wrong, shown in the logs and the progress record.
        delay: Seconds to wait before the retry; Kopf's default is 60.
    """

    def __init__(self, message: str = "", delay: float | None = 60) -> None:
        super().__init__(message)
        self.delay = delay


class HandlerTimeoutError(PermanentError):
    """The handler ran past its ``timeout=``, counted from its first attempt."""


class HandlerRetriesError(PermanentError):
    """The handler failed more often than its ``retries=`` allow."""


class AdmissionError(PermanentError):
    """Deny an admission request with this message and HTTP ``code`` (500 by default)."""

    def __init__(self, message: str = "", code: int | None = 500) -> None:
        super().__init__(message)
        self.code = code
