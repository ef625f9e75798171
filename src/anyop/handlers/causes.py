"""Causes: what happened to an object, decided from the event, the body and the stored state.

Watch events only say ``ADDED``/``MODIFIED``/``DELETED``. Handlers want to know more: was the
object created, changed in its essence, marked for deletion, or just seen again after a restart?
:func:`detect_changing_cause` answers that from the body, the last handled essence (the
diff-base), the finalizer, and whether the object is seen for the first time in this process.

Causes carry only data. The engine adds its own kwargs (``logger``, ``memo``, ``patch``...).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from anyop.handlers.bodies import Body, RawEventType
from anyop.handlers.diffs import EMPTY, Diff, FieldPath, diff, reduce, resolve
from anyop.kube.resources import Resource
from anyop.storage.finalizers import is_deletion_blocked, is_deletion_ongoing

__all__ = [
    "HANDLER_REASONS",
    "REACTOR_REASONS",
    "TITLES",
    "Activity",
    "ChangingCause",
    "IndexingCause",
    "Reason",
    "ResourceCause",
    "SpawningCause",
    "WatchingCause",
    "WebhookCause",
    "WebhookType",
    "detect_changing_cause",
    "detect_watching_cause",
    "settled_by",
]


class Reason(enum.StrEnum):
    """Why resource-changing handlers run (``create``...), or why nothing runs (``noop``...)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    RESUME = "resume"
    NOOP = "noop"
    FREE = "free"
    GONE = "gone"


HANDLER_REASONS = (Reason.CREATE, Reason.UPDATE, Reason.DELETE, Reason.RESUME)
"""The reasons that run handlers."""

REACTOR_REASONS = (Reason.NOOP, Reason.FREE, Reason.GONE)
"""The reasons that only the engine acts on."""

TITLES = {
    Reason.CREATE: "creation",
    Reason.UPDATE: "updating",
    Reason.DELETE: "deletion",
    Reason.RESUME: "resuming",
}
"""The nouns for the log lines: ``Creation is processed: ...``."""


class Activity(enum.StrEnum):
    """Operator-level activities, which run handlers outside of any object."""

    STARTUP = "startup"
    CLEANUP = "cleanup"
    AUTHENTICATION = "authentication"
    PROBE = "probe"


