"""The registry: all handlers an operator declared, and which of them apply to what.

The decorators put handler records into a registry (the default one, or ``registry=``). The
engine asks it which handlers apply to a cause: by resource, by reason, and by filters. The same
function registered twice for one cause (``@on.create`` stacked with ``@on.resume``, or two
overlapping selectors) is selected once: handlers are deduplicated by function and id.

Sub-handlers live in a :class:`SubRegistry` per invocation of their parent: the engine sets
:data:`current_handler` and :data:`current_subregistry` while it runs a resource-changing handler,
and ``@anyop.subhandler`` / ``anyop.register`` read them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Container, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from anyop.handlers.causes import (
    Activity,
    ChangingCause,
    ResourceCause,
    SpawningCause,
    WebhookCause,
    WebhookType,
)
from anyop.handlers.diffs import FieldPath
from anyop.handlers.field_selectors import FieldSelector, shared_field_selector
from anyop.handlers.filters import KwargsFactory, LabelSelector, match, prematch
from anyop.handlers.filters import server_side_selector as _server_side_selector
from anyop.handlers.records import (
    ActivityHandler,
    ConversionHandler,
    Handler,
    ReconcilingHandler,
    ResourceChangingHandler,
    ResourceHandler,
    ResourceIndexingHandler,
    ResourceSpawningHandler,
    ResourceWatchingHandler,
    ResourceWebhookHandler,
)
from anyop.handlers.selectors import Selector
from anyop.kube.resources import Resource

__all__ = [
    "ActivityRegistry",
    "ChangingRegistry",
    "IndexingRegistry",
    "OperatorRegistry",
    "ReconcilingRegistry",
    "Registry",
    "ResourceRegistry",
    "SpawningRegistry",
    "SubRegistry",
    "WatchingRegistry",
    "WebhookHandler",
    "WebhooksRegistry",
    "current_handler",
    "current_subregistry",
    "deduplicated",
    "get_default_registry",
    "set_default_registry",
]

H = TypeVar("H", bound=Handler)
R = TypeVar("R", bound=ResourceHandler)

_NO_IDS: frozenset[str] = frozenset()
_MAX_SERVED = 256


def deduplicated(handlers: Iterable[H]) -> list[H]:
    """Keep the first handler of each (function, id) pair, in order."""
    seen: set[tuple[int, str]] = set()
    result: list[H] = []
    for handler in handlers:
        key = (id(handler.fn), handler.id)
        if key not in seen:
            seen.add(key)
            result.append(handler)
    return result


class ActivityRegistry:
    """The operator-level handlers."""

    def __init__(self) -> None:
        self.handlers: list[ActivityHandler] = []

    def append(self, handler: ActivityHandler) -> None:
        """Register a handler."""
        self.handlers.append(handler)

    def select(self, activity: Activity) -> list[ActivityHandler]:
        """The handlers of an activity; fallback handlers only if there is no regular one."""
        regular = [h for h in self.handlers if h.activity == activity and not h.fallback]
        fallback = [h for h in self.handlers if h.activity == activity and h.fallback]
        return deduplicated(regular or fallback)


class ResourceRegistry(Generic[R]):
    """The handlers of one kind for objects of resources.

    Which handlers serve a resource is worked out once per resource (every handling cycle asks)
    and again after a handler is registered.
    """

    def __init__(self) -> None:
        self.handlers: list[R] = []
        self.revision = 0
        """How many handlers were registered with :meth:`append` (caches follow it)."""
        self._served: dict[int, _Served[R]] = {}

    def append(self, handler: R) -> None:
        """Register a handler."""
        self.handlers.append(handler)
        self.revision += 1
        self._served.clear()

    def served(self, resource: Resource) -> Sequence[R]:
        """The handlers whose selector matches the resource, in order of registration."""
        return self._lookup(resource).handlers

    def _lookup(self, resource: Resource) -> _Served[R]:
        # By identity: selectors also match names that equality ignores (kind), and it needs
        # no hashing. The entry keeps its resource alive, so no other one can take its id.
        served = self._served.get(id(resource))
        if served is None or served.resource is not resource or served.count != len(self.handlers):
            if len(self._served) >= _MAX_SERVED:
                self._served.clear()  # resources rediscovered many times: no growth forever
            served = self._served[id(resource)] = _Served(self.handlers, resource)
        return served

    def for_resource(self, resource: Resource) -> list[R]:
        """All handlers whose selector matches the resource (deduplicated)."""
        return list(self._lookup(resource).unique)

    def has_handlers(self, resource: Resource) -> bool:
        """Whether any handler serves the resource."""
        return bool(self.served(resource))

    def selectors(self) -> frozenset[Selector]:
        """The selectors of all handlers."""
        return frozenset(h.selector for h in self.handlers if h.selector is not None)

    def extra_fields(self, resource: Resource) -> frozenset[FieldPath]:
        """The fields that handlers of the resource filter on (tracked in the essence)."""
        return self._lookup(resource).fields

    def select(
        self,
        cause: ResourceCause,
        kwargs_factory: KwargsFactory,
        *,
        excluded: Container[str] = _NO_IDS,
    ) -> list[R]:
        """The handlers that want this object now: by resource, then by all filters."""
        return deduplicated(self._iter_selected(cause, kwargs_factory, excluded))

    def _iter_selected(
        self, cause: ResourceCause, kwargs_factory: KwargsFactory, excluded: Container[str]
    ) -> Iterator[R]:
        for handler in self.served(cause.resource):
            # The cheap checks go first: filter callbacks must not run for irrelevant handlers.
            eligible = handler.id not in excluded and self._eligible(handler, cause)
            if eligible and match(handler, cause, kwargs_factory):
                yield handler

    def _eligible(self, handler: R, cause: ResourceCause) -> bool:
        """Besides serving the cause's resource (checked before)."""
        return True


