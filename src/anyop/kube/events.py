"""Posting Kubernetes Events (core/v1) about the objects an operator handles.

Events are a courtesy to humans (``kubectl describe``): failing to post one must never fail the
handling of the object, so :func:`post_event` logs a warning instead of raising.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from anyop.kube.client import Body, KubeClient
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings

__all__ = ["EVENTS", "MAX_MESSAGE_LENGTH", "event_body", "post_event"]

logger = logging.getLogger("anyop.kube")

EVENTS = Resource("", "v1", "events", kind="Event", namespaced=True)
MAX_MESSAGE_LENGTH = 1024
_CUT = "..."
_CLUSTER_NAMESPACE = "default"  # where events about cluster-scoped objects go


def event_body(
    obj: Mapping[str, Any],
    *,
    type: str,
    reason: str,
    message: str,
    settings: OperatorSettings,
    now: datetime.datetime | None = None,
    default_namespace: str | None = None,
) -> Body:
    """Build the ``v1/Event`` about an object. Pure.

    Args:
        obj: The involved object's body (its ``apiVersion``, ``kind`` and ``metadata`` matter).
        type: ``Normal`` or ``Warning`` (or anything the cluster accepts).
        reason: A short CamelCase reason.
        message: The text; longer than 1024 characters, its middle is cut out.
        settings: ``settings.posting`` names the reporter and the event name prefix.
        now: The time of the event (default: the UTC clock).
        default_namespace: Where an Event about a cluster-scoped object goes (the current
            credentials' ``ConnectionInfo.default_namespace``); ``default`` if ``None``.
    """
    namespace = (
        (obj.get("metadata") or {}).get("namespace") or default_namespace or _CLUSTER_NAMESPACE
    )
    moment = now or datetime.datetime.now(datetime.UTC)
    posting = settings.posting
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"namespace": namespace, "generateName": posting.event_name_prefix},
        "involvedObject": _reference(obj),
        "type": type,
        "reason": reason,
        "message": _middle_cut(message, MAX_MESSAGE_LENGTH),
        "action": "Action?",  # Kopf's value
        "reportingComponent": posting.reporting_component,
        "reportingInstance": posting.reporting_instance,
        "source": {"component": posting.reporting_component},
        "firstTimestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTimestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventTime": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "count": 1,
    }


def _reference(obj: Mapping[str, Any]) -> Body:
    """The ``involvedObject`` of an event: what it is about, exactly which version."""
    metadata = obj.get("metadata") or {}
    reference = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
    }
    return {key: value for key, value in reference.items() if value}


async def post_event(
    client: KubeClient,
    *,
    obj: Mapping[str, Any],
    type: str,
    reason: str,
    message: str,
    settings: OperatorSettings | None = None,
) -> None:
    """Post an Event about ``obj``; on failure, log a warning and return.

    Events about cluster-scoped objects go to the current credentials' default namespace
    (``ConnectionInfo.default_namespace``: the kubeconfig context's, or the service account's
    own), else to ``default``, as in Kopf. Events about Events are never posted (that way lie
    loops).

    Args:
        client: The API client.
        obj: The involved object's body.
        type: ``Normal`` or ``Warning``.
        reason: A short CamelCase reason.
        message: The text (cut in the middle beyond 1024 characters).
        settings: The operator's settings (default: the client's).

    Guarantees:
        Never raises (except for cancellation); never sent twice by the client's retries.
    """
    if _is_event(obj):
        return
    try:
        body = event_body(
            obj, type=type, reason=reason, message=message, settings=settings or client.settings,
            default_namespace=await client.default_namespace(),
        )  # fmt: skip
        await client.create(EVENTS, body)
    except Exception as exc:
        logger.warning(
            "Failed to post an event. Ignoring and continuing. Error: %s. "
            "Event: type=%r, reason=%r, message=%r.",
            exc,
            type,
            reason,
            _middle_cut(message, MAX_MESSAGE_LENGTH),
        )


def _is_event(obj: Mapping[str, Any]) -> bool:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return kind == "Event" and api_version in ("v1", "events.k8s.io/v1", "events.k8s.io/v1beta1")


def _middle_cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    room = limit - len(_CUT)
    head = room - room // 2
    return text[:head] + _CUT + text[len(text) - room // 2 :]
