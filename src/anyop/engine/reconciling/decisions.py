"""What to make of one reconciler call, and the other pure rules of reconciling.

The engine calls the user's function and hands the result (or the exception) to :func:`judge`,
which says when to call again, whether new events may come sooner, what to log (worded as Kopf
words its lines) and how the metrics count it.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.outcomes import Requeue
from anyop.settings import ReconcilingSettings

__all__ = [
    "Verdict",
    "backoff_delay",
    "finalizer_patch",
    "judge",
    "label_selector",
    "owned_body",
]


def backoff_delay(failures: int, settings: ReconcilingSettings, *, jitter: float) -> float:
    """The delay after ``failures`` failed calls in a row: ``backoff_base`` doubled for each
    failure after the first, at most ``backoff_cap``, less ``jitter`` (0..1) times half of it."""
    exponent = min(max(failures - 1, 0), 64)  # beyond 2**64 the cap has long been reached
    delay = min(settings.backoff_cap, settings.backoff_base * 2.0**exponent)
    return delay - delay * 0.5 * min(max(jitter, 0.0), 1.0)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one call means.

    Attributes:
        succeeded: The call returned ``None`` or a :class:`Requeue`.
        delay: Call again after this many seconds without any change; ``None``: on changes only.
        throttled: Changes do not shorten the ``delay`` (a backoff after a failure).
        result: How the metrics count it: ``success``, ``requeue_after`` or ``error``.
        level: The log level of ``message`` (``DEBUG`` for a success: a routine call).
        message: Kopf's kind of line about it.
        exc_info: Log the exception's traceback.
    """

    succeeded: bool
    delay: float | None
    throttled: bool
    result: str
    level: int
    message: str
    exc_info: bool = False


def judge(
    name: str,
    outcome: object,
    *,
    failures: int,
    resync: float | None,
    settings: ReconcilingSettings,
    jitter: float,
) -> Verdict:
    """The verdict on a call of the reconciler ``name`` (``Reconciler 'x'``).

    Args:
        name: How logs name the reconciler.
        outcome: What it returned, or the exception it raised.
        failures: The failed calls in a row for this object, this one included if it failed.
        resync: The reconciler's ``resync=`` period.
        settings: The backoff's base and cap.
        jitter: A random number in 0..1 for the backoff.
    """
    backoff = backoff_delay(failures, settings, jitter=jitter)
    match outcome:
        case None:
            return Verdict(True, resync, False, "success", logging.DEBUG, f"{name} succeeded.")
        case Requeue(after=after):
            text = f"{name} succeeded; requeued in {after:g} seconds."
            return Verdict(True, after, False, "requeue_after", logging.DEBUG, text)
        case TemporaryError(delay=delay):
            text = f"{name} failed temporarily: {outcome}"
            wait = backoff if delay is None else delay
            return Verdict(False, wait, True, "error", logging.WARNING, text)
        case PermanentError():
            text = f"{name} failed permanently: {outcome}"
            return Verdict(False, None, False, "error", logging.ERROR, text)
        case BaseException():
            text = f"{name} failed with an exception. Will retry."
            return Verdict(False, backoff, True, "error", logging.ERROR, text, exc_info=True)
    text = f"{name} returned {outcome!r}: a reconciler returns anyop.Requeue(after=...) or None."
    return Verdict(False, None, False, "error", logging.ERROR, text)


def finalizer_patch(
    body: Mapping[str, Any], finalizer: str, *, keep: bool
) -> dict[str, Any] | None:
    """The merge-patch that adds (``keep``) or removes the finalizer, or ``None`` if it is as
    wanted. It carries the object's resourceVersion: a concurrent change of the list makes the
    server refuse it (409) instead of losing another writer's finalizer."""
    metadata = body.get("metadata") or {}
    finalizers = list(metadata.get("finalizers") or [])
    if (finalizer in finalizers) == keep:
        return None
    wanted = [*finalizers, finalizer] if keep else [f for f in finalizers if f != finalizer]
    version = metadata.get("resourceVersion")
    return {"metadata": {"finalizers": wanted, "resourceVersion": version}}


def label_selector(labels: Mapping[str, str] | None) -> str | None:
    """The ``labelSelector`` of the children's watches (``None``: all of them)."""
    if not labels:
        return None
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def owned_body(
    body: Mapping[str, Any], parent: Mapping[str, Any], *, labels: Mapping[str, str] | None
) -> dict[str, Any]:
    """A copy of a child's body to create: in the parent's namespace (unless it names one),
    with the parent as its controller and the children's ``labels``.

    Raises:
        ValueError: The body names another controller.
    """
    child = copy.deepcopy(dict(body))
    meta = child.setdefault("metadata", {})
    parent_meta = parent.get("metadata") or {}
    if parent_meta.get("namespace") and not meta.get("namespace"):
        meta["namespace"] = parent_meta["namespace"]
    meta["labels"] = {**(meta.get("labels") or {}), **(labels or {})}
    refs = [dict(ref) for ref in meta.get("ownerReferences") or ()]
    uid = parent_meta.get("uid")
    if any(ref.get("controller") and ref.get("uid") != uid for ref in refs):
        raise ValueError(f"The child has another controller: {refs!r}.")
    if not any(ref.get("uid") == uid for ref in refs):
        reference = {"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind")}
        reference |= {"name": parent_meta.get("name"), "uid": uid}
        refs.append({**reference, "controller": True, "blockOwnerDeletion": True})
    meta["ownerReferences"] = refs
    return child