class _Served(Generic[R]):
    """The handlers that serve one resource, out of the ``count`` registered when listed."""

    __slots__ = ("count", "fields", "handlers", "resource", "unique")

    def __init__(self, handlers: Sequence[R], resource: Resource) -> None:
        self.resource = resource
        self.count = len(handlers)
        self.handlers = tuple(h for h in handlers if _serves(h, resource))
        self.fields = frozenset(h.field for h in self.handlers if h.field)
        self.unique = tuple(deduplicated(self.handlers))


def _serves(handler: ResourceHandler, resource: Resource) -> bool:
    return handler.selector is None or handler.selector.check(resource)


class WatchingRegistry(ResourceRegistry[ResourceWatchingHandler]):
    """``@on.event`` handlers."""


class IndexingRegistry(ResourceRegistry[ResourceIndexingHandler]):
    """``@index`` handlers."""


class SpawningRegistry(ResourceRegistry[ResourceSpawningHandler]):
    """Daemons and timers."""

    def requires_finalizer(
        self,
        cause: ResourceCause,
        kwargs_factory: KwargsFactory,
        *,
        excluded: Container[str] = _NO_IDS,
    ) -> bool:
        """Whether a daemon or timer (not among ``excluded``) wants the object."""
        return any(
            h.requires_finalizer for h in self.select(cause, kwargs_factory, excluded=excluded)
        )


