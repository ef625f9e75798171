"""ConversionReview requests and responses (``apiextensions.k8s.io/v1`` and ``v1beta1``), pure.

The API server POSTs a ``ConversionReview`` whose ``request`` holds a ``uid``, the
``desiredAPIVersion`` and the ``objects`` to convert; the webhook answers with a review of the
same ``apiVersion`` whose ``response`` echoes the ``uid`` and holds either every object
converted, in order, with ``result.status: Success``, or ``result.status: Failed`` with a
message for the API client.

:func:`parse_conversion` checks the review (bad input raises
:class:`~anyop.webhooks.review.ReviewError`, answered with a 4xx); :func:`converted_object`
puts a conversion function's result into the shape Kubernetes accepts (the target
``apiVersion``, the original ``kind`` and metadata, but for labels and annotations);
:func:`build_conversion_response` writes the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.webhooks.review import MAX_DEPTH, ReviewError, too_deep

__all__ = [
    "CHANGEABLE_METADATA",
    "CONVERSION_REVIEW_VERSIONS",
    "ConversionFailure",
    "ConversionRequest",
    "build_conversion_response",
    "converted_object",
    "parse_conversion",
    "split_api_version",
]

CONVERSION_REVIEW_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
"""The ConversionReview versions understood and answered in kind (the first one is preferred)."""

CHANGEABLE_METADATA = ("labels", "annotations")
"""The only metadata that a conversion may change (the API server refuses the rest)."""


class ConversionFailure(Exception):
    """A review that is well-formed but cannot be converted: answered as ``Failed`` with the
    message (an unknown version, an object of another resource, a function's error)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConversionRequest:
    """The parts of a ConversionReview that the conversion needs.

    Attributes:
        api_version: The review's ``apiVersion`` (the answer uses the same one).
        uid: The request's uid (echoed in the answer).
        desired_api_version: The ``group/version`` to convert every object to.
        objects: The objects to convert, in order.
    """

    api_version: str
    uid: str
    desired_api_version: str
    objects: Sequence[Mapping[str, Any]]


def parse_conversion(payload: Any) -> ConversionRequest:
    """Check a ConversionReview and extract its request.

    Raises:
        ReviewError: The payload is not a ConversionReview of a known version, its request
            lacks a uid or a desired API version, or its objects are not a list of objects.
    """
    if not isinstance(payload, Mapping):
        raise ReviewError("The request body is not a JSON object.")
    api_version, kind = payload.get("apiVersion"), payload.get("kind")
    if kind != "ConversionReview" or api_version not in CONVERSION_REVIEW_VERSIONS:
        expected = " or ".join(CONVERSION_REVIEW_VERSIONS)
        raise ReviewError(
            f"Expected kind ConversionReview of {expected}; got {kind!r} of {api_version!r}."
        )
    request = payload.get("request")
    if not isinstance(request, Mapping):
        raise ReviewError("The ConversionReview has no request.")
    uid, desired = request.get("uid"), request.get("desiredAPIVersion")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("The ConversionReview's request has no uid.")
    if not isinstance(desired, str) or "/" not in desired:
        raise ReviewError(f"The ConversionReview's desiredAPIVersion is malformed: {desired!r}.")
    objects = request.get("objects")
    if not isinstance(objects, list) or not all(isinstance(o, Mapping) for o in objects):
        raise ReviewError("The ConversionReview's objects are not a list of objects.")
    if too_deep(objects, MAX_DEPTH):
        raise ReviewError(f"The ConversionReview's objects are nested deeper than {MAX_DEPTH}.")
    return ConversionRequest(
        api_version=api_version, uid=uid, desired_api_version=desired, objects=objects
    )


def split_api_version(api_version: Any) -> tuple[str, str]:
    """``"group/version"`` as ``(group, version)``.

    Raises:
        ConversionFailure: It is not a string of that form (custom resources have a group).
    """
    if not isinstance(api_version, str) or api_version.count("/") != 1:
        raise ConversionFailure(f"Not an apiVersion of a custom resource: {api_version!r}.")
    group, version = api_version.split("/")
    if not group or not version:
        raise ConversionFailure(f"Not an apiVersion of a custom resource: {api_version!r}.")
    return group, version


def converted_object(
    original: Mapping[str, Any], result: Mapping[str, Any], *, api_version: str
) -> dict[str, Any]:
    """The object to answer with: the result in ``api_version``, with the original's ``kind``
    and metadata, and the result's labels and annotations.

    Raises:
        ConversionFailure: The result changed metadata other than labels and annotations, or
            its metadata, labels or annotations are not objects.
    """
    before = original.get("metadata") or {}
    after = result.get("metadata", before)
    if not isinstance(after, Mapping):
        raise ConversionFailure(f"The converted metadata is not an object: {after!r:.200}.")
    changed = sorted(
        key
        for key in set(before) | set(after)
        if key not in CHANGEABLE_METADATA and before.get(key) != after.get(key)
    )
    if changed:
        names = ", ".join(f"metadata.{key}" for key in changed)
        raise ConversionFailure(
            f"A conversion may change only the labels and annotations, not {names}."
        )
    metadata = dict(before)
    for key in CHANGEABLE_METADATA:
        value = after.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise ConversionFailure(f"The converted metadata.{key} is not an object.")
        if value:
            metadata[key] = dict(value)
        else:
            metadata.pop(key, None)
    converted = {**result, "apiVersion": api_version, "metadata": metadata}
    converted["kind"] = original.get("kind")
    return converted


def build_conversion_response(
    request: ConversionRequest,
    *,
    converted: Sequence[Mapping[str, Any]] = (),
    failure: str | None = None,
) -> dict[str, Any]:
    """The ConversionReview that answers a request (same apiVersion, same uid).

    Args:
        request: The request being answered.
        converted: Every object converted, in the request's order (ignored on failure).
        failure: Why the conversion failed, for the API client; ``None`` if it succeeded.
    """
    response: dict[str, Any] = {"uid": request.uid}
    if failure is None:
        response["convertedObjects"] = list(converted)
        response["result"] = {"status": "Success"}
    else:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failed", "message": failure}
    return {"apiVersion": request.api_version, "kind": "ConversionReview", "response": response}
