"""One API request in, one answer out: the routing and dispatching of the fake API server.

Sync. :func:`handle` answers every request but watches with an :class:`ApiResponse`; for a
watch it returns a :class:`WatchPlan` (its first events, or its error) that the async shell in
:mod:`anyop.testing.fake.watches` streams.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake import (
    component_statuses,
    deletions,
    media_types,
    pod_bindings,
    reviews,
    served_discovery,
    served_openapi,
    writes,
)
from anyop.testing.fake.body_kinds import checked_body_kind
from anyop.testing.fake.crd_versions import custom_deprecation
from anyop.testing.fake.field_labels import field_labels
from anyop.testing.fake.field_validation import (
    checked_fields,
    checked_patch,
)
from anyop.testing.fake.json_copy import compact_json
from anyop.testing.fake.kind_warnings import deprecation_warning, warning_header
from anyop.testing.fake.kinds import CRD_KIND, NAMESPACE_KIND, Kind
from anyop.testing.fake.label_selectors import parse_field_selector, parse_label_selector
from anyop.testing.fake.object_meta import DNS_LABEL
from anyop.testing.fake.read_views import ReadView, view_of
from anyop.testing.fake.request_bodies import decode_body
from anyop.testing.fake.request_options import (
    checked_delete,
    checked_get,
    checked_list,
    checked_write,
    flag,
    integer,
)
from anyop.testing.fake.routes import DiscoveryRoute, Route, parse_path, watch_path
from anyop.testing.fake.scales import rescale, scale_of
from anyop.testing.fake.server_side_apply import apply
from anyop.testing.fake.shard_selectors import parse_shard_selector
from anyop.testing.fake.statuses import (
    StatusError,
    bad_request,
    no_such_resource,
    not_found,
    status_body,
)
from anyop.testing.fake.store import ListQuery, Ref, Store, WatchStart

__all__ = ["ApiRequest", "ApiResponse", "WatchPlan", "handle", "is_watch"]

_TEXT_404 = "404 page not found\n"


@dataclasses.dataclass(frozen=True, slots=True)
class ApiRequest:
    """An HTTP request to the API, decoded no further than needed to route it.

    Attributes:
        method: The HTTP method.
        path: The URL path.
        query: Query parameters (the first value of each).
        content_type: The ``Content-Type`` without parameters.
        body: The raw body.
        user_agent: The ``User-Agent``: its product names the field manager of a write that
            names none.
        accept: The ``Accept`` header as sent (media types the client takes, in its order).
        if_none_match: The ``If-None-Match`` header (the ETag of a discovery document the
            client has cached).
    """

    method: str
    path: str
    query: Mapping[str, str] = dataclasses.field(default_factory=dict)
    content_type: str = "application/json"
    body: bytes = b""
    user_agent: str = ""
    accept: str = ""
    if_none_match: str = ""

    @property
    def manager(self) -> str:
        """The field manager: ``fieldManager``, else the user agent's product."""
        return self.query.get("fieldManager") or self.user_agent.split("/")[0][:128]


@dataclasses.dataclass(frozen=True, slots=True)
class ApiResponse:
    """A whole answer: a status code, a JSON document (or text for a bare 404, or bytes of
    ``media_type``), extra headers. The document may hold the stored objects' own parts (a
    read's, a write's): encode it, never change it."""

    status: int
    document: Any
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    media_type: str = "application/json"

    def content(self) -> tuple[bytes, str]:
        """The encoded body and its content type."""
        if isinstance(self.document, bytes):
            return self.document, self.media_type
        if isinstance(self.document, str):
            return self.document.encode(), "text/plain; charset=utf-8"
        return compact_json(self.document), "application/json"

    def encoded(self) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        """The encoded body and every header of the answer, as HTTP sends them (values in
        UTF-8, as Go writes a warning that names a field in another script)."""
        content, kind = self.content()
        head = [(b"content-type", kind.encode())] if kind else []  # (none on a 304)
        for key, value in self.headers.items():
            if key == "Warning":  # a header line each, as Go writes them
                head += [(b"warning", part.encode()) for part in _warnings(value)]
            else:
                head.append((key.encode(), value.encode()))
        head.append((b"content-length", b"%d" % len(content)))
        return content, head