class ChangingRegistry(ResourceRegistry[ResourceChangingHandler]):
    """Resource-changing handlers: ``create``, ``update``, ``delete``, ``resume``, ``field``."""

    def _eligible(self, handler: ResourceChangingHandler, cause: ResourceCause) -> bool:
        if not isinstance(cause, ChangingCause):
            return False
        if handler.reason is not None and handler.reason != cause.reason:
            return False
        # Resume handlers: only for objects new to this process, and not on deletion by default.
        return not handler.initial or (cause.initial and (handler.deleted or not cause.deleted))

    def prematch(self, cause: ResourceCause, kwargs_factory: KwargsFactory) -> bool:
        """Whether any handler of the resource wants the object at all (else it is invisible)."""
        return any(
            prematch(handler, cause, kwargs_factory) for handler in self.served(cause.resource)
        )

    def requires_finalizer(self, cause: ResourceCause, kwargs_factory: KwargsFactory) -> bool:
        """Whether a non-optional delete handler wants the object."""
        return any(
            handler.requires_finalizer and prematch(handler, cause, kwargs_factory)
            for handler in self.served(cause.resource)
        )


WebhookHandler = ResourceWebhookHandler | ConversionHandler
"""What the webhook server serves: an admission handler or a conversion function."""


class WebhooksRegistry(ResourceRegistry[WebhookHandler]):
    """What the webhook server serves: validating and mutating admission handlers, and the
    conversion functions between versions of custom resources (``@on.convert``)."""

    @property
    def admission(self) -> list[ResourceWebhookHandler]:
        """The admission handlers, in order of registration."""
        return [h for h in self.handlers if isinstance(h, ResourceWebhookHandler)]

    @property
    def conversions(self) -> list[ConversionHandler]:
        """The conversion functions, in order of registration."""
        return [h for h in self.handlers if isinstance(h, ConversionHandler)]

    def select_admission(
        self, cause: WebhookCause, kwargs_factory: KwargsFactory
    ) -> list[ResourceWebhookHandler]:
        """The admission handlers that want this review: by resource, then by all filters."""
        selected = self.select(cause, kwargs_factory)
        return [h for h in selected if isinstance(h, ResourceWebhookHandler)]

    def _eligible(self, handler: WebhookHandler, cause: ResourceCause) -> bool:
        if not isinstance(handler, ResourceWebhookHandler):
            return False  # conversions are asked for by ConversionReviews, never selected
        return isinstance(cause, WebhookCause) and _admits(handler, cause)


def _admits(handler: ResourceWebhookHandler, cause: WebhookCause) -> bool:
    if cause.reason is not None and cause.reason != handler.reason:
        return False
    if cause.webhook is not None and cause.webhook != handler.id:
        return False
    if handler.subresource != "*" and handler.subresource != cause.subresource:
        return False
    operations = set(handler.operations or ())
    if operations and "*" not in operations and cause.operation not in operations:
        return False
    # Mutating a deleted object makes no sense, unless the handler asks for deletions explicitly.
    mutating_deletion = handler.reason == WebhookType.MUTATING and cause.operation == "DELETE"
    return not mutating_deletion or operations == {"DELETE"}


class ReconcilingRegistry(ResourceRegistry[ReconcilingHandler]):
    """``@anyop.reconcile`` handlers (they watch their objects and their owned children)."""


class SubRegistry(ResourceRegistry[ResourceChangingHandler]):
    """The sub-handlers registered during one invocation of a parent handler.

    Sub-handlers have no selector and no reason: they run for their parent's cause, filtered by
    their own filters only.
    """


