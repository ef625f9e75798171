"""The decorators that declare handlers, as in Kopf: ``@anyop.on.create('kopfexamples')``.

Resource decorators take up to three positional selector arguments (see
:class:`~anyop.handlers.selectors.Selector`) and keyword options:

- selectors: ``group version kind plural singular shortcut category``;
- behaviour: ``id`` (default: the function's name), ``param`` (passed as the ``param`` kwarg),
  ``errors`` (an ``ErrorsMode``), ``timeout``, ``retries``, ``backoff`` (seconds);
- filters: ``labels``, ``annotations`` (exact strings, ``PRESENT``, ``ABSENT``, or callbacks),
  ``field`` with ``value``, ``old``/``new`` (update and field handlers only), ``when``;
- ``registry``: where to register (default: the default registry).

Everything is checked when the function is decorated; mistakes raise a
:class:`~anyop.errors.ConfigError` that names the function (and is also a ``TypeError`` or
``ValueError``, as in Kopf). Handlers must accept ``**kwargs``: anyop adds kwargs over time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, Unpack, cast

from anyop.handlers.causes import Activity, Reason, WebhookType
from anyop.handlers.declarations import (
    ActivityOptions,
    Args,
    DaemonOptions,
    Declaration,
    DeleteOptions,
    EventOptions,
    FieldOptions,
    RegisterOptions,
    ResourceOptions,
    ResumeOptions,
    SelectorArg,
    SubhandlerOptions,
    TimerOptions,
    UpdateOptions,
    WebhookOptions,
)
from anyop.handlers.records import (
    ActivityHandler,
    ConversionHandler,
    DaemonHandler,
    ReconcilingHandler,
    ResourceChangingHandler,
    ResourceIndexingHandler,
    ResourceWatchingHandler,
    ResourceWebhookHandler,
    TimerHandler,
)
from anyop.handlers.registry import OperatorRegistry, current_handler, current_subregistry
from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError, Selector
from anyop.models.resources import CustomResource, is_custom_resource
from anyop.models.typed import typed_conversion

__all__ = [
    "ConvertOptions",
    "cleanup",
    "convert",
    "create",
    "daemon",
    "delete",
    "event",
    "field",
    "index",
    "login",
    "mutate",
    "probe",
    "reconcile",
    "register",
    "resume",
    "startup",
    "subhandler",
    "timer",
    "update",
    "validate",
]

F = TypeVar("F", bound=Callable[..., Any])


def _activity(name: str, activity: Activity, options: Mapping[str, Any]) -> Callable[[F], F]:
    def decorator(fn: F) -> F:
        spec = Declaration(f"on.{name}", fn, options=options, schema=ActivityOptions)
        handler = ActivityHandler(
            id=spec.handler_id(None), fn=fn, activity=activity, **spec.behaviour()
        )
        spec.registry().activities.append(handler)
        return fn

    return decorator


def startup(**options: Unpack[ActivityOptions]) -> Callable[[F], F]:
    """Run the function once when the operator starts, before any watching begins."""
    return _activity("startup", Activity.STARTUP, options)


def cleanup(**options: Unpack[ActivityOptions]) -> Callable[[F], F]:
    """Run the function once when the operator stops."""
    return _activity("cleanup", Activity.CLEANUP, options)


def login(**options: Unpack[ActivityOptions]) -> Callable[[F], F]:
    """Use the function to get the credentials (run again when they stop working)."""
    return _activity("login", Activity.AUTHENTICATION, options)


def probe(**options: Unpack[ActivityOptions]) -> Callable[[F], F]:
    """Report the function's result in the liveness endpoint's JSON, under its id."""
    return _activity("probe", Activity.PROBE, options)


def _changing(
    name: str,
    args: Args,
    *,
    options: Mapping[str, Any],
    schema: type,
    **extra: Any,
) -> Callable[[F], F]:
    def decorator(fn: F) -> F:
        spec = Declaration(f"on.{name}", fn, options=options, schema=schema)
        fields = spec.resource_fields(args, change_filters=bool(extra.get("field_needs_change")))
        handler = ResourceChangingHandler(**fields, **extra, **spec.changing_flags())
        spec.registry().changing.append(handler)
        return fn

    return decorator


def resume(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[ResumeOptions],
) -> Callable[[F], F]:
    """Run the function for objects found when the operator starts (once per process)."""
    return _changing(
        "resume",
        (arg1, arg2, arg3),
        options=options,
        schema=ResumeOptions,
        initial=True,
    )


def create(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[ResourceOptions],
) -> Callable[[F], F]:
    """Run the function when an object is created (or first handled)."""
    return _changing(
        "create", (arg1, arg2, arg3), options=options, schema=ResourceOptions, reason=Reason.CREATE
    )


def update(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[UpdateOptions],
) -> Callable[[F], F]:
    """Run the function when an object's essence changes (``old``, ``new``, ``diff`` kwargs)."""
    extra = {"reason": Reason.UPDATE, "field_needs_change": True}
    return _changing("update", (arg1, arg2, arg3), options=options, schema=UpdateOptions, **extra)