def _warnings(header: str) -> list[str]:
    """The warnings a ``Warning`` header joins (``299 - "text", 299 - "more"``): each text is
    quoted, its own quotes escaped, so ``", 299 - "`` is only ever between two."""
    parts = header.split('", 299 - "')
    last = len(parts) - 1
    return [("" if i == 0 else '299 - "') + part + ("" if i == last else '"')
            for i, part in enumerate(parts)]  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class WatchPlan:
    """How to stream a watch.

    Attributes:
        kind: What is watched.
        query: Namespace and selectors.
        start: The first events and the resourceVersion after them (``None`` on error).
        error: A ``Status`` to send as one ``ERROR`` event before closing.
        timeout: ``timeoutSeconds``, or ``None`` for the server's own choice.
        bookmarks: ``allowWatchBookmarks``.
        initial_end: Send the ``k8s.io/initial-events-end`` bookmark after the first events.
        render: What each event's type and object become (a Table, ...); ``None``: as they are.
    """

    kind: Kind
    query: ListQuery
    start: WatchStart | None
    error: dict[str, Any] | None = None
    timeout: float | None = None
    bookmarks: bool = False
    initial_end: bool = False
    render: Callable[[str, Any], Any] | None = None


def is_watch(request: ApiRequest) -> bool:
    """Whether the request asks for a watch."""
    return request.method == "GET" and flag(request.query, "watch")


def handle(
    store: Store, request: ApiRequest, address: str = "127.0.0.1"
) -> ApiResponse | WatchPlan:
    """Answer one request; errors become their ``Status`` answers (without the body for
    ``HEAD``, which the API's resources do not allow: 405). The warnings recorded on the
    way (:attr:`Store.warnings <anyop.testing.fake.store.Store.warnings>`) are its ``Warning``
    header, whatever the answer (kube-apiserver writes each as it comes)."""
    store.warnings = []
    try:
        answer = _dispatch(store, request, address)
    except StatusError as exc:
        answer = ApiResponse(exc.code, exc.body)
    if store.warnings and isinstance(answer, ApiResponse):
        answer = dataclasses.replace(
            answer, headers={**answer.headers, **warning_header(store.warnings)}
        )
    if request.method == "HEAD" and isinstance(answer, ApiResponse):
        _, media_type = answer.content()
        return ApiResponse(answer.status, b"", answer.headers, media_type=media_type)
    return answer


_HEALTH = ("/healthz", "/livez", "/readyz")


def _dispatch(store: Store, request: ApiRequest, address: str) -> ApiResponse | WatchPlan:
    if request.method == "GET" and (legacy := watch_path(request.path)) is not None:
        request = _watch_of(request, *legacy)
    if request.path.startswith("/openapi/") and request.method == "GET":
        crds = store.objects[(CRD_KIND.group, CRD_KIND.plural)]
        found = served_openapi.answer(
            request.path,
            request.query,
            request.accept,
            kinds=store.kinds.values(),
            crds=[crds[key] for key in sorted(crds)],
        )
        if found is not None:
            code, body, headers = found
            media = headers.pop("Content-Type", "application/json")
            return ApiResponse(code, body, headers, media_type=media)
    if request.path in _HEALTH and request.method == "GET":
        return ApiResponse(200, b"ok", media_type="text/plain; charset=utf-8")
    if request.path == "/version" and request.method == "GET":
        return ApiResponse(200, served_discovery.VERSION)
    route = parse_path(request.path)
    if isinstance(route, DiscoveryRoute):
        return _discovery(store, route, request, address)
    if route is None or (route.group, route.version) not in store.groups():
        if request.path.startswith("/api/"):
            raise no_such_resource()  # the core API's own router answers under /api
        return ApiResponse(404, _TEXT_404)
    kind = store.kind(route.group, route.version, route.plural)
    if kind is None:
        return _no_route(store.custom_group(route.group, route.version))
    if reviews.handles(kind, route):  # create-only reviews; a ServiceAccount's token
        method, media, body = request.method, request.content_type, request.body
        return ApiResponse(*reviews.answer(store, kind, route, method, media, body))
    if pod_bindings.handles(kind, route):
        method, media, body = request.method, request.content_type, request.body
        return ApiResponse(*pod_bindings.bind(store, kind, route, method, media, body))
    if component_statuses.handles(kind, route):  # computed, not stored
        watch = is_watch(request)
        listing = route.name is None and route.namespace is None and request.method == "GET"
        selector = _list_query(kind, None, request.query).selector if listing else None
        return ApiResponse(*component_statuses.answer(route, request.method, watch=watch,
                                                      selector=selector))  # fmt: skip
    if _out_of_scope(kind, route, request.method):
        return _no_route(kind.custom)
    if route.subresource is not None and not _has_subresource(kind, route.subresource):
        if not kind.custom and route.subresource not in kind.subresources:
            raise no_such_resource()
        raise not_found(kind.plural, kind.group, route.name or "")
    if (deprecated := deprecation_warning(kind) or custom_deprecation(store, kind)) is not None:
        _warn(store, [deprecated])  # by the resource's handlers, before anything else
    namespace = route.namespace if kind.namespaced else None
    if route.name is None:
        return _collection(store, kind, request, namespace=namespace)
    return _member(store, Ref(kind, namespace, route.name), request, route=route)