class OperatorRegistry:
    """All handlers of an operator, by kind.

    Attributes:
        activities: Startup, cleanup, login, probe handlers.
        indexing: Indexers.
        watching: Event handlers.
        spawning: Daemons and timers.
        changing: Resource-changing handlers.
        webhooks: Admission handlers and conversion functions.
        reconciling: Reconcilers (``@anyop.reconcile``).
    """

    def __init__(self) -> None:
        self.activities = ActivityRegistry()
        self.indexing = IndexingRegistry()
        self.watching = WatchingRegistry()
        self.spawning = SpawningRegistry()
        self.changing = ChangingRegistry()
        self.webhooks = WebhooksRegistry()
        self.reconciling = ReconcilingRegistry()
        self._facts: dict[int, _Facts] = {}

    def _facts_of(self, resource: Resource) -> _Facts:
        """What every handling cycle asks about the resource's handlers, worked out once (and
        again after a handler of a kind that the answers depend on is registered)."""
        # The same registries, each with the same registrations and as many handlers: the same
        # cases in which ResourceRegistry._lookup keeps its answer.
        watching, spawning, changing = self.watching, self.spawning, self.changing
        key = (
            watching,
            watching.revision,
            len(watching.handlers),
            spawning,
            spawning.revision,
            len(spawning.handlers),
            changing,
            changing.revision,
            len(changing.handlers),
        )
        facts = self._facts.get(id(resource))
        if facts is None or facts.resource is not resource or facts.key != key:
            if len(self._facts) >= _MAX_SERVED:
                self._facts.clear()  # as ResourceRegistry._lookup: no growth forever
            facts = self._facts[id(resource)] = _Facts(self, resource, key)
        return facts

    @property
    def _resource_registries(self) -> Sequence[ResourceRegistry[Any]]:
        # Only those that consume the watch-stream (webhooks are served by requests).
        return (self.indexing, self.watching, self.spawning, self.changing)

    def selectors(self) -> frozenset[Selector]:
        """The selectors of all resource handlers, webhooks included."""
        registries = (*self._resource_registries, self.webhooks)
        return frozenset().union(*(registry.selectors() for registry in registries))

    def watched_selectors(self) -> frozenset[Selector]:
        """The selectors of the handlers that need the watch-stream (all but webhooks; the
        reconcilers' own resources, not their children's, which their reconcilers watch)."""
        registries = (*self._resource_registries, self.reconciling)
        return frozenset().union(*(r.selectors() for r in registries))

    def has_handlers(self, resource: Resource) -> bool:
        """Whether any handler (other than webhooks) needs the resource's watch-stream."""
        return any(registry.has_handlers(resource) for registry in self._resource_registries)

    def extra_fields(self, resource: Resource) -> frozenset[FieldPath]:
        """The fields to track in the essence for the resource's field filters."""
        return self._facts_of(resource).extra_fields

    def _extra_fields(self, resource: Resource) -> frozenset[FieldPath]:
        watching = self.watching.extra_fields(resource)
        spawning = self.spawning.extra_fields(resource)
        changing = self.changing.extra_fields(resource)
        if not watching and not spawning:
            return changing
        return watching | spawning | changing

    def requires_finalizer(
        self,
        cause: ResourceCause,
        kwargs_factory: KwargsFactory,
        *,
        excluded: Container[str] = _NO_IDS,
    ) -> bool:
        """Whether the object needs our finalizer: a non-optional delete handler or a daemon or a
        timer (not among ``excluded``, e.g. daemons that exited for good) wants it."""
        if not self.may_require_finalizer(cause.resource):
            return False
        spawning = SpawningCause(resource=cause.resource, body=cause.body)
        return self.changing.requires_finalizer(
            cause, kwargs_factory
        ) or self.spawning.requires_finalizer(spawning, kwargs_factory, excluded=excluded)

    def keeps_state(self, resource: Resource) -> bool:
        """Whether any handler keeps state on the resource's objects (not only event handlers):
        a resource-changing handler, a daemon or a timer."""
        return self._facts_of(resource).keeps_state

    def may_require_finalizer(self, resource: Resource) -> bool:
        """Whether any handler of the resource could want our finalizer, whatever the object."""
        return self._facts_of(resource).may_require_finalizer

    def _may_require_finalizer(self, resource: Resource) -> bool:
        return bool(self.spawning.served(resource)) or any(
            handler.requires_finalizer for handler in self.changing.served(resource)
        )

    def echoes_are_quiet(self, resource: Resource) -> bool:
        """Whether a body :func:`~anyop.handlers.causes.settled_by` a handled one needs no cycle.

        True when no handler of the resource could judge such a body differently from the handled
        one: no daemons or timers (the spawner is given every body), no changing handler whose
        filters call back into user code or read fields under ``metadata`` or ``status`` (the
        essence compares the rest), and, to keep the shortcut to the plainest resources, no event
        handlers. Indexes are fed by the watch, not by cycles. The engine still decides the
        finalizer for the echo (delete handlers' field filters read the old essence too).
        """
        return self._facts_of(resource).quiet_echoes

    def _echoes_are_quiet(self, resource: Resource) -> bool:
        if self.watching.served(resource) or self.spawning.served(resource):
            return False
        return all(_reads_only_the_essence(h) for h in self.changing.served(resource))

    def label_selector(self, resource: Resource) -> LabelSelector | None:
        """The ``labelSelector`` that all of the resource's watching handlers share, if any."""
        return _server_side_selector(self._watching_handlers(resource))

    def field_selector(self, resource: Resource) -> FieldSelector | None:
        """The ``fieldSelector`` terms that all of the resource's watching handlers share."""
        handlers = self._watching_handlers(resource)
        return shared_field_selector(handler.field_selector for handler in handlers)

    def selects_on_server(self, resource: Resource) -> bool:
        """Whether the resource's watch has a selector (so objects may leave the selection)."""
        return bool(self.label_selector(resource) or self.field_selector(resource))

    def _watching_handlers(self, resource: Resource) -> list[ResourceHandler]:
        handlers: list[ResourceHandler] = []
        for registry in (*self._resource_registries, self.reconciling):
            handlers.extend(registry.for_resource(resource))
        return handlers


