"""The ``api`` kwarg of reconcilers: writes of owned children that the next call will see.

A thin async shell over :class:`~anyop.kube.client.KubeClient`: it adds the owner reference and
the children's labels on creation, and remembers every write (:mod:`.writes`) for the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.engine.reconciling.child_writes import Written, written
from anyop.engine.reconciling.decisions import owned_body
from anyop.errors import NotFoundError
from anyop.kube.client import Body, KubeClient
from anyop.kube.resources import Resource

__all__ = ["ChildrenApi"]


class ChildrenApi:
    """Creates, patches and deletes the children of one object, for one reconciler call.

    Args:
        client: The operator's API client (also :attr:`client`, for anything else).
        parent: The object being reconciled.
        owned: The owned resources by the names the reconciler declared (``"configmaps"``).
        labels: The children's labels (the reconciler's ``labels=``), put on created children.

    Guarantees:
        Every successful write is in :attr:`writes`; the engine makes the object's next call
        wait until the children's watch has shown them (bounded by
        ``settings.reconciling.writes_timeout``).
    """

    def __init__(
        self,
        client: KubeClient,
        parent: Mapping[str, Any],
        owned: Mapping[str, Resource],
        *,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self._parent = parent
        self._owned = owned
        self._labels = labels
        self.writes: list[Written] = []

    def _resource(self, name: str) -> Resource:
        try:
            return self._owned[name]
        except KeyError:
            known = ", ".join(map(repr, self._owned)) or "none"
            raise ValueError(f"{name!r} is not an owned resource (owns: {known}).") from None

    def _namespace(self) -> str | None:
        return (self._parent.get("metadata") or {}).get("namespace")

    async def create(self, resource: str, body: Mapping[str, Any]) -> Body:
        """Create a child: in the parent's namespace unless the body names one, with the parent
        as its controller (ownerReference) and the reconciler's ``labels``.

        Raises:
            ValueError: ``resource`` is not owned, or the body names another controller.
            ApiError: The server refused it (e.g. ``ConflictError`` if the name is taken).
        """
        target = self._resource(resource)
        child = owned_body(body, self._parent, labels=self._labels)
        created = await self.client.create(target, child)
        self.writes.append(written(resource, created))
        return created

    async def patch(self, resource: str, name: str, patch: Mapping[str, Any]) -> Body:
        """Merge-patch a child by name (in the parent's namespace).

        Raises:
            ValueError: ``resource`` is not owned.
            ApiError: The server refused it.
        """
        target = self._resource(resource)
        namespace = self._namespace() if target.namespaced else None
        patched = await self.client.patch(target, dict(patch), name=name, namespace=namespace)
        self.writes.append(written(resource, patched))
        return patched

    async def delete(self, resource: str, name: str) -> None:
        """Delete a child by name (in the parent's namespace); one already gone is fine.

        Raises:
            ValueError: ``resource`` is not owned.
            ApiError: The server refused it.
        """
        target = self._resource(resource)
        namespace = self._namespace() if target.namespaced else None
        try:
            answer = await self.client.delete(target, name=name, namespace=namespace)
        except NotFoundError:
            return
        self.writes.append(written(resource, answer, deleted=True))