def delete(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[DeleteOptions],
) -> Callable[[F], F]:
    """Run the function when an object is marked for deletion (a finalizer holds it meanwhile)."""
    return _changing(
        "delete", (arg1, arg2, arg3), options=options, schema=DeleteOptions, reason=Reason.DELETE
    )


def field(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[FieldOptions],
) -> Callable[[F], F]:
    """Run the function when one field changes (``old``/``new``/``diff`` are of that field)."""
    return _changing(
        "field", (arg1, arg2, arg3), options=options, schema=FieldOptions, field_needs_change=True
    )


def event(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[EventOptions],
) -> Callable[[F], F]:
    """Run the function on every raw watch event (``type``, ``event`` kwargs); never retried."""

    def decorator(fn: F) -> F:
        spec = Declaration("on.event", fn, options=options, schema=EventOptions)
        handler = ResourceWatchingHandler(**spec.resource_fields((arg1, arg2, arg3)))
        spec.registry().watching.append(handler)
        return fn

    return decorator


def index(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[ResourceOptions],
) -> Callable[[F], F]:
    """Index objects in memory by the function's result; the index is a kwarg named by the id."""

    def decorator(fn: F) -> F:
        spec = Declaration("index", fn, options=options, schema=ResourceOptions)
        fields = spec.resource_fields((arg1, arg2, arg3))
        # An index is a kwarg: named by id= or the function's own name (never its field, and
        # never the ``outer.<locals>.fn`` qualified name of a nested function).
        name = options.get("id") or getattr(fn, "__name__", None) or spec.handler_id(None)
        if not str(name).isidentifier():
            raise DeclarationValueError(
                f"{spec.culprit}: the index name {name!r} cannot be a kwarg; give id= a name."
            )
        fields["id"] = str(name)
        spec.registry().indexing.append(ResourceIndexingHandler(**fields))
        return fn

    return decorator


def daemon(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[DaemonOptions],
) -> Callable[[F], F]:
    """Run the function in the background for each object, from its appearance to its deletion."""

    def decorator(fn: F) -> F:
        spec = Declaration("daemon", fn, options=options, schema=DaemonOptions)
        handler = DaemonHandler(
            **spec.resource_fields((arg1, arg2, arg3)),
            initial_delay=spec.seconds_or_callback("initial_delay"),
            cancellation_backoff=spec.get("cancellation_backoff", float, minimum=0),
            cancellation_timeout=spec.get("cancellation_timeout", float, minimum=0),
            cancellation_polling=spec.get("cancellation_polling", float, minimum=0),
        )
        spec.registry().spawning.append(handler)
        return fn

    return decorator


def timer(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[TimerOptions],
) -> Callable[[F], F]:
    """Run the function periodically for each object while it exists."""

    def decorator(fn: F) -> F:
        spec = Declaration("timer", fn, options=options, schema=TimerOptions)
        interval = spec.get("interval", float, minimum=0)
        if interval is not None and interval <= 0:
            raise DeclarationValueError(f"{spec.culprit}: interval= must be positive.")
        handler = TimerHandler(
            **spec.resource_fields((arg1, arg2, arg3)),
            initial_delay=spec.seconds_or_callback("initial_delay"),
            interval=interval,
            sharp=spec.get("sharp", bool),
            idle=spec.get("idle", float, minimum=0),
        )
        spec.registry().spawning.append(handler)
        return fn

    return decorator