class _Facts:
    """The answers of :class:`OperatorRegistry` about one resource, for the registrations that
    ``key`` names (the registries of event handlers, of daemons and timers, and of changing
    handlers, each with its revision and its number of handlers)."""

    __slots__ = (
        "extra_fields",
        "keeps_state",
        "key",
        "may_require_finalizer",
        "quiet_echoes",
        "resource",
    )

    def __init__(
        self, registry: OperatorRegistry, resource: Resource, key: tuple[Any, ...]
    ) -> None:
        self.resource = resource  # kept alive, so that no other resource can take its id
        self.key = key
        self.extra_fields = registry._extra_fields(resource)
        self.keeps_state = registry.changing.has_handlers(resource) or (
            registry.spawning.has_handlers(resource)
        )
        self.may_require_finalizer = registry._may_require_finalizer(resource)
        self.quiet_echoes = registry._echoes_are_quiet(resource)


def _reads_only_the_essence(handler: ResourceChangingHandler) -> bool:
    """Whether the handler's filters are plain values over labels, annotations and the essence."""
    if handler.when is not None:
        return False
    if handler.field is not None and handler.field[:1] in (("metadata",), ("status",)):
        return False
    patterns = (handler.labels or {}, handler.annotations or {})
    values = (handler.value, handler.old, handler.new, *(v for p in patterns for v in p.values()))
    return not any(callable(value) for value in values)


Registry = OperatorRegistry
"""A shorter name for :class:`OperatorRegistry`."""

current_handler: contextvars.ContextVar[Handler] = contextvars.ContextVar("anyop_current_handler")
"""The handler being invoked (set by the engine; read by ``@anyop.subhandler``)."""

current_subregistry: contextvars.ContextVar[SubRegistry] = contextvars.ContextVar(
    "anyop_current_subregistry"
)
"""Where the invoked handler's sub-handlers are registered (set by the engine)."""

_default_registry: OperatorRegistry | None = None


def get_default_registry() -> OperatorRegistry:
    """The registry that decorators use when given no ``registry=`` (created on first use)."""
    global _default_registry
    if _default_registry is None:
        _default_registry = OperatorRegistry()
    return _default_registry


def set_default_registry(registry: OperatorRegistry) -> None:
    """Replace the registry that decorators use when given no ``registry=``."""
    global _default_registry
    _default_registry = registry