def _no_route(custom: bool) -> ApiResponse:
    """No API path: the CRD handler passes it on to the bare 404, the built-in API's router
    answers a ``Status``."""
    if custom:
        return ApiResponse(404, _TEXT_404)
    raise no_such_resource()


def _out_of_scope(kind: Kind, route: Route, method: str) -> bool:
    """A path of the wrong scope: a cluster-scoped kind under a namespace, or a namespaced
    kind's object (or a write to its collection) without one. Lists and watches of all
    namespaces are the exception."""
    if route.namespace is not None:
        return not kind.namespaced
    if not kind.namespaced:
        return False
    if route.name is not None:
        return True
    if method == "GET":
        return False
    if kind.custom:
        return True
    _not_allowed_raise()
    return False


def _not_allowed_raise() -> None:
    raise StatusError(_not_allowed().document)


def _has_subresource(kind: Kind, subresource: str) -> bool:
    if subresource == "finalize":
        return kind == NAMESPACE_KIND
    if subresource == "scale":
        return kind.scale is not None
    if subresource == "approval":
        return (kind.group, kind.plural) == ("certificates.k8s.io", "certificatesigningrequests")
    return subresource == "status" and kind.status


def _discovery(
    store: Store, route: DiscoveryRoute, request: ApiRequest, address: str
) -> ApiResponse:
    kinds = list(store.kinds.values())
    top = route.version is None and not route.group  # /api or /apis: aggregated if asked
    if media_types.discovery(request.accept, aggregated=top):
        listing = served_discovery.aggregated(kinds, core=route.group is None)
        etag, headers = served_discovery.aggregated_headers(listing)
        if request.if_none_match == etag:
            return ApiResponse(304, b"", headers, media_type="")
        return ApiResponse(200, compact_json(listing), headers, served_discovery.AGGREGATED)
    document: dict[str, Any] | None
    if route.group is None:
        document = served_discovery.api_versions(address)
    elif route.version is None and not route.group:
        document = served_discovery.api_group_list(kinds)
    elif route.version is None:
        document = served_discovery.api_group(kinds, route.group)
    else:
        document = served_discovery.api_resource_list(kinds, route.group, route.version)
    if document is None and route.core:
        raise no_such_resource()  # the core API's own router answers under /api
    return ApiResponse(404, _TEXT_404) if document is None else ApiResponse(200, document)


def _collection(
    store: Store, kind: Kind, request: ApiRequest, *, namespace: str | None
) -> ApiResponse | WatchPlan:
    match request.method:
        case "GET" if is_watch(request):
            checked_list(request.query, watch=True)
            view = _view(store, kind, request, collection=True, watch=True)
            view.check()
            query = _list_query(kind, namespace, request.query)
            plan = _watch(store, kind, query, params=request.query)
            return dataclasses.replace(plan, render=view.watch_renderer())
        case "GET":
            checked_list(request.query, watch=False)
            view = _view(store, kind, request, collection=True)
            listed = store.list(kind, _list_query(kind, namespace, request.query), shared=True)
            return ApiResponse(200, view.render(listed))  # (encoded, never changed: shared)
        case "POST":
            warnings, read = _field_warnings(kind, request)
            body = _body(kind, request) if read is None else read
            if isinstance(body, Mapping):  # (else refused as no object)
                checked_body_kind(kind, body, request.body)
            created = writes.create(store, kind, body, namespace=namespace, manager=request.manager,
                                    field_warnings=warnings)  # fmt: skip
            return ApiResponse(201, created)
        case "DELETE" if kind != NAMESPACE_KIND:
            options = _body(kind, request, options=True) if request.body.strip() else {}
            if policy := request.query.get("propagationPolicy"):
                options["propagationPolicy"] = policy
            checked_delete(options, request.query)
            options.setdefault("gracePeriodSeconds", integer(request.query, "gracePeriodSeconds"))
            query = _list_query(kind, namespace, request.query)
            return ApiResponse(
                200, deletions.delete_collection(store, kind, query, options=options)
            )
    return _not_allowed(kind, request.method, named=False)


