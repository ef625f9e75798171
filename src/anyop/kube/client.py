"""The Kubernetes API client: objects in, objects out, with typed errors, retries and limits.

One :class:`KubeClient` per operator. Every request takes the best credential from the
:class:`~anyop.kube.auth.Vault` (waiting while there is none), goes through the shared
:class:`~anyop.kube.ratelimit.RateLimiter`, and is repeated on failures that
:mod:`anyop.kube.retries` calls safe. Answers are parsed JSON; error statuses become
:class:`~anyop.errors.ApiError` subclasses; httpx's exceptions become
:class:`~anyop.errors.TransportError` and never leave ``anyop.kube``.

Nothing here logs a header or a body: secrets travel in both.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self, TypedDict, Unpack

from anyop.errors import GoneError, NotFoundError, TransportError
from anyop.kube.auth import Vault
from anyop.kube.inflight import InFlight
from anyop.kube.resources import Resource
from anyop.kube.sessions import Request, RequestObserver, SessionPool, TransportFactory
from anyop.settings import OperatorSettings

__all__ = [
    "Body",
    "DeleteOptions",
    "KubeClient",
    "ListOptions",
    "ListPage",
    "ObjectList",
    "Pages",
    "PatchType",
    "Request",
    "open_client",
]

logger = logging.getLogger("anyop.kube")

Body = dict[str, Any]
Items = list[Body]

PAGE_SIZE = 500
_MAX_LIST_RESTARTS = 3  # restarts of a list whose continue token expired


class PatchType(enum.StrEnum):
    """The patch formats of the Kubernetes API, as their content types."""

    MERGE = "application/merge-patch+json"
    """RFC 7386: maps merge, lists are replaced, ``None`` deletes."""
    JSON = "application/json-patch+json"
    """RFC 6902: a list of operations, with ``test`` for optimistic concurrency."""
    STRATEGIC = "application/strategic-merge-patch+json"
    """Kubernetes' own merge for built-in kinds (lists merge by key); not for custom resources."""
    APPLY = "application/apply-patch+yaml"
    """Server-side apply: the whole intent of one field manager (needs ``field_manager``)."""


class ListOptions(TypedDict, total=False):
    """What to list.

    Attributes:
        namespace: One namespace; ``None`` (or absent) for all, and for cluster-scoped resources.
        label_selector: A server-side label selector, e.g. ``"app=x,tier!=db"``.
        field_selector: A server-side field selector, e.g. ``"metadata.name=x"``.
        page_size: The ``limit`` of each page (500 by default).
        shard_selector: A ``shardSelector`` (hash ranges of ``metadata.uid``); a server that
            honours it says so in each page's :attr:`ListPage.shard_info`.
    """

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    page_size: int
    shard_selector: str | None


class DeleteOptions(TypedDict, total=False):
    """How to delete.

    Attributes:
        namespace: The object's namespace, for namespaced resources.
        propagation_policy: ``"Background"``, ``"Foreground"`` or ``"Orphan"``.
        uid: Delete only if the object still has this uid.
        resource_version: Delete only if the object is still at this version.
        grace_period_seconds: The grace period; 0 deletes at once.
    """

    namespace: str | None
    propagation_policy: str | None
    uid: str | None
    resource_version: str | None
    grace_period_seconds: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class ObjectList:
    """A complete list: the objects and the list's resourceVersion (to watch from)."""

    items: Items
    resource_version: str