def _webhook(
    name: str, args: Args, *, options: Mapping[str, Any], reason: WebhookType
) -> Callable[[F], F]:
    def decorator(fn: F) -> F:
        spec = Declaration(f"on.{name}", fn, options=options, schema=WebhookOptions)
        timeout = spec.get("timeout", float, minimum=1)
        if timeout is not None and timeout > 30:
            raise DeclarationValueError(f"{spec.culprit}: timeout= must be 1-30: {timeout!r}.")
        handler = ResourceWebhookHandler(
            **spec.resource_fields(args),
            reason=reason,
            operations=spec.operations(),
            subresource=spec.get("subresource", str),
            persistent=spec.get("persistent", bool),
            side_effects=spec.get("side_effects", bool),
            ignore_failures=spec.get("ignore_failures", bool),
        )
        spec.registry().webhooks.append(handler)
        return fn

    return decorator


def validate(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[WebhookOptions],
) -> Callable[[F], F]:
    """Validate objects in admission requests; raise :class:`~anyop.AdmissionError` to deny.

    The options are Kopf's: ``id``, ``operation``/``operations`` (``"CREATE"``, ``"UPDATE"``,
    ``"DELETE"``, ``"CONNECT"``, or ``None`` for all), ``subresource`` (``None``: the object
    itself only; ``"status"`` or another name: that subresource only; ``"*"``: the object and
    all of its subresources), ``persistent``, ``side_effects``, ``ignore_failures``,
    ``timeout``, and the filters of resource handlers (``labels``, ``annotations``,
    ``field``/``value``, ``when``).
    """
    return _webhook("validate", (arg1, arg2, arg3), options=options, reason=WebhookType.VALIDATING)


def mutate(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[WebhookOptions],
) -> Callable[[F], F]:
    """Mutate objects in admission requests via the ``patch`` kwarg (options: see :func:`validate`).

    Mutations come before validations: validators see their result.
    """
    return _webhook("mutate", (arg1, arg2, arg3), options=options, reason=WebhookType.MUTATING)


class ConvertOptions(TypedDict, total=False):
    """Options of ``convert``: the resource's names (no ``version``: a conversion spans them),
    ``id`` and ``param``, and ``registry``."""

    group: str | None
    kind: str | None
    plural: str | None
    singular: str | None
    shortcut: str | None
    registry: OperatorRegistry | None
    id: str | None
    param: Any


def convert(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    *,
    from_: str | type[CustomResource],
    to: str | type[CustomResource],
    **options: Unpack[ConvertOptions],
) -> Callable[[F], F]:
    """Convert objects of one custom resource from the version ``from_`` to the version ``to``,
    e.g. ``@anyop.on.convert("kopf.dev", "kopfexamples", from_="v1alpha1", to="v1")``.

    The webhook server (``settings.admission.server``) answers ConversionReviews by chaining
    such steps (the shortest path, e.g. through a hub version); the operator refuses to start
    if a pair of the resource's versions is not connected, naming the missing step.

    The function gets ``body`` (a mutable copy of the object in ``from_``), ``spec``, ``status``,
    ``meta``/``metadata``, ``labels``, ``annotations`` (parts of that copy), ``name``,
    ``namespace``, ``uid``, ``from_version``, ``to_version``, ``logger``, ``param`` and
    ``settings``. It changes ``body`` in place and returns ``None``, or returns the converted
    top-level fields (e.g. ``{"spec": ...}``), which replace the object's. anyop sets
    ``apiVersion`` and ``kind`` and keeps the metadata but for the labels and annotations
    (Kubernetes allows no other change: another one fails the review). An exception fails the
    whole review with its message, which the API client sees. Sync functions run in threads.

    Typed: ``@anyop.on.convert(from_=WidgetV1, to=WidgetV2)`` (two classes of one kind, no
    other selector) gives the function the object as a ``WidgetV1`` (``body``, ``spec`` and
    ``status`` as models); it returns a ``WidgetV2``, whose spec and status are the result.
    """

    def decorator(fn: F) -> F:
        spec = Declaration("on.convert", fn, options=options, schema=ConvertOptions)
        if is_custom_resource(from_) or is_custom_resource(to):
            fields = _typed_conversion(spec, (arg1, arg2, arg3), from_, to)
        else:
            selector = spec.selector((arg1, arg2, arg3))
            if selector.version is not None or not selector.is_specific:
                raise DeclarationValueError(
                    f"{spec.culprit}: name one resource without a version (the versions are "
                    f"from_= and to=): {selector!r}."
                )
            fields = {"selector": selector, "from_version": from_, "to_version": to, "fn": fn}
        if options.get("id") == "":
            raise DeclarationValueError(f"{spec.culprit}: id= must not be empty.")
        try:
            handler = ConversionHandler(
                id=spec.handler_id(None), param=options.get("param"), **fields
            )
        except (DeclarationTypeError, DeclarationValueError) as e:
            raise type(e)(f"{spec.culprit}: {e}") from None
        spec.registry().webhooks.append(handler)
        return fn

    return decorator