class WebhookType(enum.StrEnum):
    """The kinds of admission webhooks."""

    VALIDATING = "validating"
    MUTATING = "mutating"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResourceCause:
    """Something about one object of one resource.

    Attributes:
        resource: The object's resource.
        body: The object's body (raw, or a :class:`~anyop.handlers.bodies.Body`).
    """

    resource: Resource
    body: Mapping[str, Any]

    @property
    def kwargs(self) -> dict[str, Any]:
        """The handler kwargs this cause provides (the engine adds ``logger``, ``memo``...)."""
        body = self.body if isinstance(self.body, Body) else Body(self.body)
        meta = body.meta
        metadata = self.body.get("metadata")  # read once, as the views would read it
        if not isinstance(metadata, Mapping):
            metadata = {}
        return {
            "resource": self.resource,
            "body": body,
            "spec": body.spec,
            "meta": meta,
            "status": body.status,
            "uid": metadata.get("uid"),
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "labels": meta.labels,
            "annotations": meta.annotations,
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class WatchingCause(ResourceCause):
    """A raw watch event, for ``@on.event`` handlers.

    Attributes:
        type: The event type; ``None`` for objects of the initial listing.
        event: The raw event.
    """

    type: RawEventType
    event: Mapping[str, Any]

    @property
    def kwargs(self) -> dict[str, Any]:
        """The cause's kwargs plus ``type`` and ``event``."""
        return {**super().kwargs, "type": self.type, "event": self.event}


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpawningCause(ResourceCause):
    """An object as daemons and timers see it.

    Attributes:
        reset: Whether the essence changed in this event (which resets timers' idling).
    """

    reset: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class IndexingCause(ResourceCause):
    """An object to be indexed."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChangingCause(ResourceCause):
    """What happened to an object, for resource-changing handlers.

    Attributes:
        reason: What happened.
        initial: Whether the object is seen for the first time in this process (by the initial
            listing) and not yet fully handled: resume handlers are mixed in.
        old: The last handled essence (``None`` if there is none).
        new: The current essence.
        diff: The diff from ``old`` to ``new``.
    """

    reason: Reason
    initial: bool = False
    old: Any = None
    new: Any = None
    diff: Diff = EMPTY

    @property
    def deleted(self) -> bool:
        """Whether the object is marked for deletion."""
        return is_deletion_ongoing(self.body)

    @property
    def kwargs(self) -> dict[str, Any]:
        """The cause's kwargs plus ``reason``, ``old``, ``new`` and ``diff``."""
        extra = {"reason": self.reason, "old": self.old, "new": self.new, "diff": self.diff}
        return {**super().kwargs, **extra}

    def narrowed(self, field: FieldPath) -> ChangingCause:
        """This cause as a field handler sees it: ``old``, ``new`` and ``diff`` of that field."""
        if not field:
            return self
        old, new = resolve(self.old, field, None), resolve(self.new, field, None)
        return dataclasses.replace(self, old=old, new=new, diff=reduce(self.diff, field))


@dataclasses.dataclass(frozen=True, kw_only=True)
class WebhookCause(ResourceCause):
    """An admission request, for validating and mutating handlers.

    Attributes:
        reason: Which kind of webhooks to run; ``None`` for all.
        webhook: Which handler to run (from the URL path); ``None`` for all matching ones.
        operation: ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``.
        subresource: The subresource, e.g. ``"status"``; ``None`` for the main resource.
        dryrun: Whether the request is a dry run.
        old: The old object (for updates and deletions).
        new: The new object.
        diff: The diff from ``old`` to ``new``.
    """

    reason: WebhookType | None = None
    webhook: str | None = None
    operation: str | None = None
    subresource: str | None = None
    dryrun: bool = False
    old: Any = None
    new: Any = None
    diff: Diff = EMPTY

    @property
    def kwargs(self) -> dict[str, Any]:
        """The cause's kwargs plus the admission-specific ones."""
        extra: dict[str, Any] = {"operation": self.operation, "subresource": self.subresource}
        extra |= {"dryrun": self.dryrun, "old": self.old, "new": self.new, "diff": self.diff}
        return {**super().kwargs, **extra}


def detect_watching_cause(*, resource: Resource, event: Mapping[str, Any]) -> WatchingCause:
    """Wrap a raw watch event (``{"type": ..., "object": ...}``) as a cause."""
    return WatchingCause(resource=resource, body=event["object"], type=event["type"], event=event)


def detect_changing_cause(
    *,
    resource: Resource,
    event_type: RawEventType,
    body: Mapping[str, Any],
    old: Any,
    new: Any,
    finalizer: str,
    initial: bool = False,
    corrupt_diffbase: bool = False,
) -> ChangingCause:
    """Decide what happened to an object.

    Args:
        resource: The object's resource.
        event_type: The watch event's type (``None`` for the initial listing).
        body: The object's body.
        old: The stored diff-base essence, cleaned by the progress storage; ``None`` if none.
        new: The current essence, built and cleaned the same way.
        finalizer: Our finalizer's name.
        initial: Whether the object is seen for the first time in this process by the initial
            listing and was not fully handled since.
        corrupt_diffbase: Whether the stored diff-base could not be read.

    Returns:
        The cause: ``gone`` for a ``DELETED`` event; ``free`` if deletion is ongoing and our
        finalizer is gone; ``delete`` if deletion is ongoing; ``create`` if there is no diff-base;
        ``resume`` if there is no essential change but the object is new to this process;
        ``noop`` if there is no essential change; else ``update``. A corrupt diff-base never
        means ``create`` (which would re-create what exists): it is ``resume`` with no diff, so
        the engine stores a fresh diff-base.
    """

    def cause(reason: Reason, changes: Diff = EMPTY, *, initial: bool = False) -> ChangingCause:
        return ChangingCause(
            resource=resource,
            body=body,
            reason=reason,
            old=old,
            new=new,
            diff=changes,
            initial=initial,
        )

    if event_type == "DELETED":
        return cause(Reason.GONE, diff(old, new))
    if is_deletion_ongoing(body):
        blocked = is_deletion_blocked(body, finalizer)
        return cause(Reason.DELETE if blocked else Reason.FREE, diff(old, new), initial=initial)
    if corrupt_diffbase:
        return dataclasses.replace(cause(Reason.RESUME, initial=True), old=new)
    if old is None:
        # Creation never mixes with resuming, even for objects found by the initial listing.
        return cause(Reason.CREATE, diff(old, new))
    changes = diff(old, new)
    if changes:
        return cause(Reason.UPDATE, changes, initial=initial)
    return cause(Reason.RESUME if initial else Reason.NOOP, initial=initial)


_UNSEEN_KEYS = frozenset({"apiVersion", "kind", "metadata", "status"})
"""Top-level keys that the essence leaves out or compares in part (``metadata``) or not at all."""


def settled_by(handled: Mapping[str, Any], response: Mapping[str, Any]) -> bool:
    """Whether a body differs from the one a cycle handled only where cause detection never looks.

    ``response`` is what the server returned for the cycle's write to ``handled``. If only
    ``status`` and the server's bookkeeping (``resourceVersion``, ``managedFields``...) differ, with
    the same labels, annotations and finalizers and no deletion, then the essence and the
    finalizer are as the cycle left them: a cycle on ``response`` would detect nothing to do, for
    resources whose handlers do not look beyond the essence (see
    :meth:`~anyop.handlers.registry.OperatorRegistry.echoes_are_quiet`). Anything else, e.g.
    another client's write that the server merged in before ours, makes it ``False``. Pure.
    """
    for key in handled.keys() | response.keys():
        if key not in _UNSEEN_KEYS and handled.get(key) != response.get(key):
            return False
    before = handled.get("metadata") or {}
    after = response.get("metadata") or {}
    return (
        not after.get("deletionTimestamp")
        and before.get("labels") == after.get("labels")
        and before.get("annotations") == after.get("annotations")
        and before.get("finalizers") == after.get("finalizers")
    )