@dataclasses.dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a paginated list.

    Attributes:
        items: The objects of this page, with ``apiVersion`` and ``kind`` filled in.
        resource_version: The list's resourceVersion (the same on every page of one pass).
        restarted: The continue token expired and the list started over with this page: objects
            of the earlier pages come again.
        shard_info: The shard selector the server applied (``metadata.shardInfo.selector``);
            ``None`` if it applied none.
    """

    items: Items
    resource_version: str
    restarted: bool = False
    shard_info: str | None = None


class KubeClient:
    """The Kubernetes API client of one operator: ``async with open_client(vault) as client``.

    Args:
        vault: Where credentials come from; requests wait while it is empty.
        settings: Timeouts, retries and rate limits (``settings.networking``).
        transport_factory: Builds the HTTP transport per credential; by default
            :func:`~anyop.kube.sessions.default_transport`.
        keep_managed_fields: Keep ``metadata.managedFields`` in returned bodies (they are big;
            only server-side apply tooling needs them).
        observer: Told every request attempt's method, status code and seconds (metrics).

    Guarantees:
        * Only :class:`~anyop.errors.AnyopError` subclasses escape: ``ApiError`` (by status),
          ``TransportError``, ``LoginError`` (a closed vault), ``ConfigError`` (unusable TLS).
        * A request is repeated only when :mod:`anyop.kube.retries` calls it safe; a 401 drops
          the credential from the vault and repeats the request with the next one.
        * Every attempt, of every request and watch, takes a token of the one shared limiter.

    Caveats:
        Not thread-safe: use it from the event loop's tasks only (Trio or asyncio).
    """

    def __init__(
        self,
        vault: Vault,
        *,
        settings: OperatorSettings | None = None,
        transport_factory: TransportFactory | None = None,
        keep_managed_fields: bool = False,
        observer: RequestObserver | None = None,
    ) -> None:
        self.settings = settings or OperatorSettings()
        self.sessions = SessionPool(
            vault,
            self.settings.networking,
            transport_factory=transport_factory,
            keep_managed_fields=keep_managed_fields,
            observer=observer,
        )

    @property
    def in_flight(self) -> InFlight:
        """The requests being sent now (not watches): the engine's backpressure reads it."""
        return self.sessions.in_flight

    @property
    def keep_managed_fields(self) -> bool:
        """Whether returned bodies keep ``metadata.managedFields``."""
        return self.sessions.keep_managed_fields

    async def default_namespace(self) -> str | None:
        """The current credentials' default namespace (waits for credentials, as requests do).

        Raises:
            LoginError: The vault is closed.
        """
        _, info = await self.sessions.vault.current()
        return info.default_namespace

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every HTTP connection (requests made later open new ones)."""
        await self.sessions.aclose()

    # -- objects --------------------------------------------------------------------------------

    async def get(
        self,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Body:
        """Read one object, or one of its subresources (``subresource="status"``).

        Raises:
            NotFoundError: No such object (or namespace, or resource).
        """
        path = resource.get_url(namespace=namespace, name=name, subresource=subresource)
        return await self._object(Request("GET", path))

    async def find(self, resource: Resource, body: Mapping[str, Any]) -> Body | None:
        """The object of this body as it is now (the same name and uid), if it still exists.

        Raises:
            AnyopError: The server could not tell (other than with a 404).
        """
        metadata = body.get("metadata") or {}
        name, namespace = str(metadata.get("name") or ""), metadata.get("namespace")
        try:
            found = await self.get(resource, name=name, namespace=namespace)
        except NotFoundError:
            return None
        same = (found.get("metadata") or {}).get("uid") == metadata.get("uid")
        return found if same else None

    def list_pages(self, resource: Resource, **options: Unpack[ListOptions]) -> Pages:
        """List objects page by page (``limit``/``continue``): ``async for page in ...``.

        An expired continue token (410) restarts the list from the first page, which is then
        marked ``restarted``. See :class:`ListOptions` for the options.
        """
        params = {"limit": str(options.get("page_size", PAGE_SIZE))}
        for option, param in (
            ("label_selector", "labelSelector"),
            ("field_selector", "fieldSelector"),
            ("shard_selector", "shardSelector"),
        ):
            if value := options.get(option):
                params[param] = str(value)
        return Pages(self, resource.get_url(namespace=options.get("namespace")), params)

    async def list(self, resource: Resource, **options: Unpack[ListOptions]) -> ObjectList:
        """List all matching objects, fetching all pages (see :meth:`list_pages`)."""
        items: Items = []
        version = ""
        async for page in self.list_pages(resource, **options):
            if page.restarted:
                items.clear()
            items.extend(page.items)
            version = page.resource_version
        return ObjectList(items, version)

    async def create(
        self, resource: Resource, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> Body:
        """Create an object in ``namespace`` (by default the body's); never sent twice.

        Raises:
            ConflictError: An object of that name exists (reason ``AlreadyExists``).
            InvalidError: The object fails validation (see ``details["causes"]``).
        """
        path = resource.get_url(namespace=_namespace(resource, body, namespace))
        return await self._object(Request("POST", path, body=body))

    async def replace(
        self, resource: Resource, body: Mapping[str, Any], *, subresource: str | None = None
    ) -> Body:
        """Replace an object (PUT), or its status with ``subresource="status"``.

        The name and namespace come from the body; its ``metadata.resourceVersion``, if set,
        makes the write conditional.

        Raises:
            ConflictError: The resourceVersion is stale.
        """
        name = _name(body)
        namespace = _namespace(resource, body, None)
        path = resource.get_url(namespace=namespace, name=name, subresource=subresource)
        return await self._object(Request("PUT", path, body=body))

    async def patch(
        self,
        resource: Resource,
        patch: Any,
        *,
        name: str,
        namespace: str | None = None,
        subresource: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool = False,
    ) -> Body:
        """Patch an object, or its status with ``subresource="status"``.

        Args:
            resource: The object's resource.
            patch: A mapping, or a list of operations for :attr:`PatchType.JSON`.
            name: The object's name.
            namespace: The object's namespace, for namespaced resources.
            subresource: E.g. ``"status"``.
            patch_type: The format of ``patch``.
            field_manager: Who makes the change; required for :attr:`PatchType.APPLY`.
            force: Server-side apply only: take over fields owned by other managers.

        Raises:
            ConflictError: Server-side apply met fields owned by another manager.
            InvalidError: The result fails validation, or a JSON-patch ``test`` failed.
            ApiError: 415 for a strategic-merge patch of a custom resource.
        """
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("Server-side apply needs a field_manager.")
        params = {"fieldManager": field_manager} if field_manager else {}
        params |= {"force": "true"} if force and patch_type is PatchType.APPLY else {}
        path = resource.get_url(namespace=namespace, name=name, subresource=subresource)
        return await self._object(Request("PATCH", path, params, patch, str(patch_type)))

    async def apply(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
    ) -> Body:
        """Server-side apply of ``body`` (name and namespace from its metadata).

        Raises:
            ConflictError: Another manager owns some of the fields and ``force`` is false.
        """
        name = _name(body)
        namespace = _namespace(resource, body, None)
        return await self.patch(
            resource,
            body,
            name=name,
            namespace=namespace,
            patch_type=PatchType.APPLY,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self, resource: Resource, *, name: str, **options: Unpack[DeleteOptions]
    ) -> Body:
        """Delete an object; return the server's answer (the object, or a ``Status``).

        See :class:`DeleteOptions` for the options.

        Raises:
            NotFoundError: No such object (also when a repeated attempt finds it deleted).
            ConflictError: A precondition failed.
        """
        body: Body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        conditions = {"uid": options.get("uid"), "resourceVersion": options.get("resource_version")}
        if conditions := {key: value for key, value in conditions.items() if value is not None}:
            body["preconditions"] = conditions
        if policy := options.get("propagation_policy"):
            body["propagationPolicy"] = policy
        if (grace := options.get("grace_period_seconds")) is not None:
            body["gracePeriodSeconds"] = grace
        path = resource.get_url(namespace=options.get("namespace"), name=name)
        return await self._object(Request("DELETE", path, body=body))

    # -- requests -------------------------------------------------------------------------------

    async def _object(self, request: Request) -> Body:
        document = await self.request(request)
        if not isinstance(document, dict):
            raise TransportError(f"The API server answered with a non-object: {document!r:.200}")
        return document

    async def request(self, request: Request) -> Any:
        """Send any request, repeating it when that is safe; return the decoded JSON answer.

        Raises:
            ApiError: The server answered with an error status (the last one, after retries).
            TransportError: The server could not be reached, or the answer broke off.
        """
        return await self.sessions.send(request)


class Pages:
    """The pages of one list, fetched as they are iterated (see :meth:`KubeClient.list_pages`).

    A plain async iterator (no generator), so leaving the loop early leaves nothing behind.
    """

    def __init__(self, client: KubeClient, path: str, params: Mapping[str, str]) -> None:
        self._client = client
        self._path = path
        self._params = dict(params)
        self._token: str | None = None
        self._done = False
        self._restarts = 0

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ListPage:
        if self._done:
            raise StopAsyncIteration
        restarted = False
        while True:
            params = self._params | ({"continue": self._token} if self._token else {})
            try:
                document = await self._client.request(Request("GET", self._path, params))
                break
            except GoneError:
                if not self._token or self._restarts >= _MAX_LIST_RESTARTS:
                    raise
                logger.info("The continue token of %s expired; listing again.", self._path)
                self._token, self._restarts, restarted = None, self._restarts + 1, True
        metadata = document.get("metadata") or {}
        self._token = metadata.get("continue") or None
        self._done = self._token is None
        items = _typed_items(document)
        sharded = (metadata.get("shardInfo") or {}).get("selector") or None
        return ListPage(items, str(metadata.get("resourceVersion") or ""), restarted, sharded)


def _typed_items(document: Mapping[str, Any]) -> Items:
    """The items of a list, with the ``apiVersion`` and ``kind`` that lists leave out."""
    items: Items = list(document.get("items") or [])
    api_version = document.get("apiVersion")
    kind = str(document.get("kind") or "").removesuffix("List")
    for item in items:
        if "kind" not in item and kind:
            item["kind"] = kind
        if "apiVersion" not in item and api_version:
            item["apiVersion"] = api_version
    return items


def _name(body: Mapping[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("The body has no metadata.name: which object is it?")
    return str(name)


def _namespace(resource: Resource, body: Mapping[str, Any], namespace: str | None) -> str | None:
    if namespace is not None or not resource.namespaced:
        return namespace
    found = (body.get("metadata") or {}).get("namespace")
    return str(found) if found else None


def open_client(
    vault: Vault,
    *,
    settings: OperatorSettings | None = None,
    transport_factory: TransportFactory | None = None,
    keep_managed_fields: bool = False,
    observer: RequestObserver | None = None,
) -> KubeClient:
    """Open the operator's API client: ``async with open_client(vault) as client: ...``.

    See :class:`KubeClient` for the arguments and guarantees.
    """
    return KubeClient(
        vault,
        settings=settings,
        transport_factory=transport_factory,
        keep_managed_fields=keep_managed_fields,
        observer=observer,
    )
