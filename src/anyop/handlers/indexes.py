"""In-memory indexes of objects, kept by ``@anyop.index`` functions (Kopf's ``Index``/``Store``).

An index maps keys to stores; a store holds one value per object that produced that key. What
an indexing function returns decides where the object goes:

* a ``dict`` (strictly, not a subclass): every item is one key and the object's value under it;
* ``None``: nothing changes (the object's earlier values stay);
* anything else: the value under the key ``None``.

When an object is deleted, stops matching the filters, or its indexing fails for good, all its
values are removed, and stores that become empty are removed with them. Nothing here awaits.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.outcomes import ErrorsMode

__all__ = [
    "DEFAULT_EXCLUSION",
    "Index",
    "IndexingFailure",
    "ObjectKey",
    "OperatorIndex",
    "OperatorIndexes",
    "Store",
    "failure_of",
]

ObjectKey = tuple[str | None, str, str]
"""An object's identity in an index: ``(namespace, name, uid)``."""

DEFAULT_EXCLUSION = 60.0
"""Seconds an object stays out of an index after a temporary failure without a delay or backoff."""


class Store:
    """The values of one key of an index: one per object, in the order objects were indexed."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[ObjectKey, Any] = {}

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, value: object) -> bool:
        return any(item == value for item in self._items.values())

    def __repr__(self) -> str:
        return repr(list(self._items.values()))


class Index(Mapping[Hashable, Store]):
    """A read-only view of one index: keys to non-empty :class:`Store` collections."""

    __slots__ = ("_stores",)

    def __init__(self, stores: dict[Hashable, Store]) -> None:
        self._stores = stores

    def __getitem__(self, key: Hashable) -> Store:
        return self._stores[key]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._stores)

    def __len__(self) -> int:
        return len(self._stores)

    def __repr__(self) -> str:
        return repr(self._stores)


class OperatorIndex:
    """One index as the operator maintains it; handlers see it as :attr:`view`."""

    def __init__(self) -> None:
        self._stores: dict[Hashable, Store] = {}
        self._keys: dict[ObjectKey, frozenset[Hashable]] = {}
        self.view = Index(self._stores)

    def replace(self, obj: ObjectKey, result: object) -> None:
        """Put an object's new result in place of its old values (``None`` keeps them)."""
        if result is None:
            return
        values: dict[Hashable, Any] = result if type(result) is dict else {None: result}
        self.discard(obj, keep=frozenset(values))
        for key, value in values.items():
            self._stores.setdefault(key, Store())._items[obj] = value
        self._keys[obj] = frozenset(values)

    def discard(self, obj: ObjectKey, *, keep: frozenset[Hashable] = frozenset()) -> None:
        """Remove an object's values (except under the keys in ``keep``); drop empty stores."""
        for key in self._keys.pop(obj, frozenset()) - keep:
            store = self._stores.get(key)
            if store is not None:
                store._items.pop(obj, None)
                if not store._items:
                    del self._stores[key]

    def __contains__(self, obj: object) -> bool:
        return obj in self._keys


@dataclasses.dataclass(frozen=True)
class IndexingFailure:
    """What a failed indexing call means for the object.

    Attributes:
        remove: Remove the object's values from the index.
        exclude_for: Seconds the object is not indexed again (``math.inf``: never in this
            process; ``0``: it may be indexed at the next event).
    """

    remove: bool
    exclude_for: float = 0.0


def failure_of(
    error: Exception, *, errors: ErrorsMode | None, backoff: float | None
) -> IndexingFailure:
    """Kopf's rules for a failed indexing function.

    ``PermanentError`` (or any error with ``errors=PERMANENT``) removes the object and excludes
    it for good; ``TemporaryError`` (or any error with ``errors=TEMPORARY``) removes it and
    excludes it for the error's delay (or ``backoff``, else 60 s); other errors with the default
    ``errors=IGNORED`` keep its stale values.
    """
    if isinstance(error, PermanentError) or (
        not isinstance(error, TemporaryError) and errors is ErrorsMode.PERMANENT
    ):
        return IndexingFailure(remove=True, exclude_for=math.inf)
    if isinstance(error, TemporaryError) or errors is ErrorsMode.TEMPORARY:
        delay = error.delay if isinstance(error, TemporaryError) else None
        if delay is None:
            delay = backoff if backoff is not None else DEFAULT_EXCLUSION
        return IndexingFailure(remove=True, exclude_for=delay)
    return IndexingFailure(remove=False)


class OperatorIndexes:
    """All indexes of an operator, by name, with the objects excluded from them for a while."""

    def __init__(self, names: list[str] | None = None) -> None:
        self.indexes: dict[str, OperatorIndex] = {name: OperatorIndex() for name in names or ()}
        self._excluded: dict[tuple[str, ObjectKey], float] = {}

    def kwargs(self) -> dict[str, Index]:
        """The handlers' kwargs: every index by its name."""
        return {name: index.view for name, index in self.indexes.items()}

    def index(self, name: str) -> OperatorIndex:
        """The index of this name (created empty when first needed)."""
        found = self.indexes.get(name)
        if found is None:
            found = self.indexes[name] = OperatorIndex()
        return found

    def excluded(self, name: str, obj: ObjectKey, *, now: float) -> bool:
        """Whether the object is kept out of this index now (a past failure)."""
        until = self._excluded.get((name, obj))
        if until is None:
            return False
        if now >= until:
            del self._excluded[(name, obj)]
            return False
        return True

    def fail(self, name: str, obj: ObjectKey, failure: IndexingFailure, *, now: float) -> None:
        """Apply a failure's consequences to the object in this index."""
        if failure.remove:
            self.index(name).discard(obj)
        if failure.exclude_for > 0:
            self._excluded[(name, obj)] = now + failure.exclude_for

    def forget(self, obj: ObjectKey) -> None:
        """The object is gone: remove it from every index, and its exclusions."""
        for index in self.indexes.values():
            index.discard(obj)
        for key in [key for key in self._excluded if key[1] == obj]:
            del self._excluded[key]