def _member(store: Store, ref: Ref, request: ApiRequest, *, route: Route) -> ApiResponse:
    if route.subresource == "scale":
        return _scale(store, ref, request)
    if route.subresource == "finalize" and request.method != "PUT":
        return _not_allowed()
    match request.method:
        case "GET":
            checked_get(request.query)
            view = _view(store, ref.kind, request, collection=False)
            found = store.get(ref.kind, ref.namespace, ref.name, shared=True)  # (as a list's)
            return ApiResponse(200, view.render(found))
        case "PUT":
            warnings, read = _field_warnings(ref.kind, request)
            body = _body(ref.kind, request) if read is None else read
            if isinstance(body, Mapping):  # (else refused as no object)
                checked_body_kind(ref.kind, body, request.body)
            code, replaced = writes.replace(
                store,
                ref,
                body,
                subresource=route.subresource,
                manager=request.manager,
                field_warnings=warnings,
            )
            return ApiResponse(code, replaced)
        case "PATCH" if request.content_type == writes.APPLY and route.subresource != "finalize":
            checked_write("PatchOptions", request.query, apply=True)
            manager = request.query.get("fieldManager", "")
            force = flag(request.query, "force")
            code, applied = apply(store, ref, document=request.body, manager=manager, force=force,
                                  subresource=route.subresource)  # fmt: skip
            return ApiResponse(code, applied)
        case "PATCH":
            writes.check_patch_type(ref.kind, request.content_type)
            warnings = _patch_warnings(store, ref, request, subresource=route.subresource)
            patched = writes.patch(
                store,
                ref,
                content_type=request.content_type,
                document=request.body,
                subresource=route.subresource,
                manager=request.manager,
                field_warnings=warnings,
            )
            return ApiResponse(200, patched)
        case "DELETE" if route.subresource is None:
            options = _body(ref.kind, request, options=True) if request.body.strip() else {}
            if policy := request.query.get("propagationPolicy"):
                options["propagationPolicy"] = policy
            checked_delete(options, request.query)
            options.setdefault("gracePeriodSeconds", integer(request.query, "gracePeriodSeconds"))
            return ApiResponse(200, deletions.delete(store, ref, options))
    return _not_allowed(ref.kind, request.method)


def _scale(store: Store, ref: Ref, request: ApiRequest) -> ApiResponse:
    match request.method:
        case "GET":
            stored = store.get(ref.kind, ref.namespace, ref.name)
            return ApiResponse(200, scale_of(ref.kind, stored))
        case "PUT" | "PATCH":
            content_type, document = request.content_type, request.body
            scaled = rescale(store, ref, content_type=content_type, document=document,
                             manager=request.manager)  # fmt: skip
            return ApiResponse(200, scaled)
    return _not_allowed(ref.kind, request.method)


def _view(store: Store, kind: Kind, request: ApiRequest, **read: bool) -> ReadView:
    """How a read is answered (as stored, a Table, ...), by its ``Accept`` header."""
    return view_of(store, kind, accept=request.accept, query=request.query, **read)


def _watch_of(request: ApiRequest, path: str, name: str | None) -> ApiRequest:
    """A deprecated watch path's request as a watch of the collection (of one object by a
    ``metadata.name`` field selector, which a given one must be).

    Raises:
        StatusError: 400, the field selector selects another name.
    """
    query = {**request.query, "watch": "true"}
    if name is not None:
        given = query.get("fieldSelector", "")
        if given and given.replace(" ", "") not in (f"metadata.name={name}",
                                                    f"metadata.name=={name}"):  # fmt: skip
            raise bad_request("fieldSelector metadata.name doesn't match requested name")
        query["fieldSelector"] = f"metadata.name={name}"
    return dataclasses.replace(request, path=path, query=query)


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}


