"""The change history: numbered events, compaction, past states, and watch filtering.

Pure. Every write is one :class:`Change` with the next resourceVersion. The history keeps the
recent ones (a bounded window; :meth:`History.compact` forgets them all), so that a watch can
resume from a resourceVersion and a paginated list can read the state as of its first page.

It keeps each change's objects frozen into bytes (:func:`~anyop.testing.fake.json_copy.frozen`),
not as the dicts and lists they are: bytes hold no references, so the garbage collector does not
walk the thousands of past objects a long test leaves behind at each full collection (which cost
every request of the process about a sixth of its time); and a past state cannot change when a
stored object is changed in place.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.json_copy import frozen, json_copy, thawed
from anyop.testing.fake.label_selectors import Selector
from anyop.testing.fake.statuses import expired

__all__ = [
    "Change",
    "History",
    "ObjectKey",
    "ResourceKey",
    "sorted_objects",
    "storage_key",
    "visible_change",
]

Body = dict[str, Any]
ResourceKey = tuple[str, str]
"""``(group, plural)``: where objects of one resource live, whatever version is asked."""
ObjectKey = tuple[str, str]
"""``(namespace, name)``; the namespace is ``""`` for cluster-scoped objects."""


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One write, as watches see it.

    Attributes:
        rv: Its resourceVersion.
        resource: Which resource it changed.
        type: ``ADDED``, ``MODIFIED`` or ``DELETED``.
        obj: The object after the change (for ``DELETED``: its last state, at ``rv``).
        old: The object before the change (``None`` for ``ADDED``).
    """

    rv: int
    resource: ResourceKey
    type: str
    obj: Body
    old: Body | None

    @property
    def key(self) -> ObjectKey:
        """The changed object's namespace and name."""
        metadata = self.obj.get("metadata") or {}
        return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


class History:
    """The recent changes, oldest first, within a window of ``limit`` changes.

    Attributes:
        horizon: The oldest resourceVersion still answerable: a watch or list from an older one
            gets 410 Expired.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.horizon = 0
        self._changes: collections.deque[_Kept] = collections.deque()
        self._latest: dict[tuple[ResourceKey, ObjectKey], bytes] = {}
        """Each object's newest state in the window, frozen (its last change's object)."""

    def append(self, change: Change, *, obj: bytes | None = None, old_latest: bool = False) -> None:
        """Record a change; the oldest ones fall out of the window.

        Args:
            change: The change.
            obj: Its object frozen, if it is already.
            old_latest: Its old object is the object as its latest change in the window left
                it (unchanged since: then that change's frozen object is taken).
        """
        key = change.key
        where = (change.resource, key)
        obj = frozen(change.obj) if obj is None else obj
        old = None
        if change.old is not None:
            old = self._latest.get(where) if old_latest else None
            old = frozen(change.old) if old is None else old
        self._changes.append((change.rv, change.resource, change.type, key, obj, old))
        if change.type == "DELETED":
            self._latest.pop(where, None)
        else:
            self._latest[where] = obj
        while len(self._changes) > self.limit:
            self.horizon = self._forget(self._changes.popleft())

    def compact(self, rv: int) -> None:
        """Forget every change up to ``rv``, as etcd's compaction does."""
        while self._changes and self._changes[0][0] <= rv:
            self._forget(self._changes.popleft())
        self.horizon = max(self.horizon, rv)

    def _forget(self, kept: _Kept) -> int:
        where = (kept[1], kept[3])
        if self._latest.get(where) is kept[4]:
            del self._latest[where]
        return kept[0]

    def check(self, rv: int, what: str, current: int) -> None:
        """Refuse a resourceVersion older than the window.

        Raises:
            StatusError: 410 Expired; ``what`` says which message (``watch``, ``list``,
                ``continue``).
        """
        if rv >= self.horizon:
            return
        match what:
            case "watch":
                message = f"too old resource version: {rv} ({current})"
            case "continue":
                message = _CONTINUE_EXPIRED
            case _:
                message = "The resourceVersion for the provided list is too old."
        raise expired(message)

    def since(self, rv: int, resource: ResourceKey) -> Iterator[Change]:
        """The changes of one resource after ``rv`` (check it first), oldest first (their
        objects are copies)."""
        return (_thawed(kept) for kept in self._changes if kept[0] > rv and kept[1] == resource)

    def state_at(
        self, rv: int, resource: ResourceKey, current: Mapping[ObjectKey, Body]
    ) -> dict[ObjectKey, Body]:
        """The objects of a resource as they were at ``rv``, undoing the later changes."""
        state = dict(current)
        for changed, where, _, key, _, old in reversed(self._changes):
            if changed <= rv:
                break
            if where != resource:
                continue
            if old is None:
                state.pop(key, None)
            else:
                state[key] = thawed(old)
        return state


_Kept = tuple[int, ResourceKey, str, ObjectKey, bytes, bytes | None]
"""A change as the history keeps it: resourceVersion, resource, type, key, and its object and
old object frozen."""


def _thawed(kept: _Kept) -> Change:
    rv, resource, type_, _, obj, old = kept
    return Change(rv, resource, type_, thawed(obj), None if old is None else thawed(old))


_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)

Filter = Callable[[Mapping[str, Any]], bool]


def visible_change(change: Change, matches: Filter | Selector) -> tuple[str, Body] | None:
    """What a watch with a filter sees of a change: ``(type, object)``, or ``None``.

    An object that starts matching is ``ADDED``; one that stops matching is ``DELETED``, shown
    as it was before the change but at the change's resourceVersion (as the API server does).
    """
    now = change.type != "DELETED" and matches(change.obj)
    before = change.old is not None and matches(change.old)
    if change.type == "DELETED":
        return ("DELETED", change.obj) if matches(change.obj) else None
    if now and before:
        return ("MODIFIED", change.obj)
    if now:
        return ("ADDED", change.obj)
    if before and change.old is not None:
        old = json_copy(change.old)
        old["metadata"]["resourceVersion"] = str(change.rv)
        return ("DELETED", old)
    return None


def sorted_objects(objects: Iterable[tuple[ObjectKey, Body]]) -> list[Body]:
    """Objects in the API server's list order: by namespace, then name."""
    return [body for _, body in sorted(objects, key=lambda pair: storage_key(pair[0]))]


def storage_key(key: ObjectKey) -> str:
    """Where etcd keeps an object (relative to its resource): lists are in this order."""
    namespace, name = key
    return f"{namespace}/{name}" if namespace else name
