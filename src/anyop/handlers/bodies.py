"""The object bodies as handlers see them, and the memo they share.

:class:`Body` and its parts are read-only live views over a raw dict: they always show the raw
dict's current content, so daemons see the freshest state when the engine swaps the raw dict's
content (:meth:`Body.replace_with`). Missing stanzas read as empty mappings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Literal, TypedDict

__all__ = [
    "Annotations",
    "Body",
    "BodyEssence",
    "Labels",
    "Memo",
    "Meta",
    "ObjectReference",
    "OwnerReference",
    "RawBody",
    "RawEvent",
    "RawEventType",
    "Spec",
    "Status",
]

Labels = Mapping[str, str]
"""The ``labels`` kwarg: the object's labels."""

Annotations = Mapping[str, str]
"""The ``annotations`` kwarg: the object's annotations."""

RawEventType = Literal[None, "ADDED", "MODIFIED", "DELETED"]
"""A watch event's type; ``None`` for objects from the initial listing."""


class RawBody(TypedDict, total=False):
    """An object as the API returns it (the ``body`` inside a :class:`RawEvent`)."""

    apiVersion: str
    kind: str
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]
    status: Mapping[str, Any]


class BodyEssence(TypedDict, total=False):
    """What of a body is compared for changes (Kopf's name): its essential metadata, the spec,
    and whatever else a resource has at the top level except the status.

    The diff-base storages store it (``last-handled-configuration``) and handlers get it as
    ``old`` and ``new``.
    """

    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]


class ObjectReference(TypedDict, total=False):
    """A reference to an object, as Kubernetes Events and :func:`anyop.build_object_reference`
    have it."""

    apiVersion: str
    kind: str
    namespace: str | None
    name: str
    uid: str


class OwnerReference(TypedDict, total=False):
    """An entry of ``metadata.ownerReferences``, as :func:`anyop.build_owner_reference` makes
    it."""

    controller: bool
    blockOwnerDeletion: bool
    apiVersion: str
    kind: str
    name: str
    uid: str


class RawEvent(TypedDict, total=True):
    """A watch event as the API streams it: its type and the object."""

    type: RawEventType
    object: RawBody


class _View(Mapping[str, Any]):
    """A read-only live view of one stanza of a raw body."""

    __slots__ = ("__weakref__", "_path", "_source")

    def __init__(self, source: Mapping[str, Any], *path: str) -> None:
        self._source = source
        self._path = path

    def _target(self) -> Mapping[str, Any]:
        node: Any = self._source
        for key in self._path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node if isinstance(node, Mapping) else {}

    def __getitem__(self, key: str) -> Any:
        return self._target()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._target())

    def __len__(self) -> int:
        return len(self._target())

    def __repr__(self) -> str:
        return repr(dict(self._target()))


class Spec(_View):
    """The ``spec`` kwarg: a live view of ``body['spec']``."""

    __slots__ = ()


class Status(_View):
    """The ``status`` kwarg: a live view of ``body['status']``."""

    __slots__ = ()


class Meta(_View):
    """The ``meta`` kwarg: a live view of ``body['metadata']`` with typed accessors."""

    __slots__ = ()

    @property
    def labels(self) -> Labels:
        """The labels (a live view)."""
        return _View(self._source, *self._path, "labels")

    @property
    def annotations(self) -> Annotations:
        """The annotations (a live view)."""
        return _View(self._source, *self._path, "annotations")

    @property
    def uid(self) -> str | None:
        """``metadata.uid``."""
        return self.get("uid")

    @property
    def name(self) -> str | None:
        """``metadata.name``."""
        return self.get("name")

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace``; ``None`` for cluster-scoped objects."""
        return self.get("namespace")

    @property
    def creation_timestamp(self) -> str | None:
        """``metadata.creationTimestamp``, as the API formats it."""
        return self.get("creationTimestamp")

    @property
    def deletion_timestamp(self) -> str | None:
        """``metadata.deletionTimestamp``; set once deletion is requested."""
        return self.get("deletionTimestamp")


class Body(_View):
    """The ``body`` kwarg: a read-only live view of a whole raw object.

    Args:
        raw: The raw object dict; the view follows its content, not a copy of it.
    """

    __slots__ = ()

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)

    @property
    def metadata(self) -> Meta:
        """The ``metadata`` stanza."""
        return Meta(self._source, "metadata")

    @property
    def meta(self) -> Meta:
        """The ``metadata`` stanza (Kopf's short name)."""
        return self.metadata

    @property
    def spec(self) -> Spec:
        """The ``spec`` stanza."""
        return Spec(self._source, "spec")

    @property
    def status(self) -> Status:
        """The ``status`` stanza."""
        return Status(self._source, "status")

    def replace_with(self, raw: Mapping[str, Any]) -> None:
        """Replace the content of the underlying raw dict (for daemons' live bodies).

        WARNING: the underlying dict must be the engine's own copy, never an event's dict that
        other code still holds.
        """
        target = self._source
        if not isinstance(target, MutableMapping):
            raise TypeError("Only bodies over mutable dicts can be replaced.")
        target.clear()
        target.update(raw)


class Memo(dict[Any, Any]):
    """A dict that also allows attribute access: ``memo.x`` is ``memo['x']``.

    The operator-level memo is shallow-copied into each object's memo (``copy.copy(memo)``),
    and all handlers of one object share that object's memo.
    """

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError as e:
            raise AttributeError(f"Memo has no field {key!r}") from e

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError as e:
            raise AttributeError(f"Memo has no field {key!r}") from e

    def __copy__(self) -> Memo:
        return type(self)(self)

    def __repr__(self) -> str:
        return f"Memo({dict(self)!r})"