def _not_allowed(kind: Kind | None = None, method: str = "", *, named: bool = True) -> ApiResponse:
    """405. The CRD handler names the verb and the resource (``NewMethodNotSupported``)."""
    verb = _VERBS.get(method)
    if kind is None or not kind.custom or verb is None:
        message = "the server does not allow this method on the requested resource"
        return ApiResponse(405, status_body(405, "MethodNotAllowed", message, details={}))
    if not named and verb in ("update", "patch"):  # the CRD handler's update and patch
        raise bad_request("name must be provided")
    if not named:
        verb = {"delete": "deletecollection", "get": "list"}.get(verb, verb)
    message = f'{verb} is not supported on resources of kind "{kind.plural}.{kind.group}"'
    details = {"group": kind.group, "kind": kind.plural}
    return ApiResponse(405, status_body(405, "MethodNotAllowed", message, details=details))


def _body(kind: Kind, request: ApiRequest, *, options: bool = False) -> Any:
    return decode_body(kind, request.content_type, request.body, options=options)


def _field_warnings(kind: Kind, request: ApiRequest) -> tuple[list[str], Any]:
    """The warnings of a create's or update's unknown and duplicate fields (or their refusal,
    with ``fieldValidation=Strict``), sent once the object decodes; the body as read for them,
    if it was read as :func:`_body` reads it (``None`` if not)."""
    options = "CreateOptions" if request.method == "POST" else "UpdateOptions"
    directive = checked_write(options, request.query)
    if request.content_type != "application/json":
        return [], None
    warnings, read = checked_fields(kind, request.body, directive)
    return warnings, read


def _patch_warnings(
    store: Store, ref: Ref, request: ApiRequest, *, subresource: str | None
) -> list[str]:
    """The warnings of a patch's unknown fields (or their refusal, when strict): of the whole
    object patched, through the main resource or its ``/status``; sent once the patched
    object decodes."""
    directive = checked_write("PatchOptions", request.query, apply=False)
    if subresource not in (None, "status"):
        return []
    stored = store.find(ref.kind, ref.namespace, ref.name)
    kind, body = request.content_type, request.body
    return checked_patch(ref.kind, stored, content_type=kind, document=body, directive=directive)


def _warn(store: Store, warnings: list[str]) -> None:
    """Record warnings of the request being answered."""
    if store.warnings is not None:
        store.warnings += warnings


def _list_query(kind: Kind, namespace: str | None, query: Mapping[str, str]) -> ListQuery:
    labels = field_labels(kind.group, kind.kind, custom=kind.custom, namespaced=kind.namespaced,
                          selectable=kind.fields)  # fmt: skip
    selector = parse_label_selector(query.get("labelSelector"))  # refused first, as in Go
    fields = parse_field_selector(query.get("fieldSelector"), labels)
    selector &= fields
    rv, match = query.get("resourceVersion", ""), query.get("resourceVersionMatch", "")
    limit = max(integer(query, "limit") or 0, 0)
    token = query.get("continue", "")
    # The registry narrows the storage's read to what a field selector names exactly (unless
    # continuing): a namespace, and within it (or for a cluster-scoped kind) one object.
    exact = fields.exact if not token else {}
    name, scope = exact.get("metadata.name"), exact.get("metadata.namespace")
    if namespace is None and kind.namespaced and scope and _namespace_name(scope):
        namespace = scope
    return ListQuery(
        namespace,
        selector,
        limit=0 if rv == "0" else limit,  # the watch cache serves it whole
        token=token,
        rv=rv,
        # A page size with a resourceVersion and no match: the legacy exact read.
        exact=match == "Exact" or (not match and limit > 0 and rv not in ("", "0")),
        shard=parse_shard_selector(query.get("shardSelector")),
        name=name if namespace is not None or not kind.namespaced else None,
    )


def _namespace_name(text: str) -> bool:
    """Whether ``ValidateNamespaceName`` takes it (a DNS label)."""
    return len(text) <= 63 and DNS_LABEL.match(text) is not None


def _watch(store: Store, kind: Kind, query: ListQuery, *, params: Mapping[str, str]) -> WatchPlan:
    timeout = integer(params, "timeoutSeconds")
    initial = flag(params, "sendInitialEvents")
    options: dict[str, Any] = {
        "timeout": float(timeout) if timeout is not None and timeout >= 0 else None,
        "bookmarks": flag(params, "allowWatchBookmarks"),
        "initial_end": initial and flag(params, "allowWatchBookmarks"),
    }
    try:
        start = store.watch_start(kind, query, initial=initial)
    except StatusError as exc:
        if exc.code != 410:
            raise
        return WatchPlan(kind, query, None, error=exc.body, **options)
    return WatchPlan(kind, query, start, **options)