def _typed_conversion(
    spec: Declaration, args: Args, source: object, target: object
) -> dict[str, Any]:
    """The record's fields of a conversion between two typed resources' classes."""
    given = [
        key for key in ("group", "kind", "plural", "singular", "shortcut") if spec.options.get(key)
    ]
    if not (is_custom_resource(source) and is_custom_resource(target)) or any(args) or given:
        raise DeclarationTypeError(
            f"{spec.culprit}: a typed conversion takes two typed resources' classes as from_= "
            f"and to=, and no other selector: {source!r}, {target!r}."
        )
    source_cls, target_cls = cast(type[CustomResource], source), cast(type[CustomResource], target)
    before, after = source_cls.__resource__, target_cls.__resource__
    if before.crd_name != after.crd_name:
        raise DeclarationValueError(
            f"{spec.culprit}: from_= and to= are different resources: "
            f"{before.crd_name}, {after.crd_name}."
        )
    return {
        "selector": Selector(group=before.group, plural=before.plural),
        "from_version": before.version,
        "to_version": after.version,
        "fn": typed_conversion(spec.fn, source_cls, target_cls),
        "model": source_cls,
        "to_model": target_cls,
    }


class ReconcileOptions(TypedDict, total=False):
    """Options of ``reconcile``: the selector's names, ``registry``, ``id``, ``param``, and
    ``owns``, ``labels`` (of the children), ``resync`` (seconds), ``finalizer``,
    ``status_changes``."""

    group: str | None
    version: str | None
    kind: str | None
    plural: str | None
    singular: str | None
    shortcut: str | None
    category: str | None
    registry: OperatorRegistry | None
    id: str | None
    param: Any
    owns: Sequence[str | type[CustomResource]] | None
    labels: Mapping[str, str] | None
    resync: float | None
    finalizer: bool | None
    status_changes: bool | None


