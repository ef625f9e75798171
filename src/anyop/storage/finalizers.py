"""The finalizer that blocks an object's deletion while anyop still has work to do on it.

Pure: the checks read a body, the changes are transformation functions for ``patch.fns`` (or the
ready JSON-patch operations), always guarded by a ``test`` of ``/metadata/resourceVersion`` so
that a concurrent change of the finalizers list fails with 422 instead of being overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from anyop.kube.patches import JsonPatchOp, PatchFn, json_patch_from_fns

__all__ = [
    "ADDING_MESSAGE",
    "ANYOP_FINALIZER",
    "KOPF_FINALIZER",
    "RELEASING_MESSAGE",
    "UNNEEDED_MESSAGE",
    "add_finalizer_ops",
    "allow_deletion",
    "block_deletion",
    "has_finalizer",
    "is_deletion_blocked",
    "is_deletion_ongoing",
    "remove_finalizer_ops",
]

ANYOP_FINALIZER = "anyop.dev/finalizer"
"""anyop's default finalizer."""

KOPF_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
"""Kopf's finalizer, for taking over objects that Kopf handled before."""

ADDING_MESSAGE = "Adding the finalizer, thus preventing the actual deletion."
UNNEEDED_MESSAGE = "Removing the finalizer, as there are no handlers requiring it."
RELEASING_MESSAGE = "Removing the finalizer, thus allowing the actual deletion."


def is_deletion_ongoing(body: Mapping[str, Any]) -> bool:
    """Whether the object is marked for deletion (``metadata.deletionTimestamp`` is set)."""
    return (body.get("metadata") or {}).get("deletionTimestamp") is not None


def has_finalizer(body: Mapping[str, Any], finalizer: str) -> bool:
    """Whether the object carries this finalizer."""
    return finalizer in ((body.get("metadata") or {}).get("finalizers") or [])


def is_deletion_blocked(body: Mapping[str, Any], finalizer: str) -> bool:
    """Whether our finalizer blocks the deletion (Kopf's name for :func:`has_finalizer`)."""
    return has_finalizer(body, finalizer)


def block_deletion(finalizer: str) -> PatchFn:
    """A ``patch.fns`` transformation that appends the finalizer if it is not there yet."""

    def add(body: MutableMapping[str, Any]) -> None:
        metadata = body.setdefault("metadata", {})
        finalizers = metadata.setdefault("finalizers", [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)

    return add


def allow_deletion(finalizer: str) -> PatchFn:
    """A ``patch.fns`` transformation that removes every occurrence of the finalizer."""

    def remove(body: MutableMapping[str, Any]) -> None:
        metadata = body.get("metadata") or {}
        if finalizer in (metadata.get("finalizers") or []):
            metadata["finalizers"] = [f for f in metadata["finalizers"] if f != finalizer]

    return remove


def add_finalizer_ops(body: Mapping[str, Any], finalizer: str) -> list[JsonPatchOp]:
    """The JSON patch that adds the finalizer: ``[]`` if it is there, else a guarded ``add``.

    E.g. ``[{"op": "test", "path": "/metadata/resourceVersion", "value": "123"},
    {"op": "add", "path": "/metadata/finalizers/-", "value": "anyop.dev/finalizer"}]``.
    """
    return json_patch_from_fns(body, [block_deletion(finalizer)])


def remove_finalizer_ops(body: Mapping[str, Any], finalizer: str) -> list[JsonPatchOp]:
    """The JSON patch that removes the finalizer: ``[]`` if it is absent, else a guarded remove."""
    return json_patch_from_fns(body, [allow_deletion(finalizer)])
