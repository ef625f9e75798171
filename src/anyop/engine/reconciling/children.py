"""The children index: the owned objects of each parent, by their controller ownerReference.

Pure: the watches of the owned resources feed it (:meth:`ChildrenIndex.update`), and it says
which parents a change concerns, so that only those are reconciled.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["GONE_KEPT", "ChildrenIndex", "controller_uid", "not_older", "version_of"]

GONE_KEPT = 10_000
"""How many of the latest deletions the index remembers (see :meth:`ChildrenIndex.gone`)."""


def controller_uid(body: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller (its ownerReference with ``controller: true``)."""
    for ref in (body.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def version_of(body: Mapping[str, Any]) -> str:
    """The object's resourceVersion (``""`` if it has none)."""
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


def not_older(version: str, than: str) -> bool:
    """Whether a resourceVersion is the same as or newer than another (numeric where both are,
    as etcd's are; otherwise only the same one counts)."""
    if version.isdigit() and than.isdigit():
        return int(version) >= int(than)
    return version == than


def _uid(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("uid") or "")


class ChildrenIndex:
    """The children of every parent, per owned resource (named as the reconciler declared it).

    Args:
        names: The owned resources' names (the keys of the ``children`` kwarg).

    Guarantees:
        A child is under at most one parent: the one its controller reference names now. Memory
        is bounded by the live children of the watched scope, plus the uids of the latest
        :data:`GONE_KEPT` deletions.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._parents: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
        self._parent_of: dict[tuple[str, str], str] = {}
        self._gone: OrderedDict[tuple[str, str], None] = OrderedDict()

    def update(self, name: str, body: Mapping[str, Any], *, deleted: bool) -> set[str]:
        """Take a child's new state (or its disappearance); return the uids of the parents it
        concerns (its previous and its current controller)."""
        uid = _uid(body)
        key = (name, uid)
        before = self._parent_of.pop(key, None)
        if before is not None:
            self._drop(before, name, uid)
        if deleted:
            self._bury(key)
        owner = None if deleted else controller_uid(body)
        if owner is not None:
            self._parent_of[key] = owner
            self._parents.setdefault(owner, {}).setdefault(name, {})[uid] = body
        return {parent for parent in (before, owner) if parent is not None}

    def _drop(self, parent: str, name: str, uid: str) -> None:
        kinds = self._parents.get(parent, {})
        kinds.get(name, {}).pop(uid, None)
        if not kinds.get(name, True):
            kinds.pop(name, None)
        if not kinds:
            self._parents.pop(parent, None)

    def _bury(self, key: tuple[str, str]) -> None:
        self._gone[key] = None
        self._gone.move_to_end(key)
        while len(self._gone) > GONE_KEPT:
            self._gone.popitem(last=False)

    def gone(self, name: str, uid: str) -> bool:
        """Whether the watch has shown the child's deletion (among the latest
        :data:`GONE_KEPT`): every earlier state of it has been shown, too."""
        return (name, uid) in self._gone

    def child(self, name: str, uid: str) -> Mapping[str, Any] | None:
        """A child's latest known state, if it is indexed."""
        parent = self._parent_of.get((name, uid))
        if parent is None:
            return None
        return self._parents[parent][name].get(uid)

    def children(self, parent: str) -> dict[str, list[Mapping[str, Any]]]:
        """The parent's children: every owned resource's name, with a list (maybe empty)."""
        kinds = self._parents.get(parent, {})
        return {name: list(kinds.get(name, {}).values()) for name in self.names}

    def replace(self, parent: str, name: str, bodies: Iterable[Mapping[str, Any]]) -> None:
        """Take a live read of one parent's children of one resource: newer states win, and
        indexed children that the read did not find are dropped."""
        found = {_uid(body): body for body in bodies}
        for uid in list(self._parents.get(parent, {}).get(name, {})):
            if uid not in found:
                self._parent_of.pop((name, uid), None)
                self._drop(parent, name, uid)
        for uid, body in found.items():
            known = self.child(name, uid)
            if known is None or not not_older(version_of(known), version_of(body)):
                self.update(name, body, deleted=False)