def reconcile(
    arg1: SelectorArg = None,
    arg2: SelectorArg = None,
    arg3: SelectorArg = None,
    /,
    **options: Unpack[ReconcileOptions],
) -> Callable[[F], F]:
    """Keep each object's children as its latest state asks: a level-triggered reconciler.

    The function is called with the object's latest state when it changes, when one of its
    children (objects of the ``owns`` resources whose controller ownerReference is the object)
    changes or disappears, when a returned :class:`~anyop.Requeue` is due, every ``resync``
    seconds, and once per object at start; never twice at once for one object. A change is
    anything but the server's bookkeeping (``resourceVersion``, ``managedFields``) and the
    reconciler's own writes; another client's change of ``status`` alone calls it only with
    ``status_changes=True``. It gets Kopf's
    kwargs (``body``, ``spec``, ``meta``, ``status``, ``name``, ``namespace``, ``logger``,
    ``memo``, ``patch``...) plus ``children`` (owned resource name -> list of children) and
    ``api`` (creates, patches and deletes children; see docs/reconcile.md). ``labels=`` narrows the
    children's watches server-side (and is put on the children that ``api`` creates).
    ``owns=`` may name typed resources' classes: their children are model instances, under
    ``plural.group``.
    """

    def decorator(fn: F) -> F:
        spec = Declaration("reconcile", fn, options=options, schema=ReconcileOptions)
        if options.get("id") == "":
            raise DeclarationValueError(f"{spec.culprit}: id= must not be empty.")
        owns, owned_models = _owned(spec, options.get("owns"))
        labels = options.get("labels")
        if labels is not None and not (
            isinstance(labels, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
        ):
            raise DeclarationTypeError(f"{spec.culprit}: labels= must map names to strings.")
        resync = spec.get("resync", float, minimum=0)
        if resync is not None and resync <= 0:
            raise DeclarationValueError(f"{spec.culprit}: resync= must be positive: {resync!r}.")
        selector = spec.selector((arg1, arg2, arg3))
        handler = ReconcilingHandler(
            id=spec.handler_id(None),
            fn=spec.target(owned_models),
            param=options.get("param"),
            selector=selector,
            model=spec.model,
            owned_models=owned_models or None,
            owns=tuple(Selector(name) for name in owns),
            owned_names=owns,
            child_labels=dict(labels) if labels else None,
            resync=resync,
            finalizer=bool(spec.get("finalizer", bool)),
            status_changes=bool(spec.get("status_changes", bool)),
        )
        spec.registry().reconciling.append(handler)
        return fn

    return decorator


def _owned(
    spec: Declaration, owns: object
) -> tuple[tuple[str, ...], dict[str, type[CustomResource]]]:
    """The ``owns=`` names, checked: resource names (``configmaps``, ``deployments.apps``) or
    typed resources' classes (named ``plural.group`` in ``children``); and those classes."""
    if owns is None:
        return (), {}
    if isinstance(owns, str) or not isinstance(owns, Sequence):
        raise DeclarationTypeError(f"{spec.culprit}: owns= must be a list of names: {owns!r}.")
    names: list[str] = []
    models: dict[str, type[CustomResource]] = {}
    for item in owns:
        if is_custom_resource(item):
            model = cast(type[CustomResource], item)
            item = f"{model.__resource__.plural}.{model.__resource__.group}"
            models[item] = model
        if not isinstance(item, str) or not item:
            raise DeclarationTypeError(f"{spec.culprit}: owns= has a bad name: {item!r}.")
        names.append(item)
    if len(set(names)) != len(names):
        raise DeclarationValueError(f"{spec.culprit}: owns= names a resource twice: {owns!r}.")
    return tuple(names), models


def subhandler(**options: Unpack[SubhandlerOptions]) -> Callable[[F], F]:
    """Declare a sub-handler of the running resource-changing handler (id ``parent/child``).

    Only valid inside a resource-changing handler; the parent is retried until all its
    sub-handlers are finished.
    """

    def decorator(fn: F) -> F:
        spec = Declaration("subhandler", fn, options=options, schema=SubhandlerOptions)
        parent, registry = current_handler.get(None), current_subregistry.get(None)
        if not isinstance(parent, ResourceChangingHandler) or registry is None:
            raise DeclarationTypeError(
                f"{spec.culprit}: sub-handlers can only be declared inside a running "
                "resource-changing handler (create/update/delete/resume/field)."
            )
        filters = spec.filters(change_filters=True)
        if (
            filters["old"] is not None or filters["new"] is not None
        ) and not parent.field_needs_change:
            raise DeclarationTypeError(
                f"{spec.culprit}: old=/new= only work under update handlers."
            )
        handler = ResourceChangingHandler(
            id=spec.handler_id(None, prefix=parent.id),
            fn=fn,
            field_needs_change=parent.field_needs_change,
            **spec.behaviour(),
            **filters,
        )
        registry.append(handler)
        return fn

    return decorator


def register(fn: F, **options: Unpack[RegisterOptions]) -> F:
    """Register ``fn`` as a sub-handler of the running handler: ``subhandler(**options)(fn)``."""
    return subhandler(**options)(fn)
