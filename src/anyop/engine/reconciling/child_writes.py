"""Read-your-own-writes for children: what a call wrote, and whether the watch has shown it.

Pure. The ``api`` kwarg remembers every child it created, patched or deleted as a
:class:`Written`; before the object's next call, the engine waits until :func:`seen` holds for
all of them in the children index (or until a deadline, after which it reads the children from
the API instead). A reconciler therefore never sees its children as they were before its own
writes, and never creates a child twice because the watch is slow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.engine.reconciling.children import ChildrenIndex, not_older, version_of

__all__ = ["Written", "echoes", "seen", "written"]


@dataclasses.dataclass(frozen=True, slots=True)
class Written:
    """One write of a child.

    Attributes:
        name: The owned resource's name (as the reconciler declared it).
        uid: The child's uid.
        version: The resourceVersion that the write's response carried.
        deleted: It was a deletion.
    """

    name: str
    uid: str
    version: str
    deleted: bool = False


def written(name: str, response: Mapping[str, Any], *, deleted: bool = False) -> Written:
    """The record of a write from the server's response (an object, or a deletion's
    ``Status``, whose ``details`` name the uid)."""
    if response.get("kind") == "Status":
        uid = str((response.get("details") or {}).get("uid") or "")
        return Written(name, uid, "", deleted=deleted)
    metadata = response.get("metadata") or {}
    return Written(name, str(metadata.get("uid") or ""), version_of(response), deleted=deleted)


def seen(write: Written, index: ChildrenIndex) -> bool:
    """Whether the watch has shown the write: a created or patched child at its version or
    newer, or deleted since (by anyone: its deletion comes after the write); a deleted one
    gone or being deleted."""
    child = index.child(write.name, write.uid)
    if write.deleted:
        return child is None or bool((child.get("metadata") or {}).get("deletionTimestamp"))
    if child is None:
        return index.gone(write.name, write.uid)
    return not_older(version_of(child), write.version)


def echoes(writes: Sequence[Written], name: str, body: Mapping[str, Any], *, deleted: bool) -> bool:
    """Whether a child's event only shows one of these writes (no need to call the parent for
    it: the reconciler made that change itself)."""
    uid = str((body.get("metadata") or {}).get("uid") or "")
    version = version_of(body)
    for write in writes:
        if write.name == name and write.uid == uid:
            return write.deleted if deleted else (not write.deleted and write.version == version)
    return False
