"""``kind: Status`` answers, shaped as kube-apiserver shapes them (checked against v1.36).

Pure. Every refusal of the fake API is a :class:`StatusError` carrying the exact body the real
server sends for the same case; the HTTP layer turns it into a response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "Cause",
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "forbidden_terminating",
    "invalid",
    "no_such_resource",
    "not_found",
    "precondition_failed",
    "rejected_patch",
    "status_body",
    "success",
    "too_large_version",
    "unsupported_media_type",
]

Cause = dict[str, str]
"""One entry of ``details.causes``: ``reason``, ``message`` and maybe ``field``."""


class StatusError(Exception):
    """A request refused with a ``Status`` body.

    Attributes:
        code: The HTTP status code.
        body: The ``Status`` document, exactly as sent.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.code = int(body["code"])
        self.body = body

    @property
    def reason(self) -> str:
        """The machine-readable reason, e.g. ``NotFound``."""
        return str(self.body.get("reason", ""))


def status_body(
    code: int, reason: str, message: str, *, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A failure ``Status``; ``details=None`` leaves the key out (as some answers do)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = dict(details)
    body["code"] = code
    return body


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> StatusError:
    """404 for a missing object (or namespace: ``plural="namespaces"``)."""
    message = f'{_qualified(plural, group)} "{name}" not found'
    return StatusError(status_body(404, "NotFound", message, details=_details(name, group, plural)))


def no_such_resource() -> StatusError:
    """404 for an unknown resource in a known group version."""
    message = "the server could not find the requested resource"
    return StatusError(status_body(404, "NotFound", message, details={}))


def already_exists(plural: str, group: str, name: str, *, deleting: bool = False) -> StatusError:
    """409 for a create whose name is taken (``deleting``: by an object being deleted)."""
    message = f'{_qualified(plural, group)} "{name}" already exists'
    if deleting:
        message = f"object is being deleted: {message}"
    return StatusError(
        status_body(409, "AlreadyExists", message, details=_details(name, group, plural))
    )


def conflict(plural: str, group: str, name: str, *, why: str | None = None) -> StatusError:
    """409 for a write based on a stale resourceVersion (or a failed precondition: ``why``)."""
    what = f'{_qualified(plural, group)} "{name}"'
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    message = f"Operation cannot be fulfilled on {what}: {why}"
    return StatusError(status_body(409, "Conflict", message, details=_details(name, group, plural)))


def precondition_failed(kind: str, group: str, name: str, *, why: str) -> StatusError:
    """409 for a DELETE whose uid or resourceVersion precondition does not hold."""
    what = f'{kind}.{group} "{name}"' if group else f'{kind} "{name}"'
    message = f"Operation cannot be fulfilled on {what}: {why}"
    return StatusError(status_body(409, "Conflict", message, details=_details(name, group, kind)))


def invalid(
    kind: str, group: str, name: str | None, *, causes: Sequence[tuple[str, Cause]]
) -> StatusError:
    """422 with field causes; each cause is ``(field, {"reason", "message"})``.

    The message reads ``<Kind>[.<group>] "<name>" is invalid: <field>: <message>, ...``.
    """
    qualified = f"{kind}.{group}" if group else kind
    parts = list(dict.fromkeys(f"{field}: {cause['message']}" for field, cause in causes))
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    message = f'{qualified} "{name or ""}" is invalid: {joined}'
    listed = [{**cause, "field": field} for field, cause in causes]
    details = _details(name or None, group, kind) | {"causes": listed}
    return StatusError(status_body(422, "Invalid", message, details=details))


def rejected_patch() -> StatusError:
    """422 for a JSON patch that cannot be applied (a failed ``test``, a missing path)."""
    message = "the server rejected our request due to an error in our request"
    return StatusError(status_body(422, "Invalid", message, details={}))


def bad_request(message: str) -> StatusError:
    """400 with a message and no details."""
    return StatusError(status_body(400, "BadRequest", message))


def unsupported_media_type(accepted: Sequence[str]) -> StatusError:
    """415 for a patch type the resource does not take (strategic merge on a custom resource)."""
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    return StatusError(status_body(415, "UnsupportedMediaType", message))


def forbidden(plural: str, group: str, name: str, why: str) -> StatusError:
    """403 from an admission plugin: ``<resource> "<name>" is forbidden: <why>``."""
    message = f'{_qualified(plural, group)} "{name}" is forbidden: {why}'
    details = _details(name, group, plural)
    return StatusError(status_body(403, "Forbidden", message, details=details))


def forbidden_terminating(plural: str, group: str, name: str, *, namespace: str) -> StatusError:
    """403 for a create in a namespace that is being deleted."""
    message = (
        f'{_qualified(plural, group)} "{name}" is forbidden: unable to create new content in '
        f"namespace {namespace} because it is being terminated"
    )
    cause = {
        "reason": "NamespaceTerminating",
        "message": f"namespace {namespace} is being terminated",
        "field": "metadata.namespace",
    }
    details = _details(name, group, plural) | {"causes": [cause]}
    return StatusError(status_body(403, "Forbidden", message, details=details))


def expired(message: str) -> StatusError:
    """410 for a compacted resourceVersion or continue token (reason ``Expired``)."""
    return StatusError(status_body(410, "Expired", message))


def too_large_version(requested: int, current: int) -> StatusError:
    """504 for a resourceVersion newer than any the server has seen."""
    message = f"Timeout: Too large resource version: {requested}, current: {current}"
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    details = {"causes": [cause], "retryAfterSeconds": 1}
    return StatusError(status_body(504, "Timeout", message, details=details))


def success(name: str, group: str, plural: str, *, uid: str) -> dict[str, Any]:
    """The ``Status`` of a DELETE that removed the object at once."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": _details(name, group, plural) | {"uid": uid},
    }
