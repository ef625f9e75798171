"""Objects of a built-in kind served in several versions, converted between them as
kube-apiserver converts them: stored in the kind's storage version, served in the version asked.

Pure. A kind without a conversion here (every custom resource, and the built-in kinds served in
one version) is the same object in each version but for its ``apiVersion``. A kind with one
(HorizontalPodAutoscalers: ``autoscaling/v1`` and ``autoscaling/v2``) has a sync function that
converts a body to a version; its objects are stored in its storage version with that
version's defaults (which kube-apiserver applies to what it reads from storage).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.autoscaling_conversion import hpa_converted
from anyop.testing.fake.autoscaling_rules import hpa_defaults
from anyop.testing.fake.event_conversion import EVENTS_API, event_converted
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.statuses import bad_request

__all__ = [
    "as_decoded",
    "check_api_version",
    "converts",
    "for_storage",
    "in_version",
    "other_versions",
    "storage_version",
    "stored_as",
    "written",
]

Body = dict[str, Any]
_HPA = ("autoscaling", "HorizontalPodAutoscaler")
_EVENT, _EVENTS_EVENT = ("", "Event"), ("events.k8s.io", "Event")  # one storage: the first
_CONVERTERS: Mapping[tuple[str, str], Callable[[Mapping[str, Any], str], Body]] = {
    _HPA: hpa_converted,
    _EVENT: lambda body, version: event_converted(body, "v1"),
    _EVENTS_EVENT: lambda body, version: event_converted(body, EVENTS_API),
}
"""A kind's conversion: a body (of the version its ``apiVersion`` names) to a version."""
_STORAGE: Mapping[tuple[str, str], tuple[str, Callable[[Body], None]]] = {
    _HPA: ("v2", hpa_defaults),
    _EVENT: ("v1", lambda body: None),
    _EVENTS_EVENT: ("v1", lambda body: None),
}
"""A kind's storage version, and its defaults (filled in place)."""
_STORAGE_GROUP = {_EVENTS_EVENT: ""}
"""A kind stored as another group's (its storage version's group, where not its own)."""
_SERVED = {_HPA: ("autoscaling/v1", "autoscaling/v2"), _EVENT: ("v1", EVENTS_API),
           _EVENTS_EVENT: ("v1", EVENTS_API)}  # fmt: skip
"""The API versions a converted kind is served in."""


def converts(kind: Kind) -> bool:
    """Whether the kind's versions are converted (not only relabelled)."""
    return not kind.custom and (kind.group, kind.kind) in _CONVERTERS


def storage_version(kind: Kind) -> str:
    """The version the kind's objects are stored in (where converted; else its own)."""
    found = _STORAGE.get((kind.group, kind.kind)) if converts(kind) else None
    return found[0] if found else kind.version


def stored_as(kind: Kind) -> tuple[str, str]:
    """The group and version the kind's objects are stored in."""
    group = _STORAGE_GROUP.get((kind.group, kind.kind), kind.group) if converts(kind) else None
    return (kind.group if group is None else group), storage_version(kind)


def in_version(kind: Kind, body: Mapping[str, Any]) -> Body:
    """A body (stored, or a write's) as of the kind's version: converted, or relabelled; a new
    object (sharing the parts it keeps), or ``body`` itself where already so."""
    converter = _CONVERTERS.get((kind.group, kind.kind)) if not kind.custom else None
    if converter is not None:
        return converter(body, kind.version)
    if body.get("apiVersion") == kind.api_version and isinstance(body, dict):
        return body
    return {**body, "apiVersion": kind.api_version}


def for_storage(kind: Kind, body: Body) -> Body:
    """A write's object (of the kind's version, or already stored) as stored: in the storage
    version, with its defaults; ``body`` itself where the kind is not converted."""
    if not converts(kind):
        return body
    version, defaults = _STORAGE[(kind.group, kind.kind)]
    if not body.get("apiVersion"):  # a write's object is of its kind's version
        body = {**body, "apiVersion": kind.api_version}
    result = _CONVERTERS[(stored_as(kind)[0], kind.kind)](body, version)
    if result is body:
        return body
    defaults(result)
    return result


def written(
    kind: Kind,
    obj: Body,
    *,
    old: Mapping[str, Any] | None,
    request: Mapping[str, Any] | None = None,
    subresource: str | None = None,
) -> Body:
    """A write's object (of the kind's version) as stored, where its kind converts: what its
    strategy takes of the old object taken from the stored one (which the request's version
    may not hold whole), what it resets reset. A create's status is the empty one; an update
    keeps the stored status; a status update keeps the stored spec and takes the status the
    request (``request``, decoded) converts to. ``obj`` itself where the kind does not convert
    or ``obj`` is already of the storage version."""
    if not converts(kind):
        return obj
    result = for_storage(kind, obj)
    if result is obj or not kind.status:
        return result
    if old is None:  # the status of obj: the empty one, without the annotations' conditions
        result["status"] = for_storage(kind, {**obj, "metadata": {}})["status"]
    elif subresource is None:
        result["status"] = old.get("status")
    elif subresource == "status" and request is not None:
        result["spec"] = old.get("spec")
        result["status"] = for_storage(kind, dict(request))["status"]
    return result


def other_versions(
    kind: Kind, stored: Mapping[str, Any], old: Mapping[str, Any]
) -> Callable[[Mapping[str, Any], str], Body] | None:
    """Where the kind converts, how the field manager sees an update's objects in another
    version of it (``group/version``): converted without the storage's defaults, the old one
    (``old``, as of the update's version) from the object as stored (``stored``)."""
    if not converts(kind):
        return None

    def convert(body: Mapping[str, Any], api_version: str) -> Body:
        group, _, version = api_version.rpartition("/")
        other = dataclasses.replace(kind, group=group, version=version)
        return in_version(other, stored if body is old else body)

    return convert


def as_decoded(kind: Kind, body: Mapping[str, Any]) -> Body:
    """A request's (or a patch's result's) object of a converted kind as its decoder reads it:
    of the version its ``apiVersion`` names where that is another served one (converted to the
    kind's), else of the kind's version."""
    if _other_version(kind, body):
        return in_version(kind, body)
    return {**body, "apiVersion": kind.api_version}


def _other_version(kind: Kind, body: Mapping[str, Any]) -> bool:
    given = body.get("apiVersion")
    if not converts(kind) or not isinstance(given, str):
        return False
    return given != kind.api_version and given in _SERVED[(kind.group, kind.kind)]


def check_api_version(kind: Kind, body: Mapping[str, Any]) -> None:
    """Refuse the object of a create or replace of a converted kind that names another
    version of it (which kube-apiserver decodes, then finds not the URL's).

    Raises:
        StatusError: 400.
    """
    if _other_version(kind, body):
        message = (f"the API version in the data ({body['apiVersion']}) does not match the "
                   f"expected API version ({kind.api_version})")  # fmt: skip
        raise bad_request(message)
