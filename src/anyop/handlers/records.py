"""Handler records: a user's function bound with everything its decorator declared.

Records are frozen and compared by identity. Their ``str()`` is how the logs name them:
``Handler 'create_fn'``, ``Daemon 'monitor'``, ``Timer 'ping'``, ``Indexer 'by_owner'``,
``Webhook 'check'``, ``Activity 'login'``, ``Conversion 'split' (v1alpha1 -> v1)``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, NewType

from anyop.handlers.causes import Activity, Reason, WebhookType
from anyop.handlers.diffs import FieldPath
from anyop.handlers.field_selectors import FieldSelector
from anyop.handlers.filters import MetaFilter, WhenFilterFn
from anyop.handlers.outcomes import ErrorsMode
from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError, Selector

__all__ = [
    "ActivityHandler",
    "ConversionHandler",
    "DaemonHandler",
    "Handler",
    "HandlerId",
    "ReconcilingHandler",
    "ResourceChangingHandler",
    "ResourceHandler",
    "ResourceIndexingHandler",
    "ResourceSpawningHandler",
    "ResourceWatchingHandler",
    "ResourceWebhookHandler",
    "TimerHandler",
    "callable_id",
    "generate_id",
]

_VERSION = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
"""A version name of a custom resource: a DNS label."""

HandlerId = NewType("HandlerId", str)
"""A handler's id (Kopf's name): the function's name unless ``id=`` says otherwise, with its
parent's id and a slash before it for sub-handlers (``parent/child``)."""


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class Handler:
    """A function with its behaviour on errors.

    Attributes:
        id: The handler id (keys its progress and its results in ``status.<id>``).
        fn: The user's function.
        param: A value passed as the ``param`` kwarg (distinguishes stacked decorators).
        errors: How arbitrary exceptions are treated (``None``: the handler kind's default).
        timeout: Seconds from the first attempt after which the handler fails for good.
        retries: Attempts after which the handler fails for good.
        backoff: Seconds between retries after arbitrary exceptions (``None``: 60).
    """

    kind: ClassVar[str] = "Handler"

    id: str
    fn: Callable[..., Any]
    param: Any = None
    errors: ErrorsMode | None = None
    timeout: float | None = None
    retries: int | None = None
    backoff: float | None = None

    def __str__(self) -> str:
        return f"{self.kind} {self.id!r}"


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ActivityHandler(Handler):
    """An operator-level handler: startup, cleanup, login, probe.

    Attributes:
        activity: The activity it serves.
        fallback: Run only if no regular handler serves the activity (built-in logins).
    """

    kind: ClassVar[str] = "Activity"

    activity: Activity
    fallback: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceHandler(Handler):
    """A handler of objects of some resources, with its filters.

    Attributes:
        selector: Which resources; ``None`` for sub-handlers (they inherit their parent's).
        labels: The labels filter.
        annotations: The annotations filter.
        when: The whole-object callback filter.
        field: The field that ``value=`` (and ``old=``/``new=``) check.
        value: The field's value filter (``None``: the field must be present).
        field_selector: The field selector (checked here, and sent to the server where all
            the resource's handlers share its terms).
        model: The typed resource's class that selected the resource, if one did (its
            handlers get typed kwargs, and ``anyop manifests`` writes its CRD).
    """

    selector: Selector | None = None
    model: type[Any] | None = None
    field_selector: FieldSelector | None = None
    labels: MetaFilter | None = None
    annotations: MetaFilter | None = None
    when: WhenFilterFn | None = None
    field: FieldPath | None = None
    value: Any = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceWatchingHandler(ResourceHandler):
    """An ``@on.event`` handler: every raw event; errors are logged and ignored."""


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceChangingHandler(ResourceHandler):
    """A ``create``/``update``/``delete``/``resume``/``field`` handler, or a sub-handler.

    Attributes:
        reason: The reason it serves; ``None`` for field handlers, resume handlers (which are
            mixed into any reason) and sub-handlers.
        initial: A resume handler: runs for objects first seen in this process.
        deleted: A resume handler that also runs for objects being deleted.
        failed_only: A resume handler only for objects whose last finished cause failed a
            handler (``failed_only=True``).
        requires_finalizer: A non-optional delete handler.
        keeps_finalizer_on_failure: A delete handler with ``on_failure="keep"``: its failures
            are retried after its backoff, and the deletion waits until it succeeds.
        field_needs_change: An update handler: its field must have changed.
        old: The filter of the field's old value.
        new: The filter of the field's new value.
    """

    reason: Reason | None = None
    initial: bool = False
    deleted: bool = False
    failed_only: bool = False
    requires_finalizer: bool = False
    keeps_finalizer_on_failure: bool = False
    field_needs_change: bool = False
    old: Any = None
    new: Any = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceSpawningHandler(ResourceHandler):
    """A daemon or a timer: runs beside the object while it exists and matches.

    Attributes:
        requires_finalizer: Always true: deletion waits until it exits.
        initial_delay: Seconds (or ``fn(**kwargs) -> seconds``) before the first run.
    """

    requires_finalizer: bool = True
    initial_delay: float | Callable[..., float] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class DaemonHandler(ResourceSpawningHandler):
    """A ``@daemon``: one long-running task per object.

    Attributes:
        cancellation_backoff: Seconds between the stop signal and the cancellation.
        cancellation_timeout: Seconds to wait for the cancelled daemon before abandoning it.
        cancellation_polling: Seconds between checks whether it has exited.
    """

    kind: ClassVar[str] = "Daemon"

    cancellation_backoff: float | None = None
    cancellation_timeout: float | None = None
    cancellation_polling: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class TimerHandler(ResourceSpawningHandler):
    """A ``@timer``: a function run periodically per object.

    Attributes:
        interval: Seconds between runs (from the previous exit, or on a grid if ``sharp``).
        sharp: Keep a fixed grid regardless of how long each run takes.
        idle: Seconds without essential changes before the first and every run.
    """

    kind: ClassVar[str] = "Timer"

    interval: float | None = None
    sharp: bool | None = None
    idle: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceIndexingHandler(ResourceHandler):
    """An ``@index``: keeps an in-memory index of the objects."""

    kind: ClassVar[str] = "Indexer"


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ReconcilingHandler(ResourceHandler):
    """An ``@anyop.reconcile``: called with an object's latest state and its owned children.

    Attributes:
        owns: The selectors of the owned resources (children by controller ownerReference).
        owned_names: How the ``children`` kwarg names each of ``owns`` (as declared).
        child_labels: The labels that narrow the children's watches server-side (and that the
            ``api`` kwarg puts on the children it creates).
        resync: Seconds after which an object is reconciled again without any change.
        finalizer: Keep the object until a call made while it is being deleted succeeds.
        status_changes: Other clients' changes of the object's ``status`` alone call it too.
        owned_models: The typed resources' classes among the owned ones, by their names in
            ``children`` (their children are model instances).
    """

    kind: ClassVar[str] = "Reconciler"

    owns: tuple[Selector, ...] = ()
    owned_names: tuple[str, ...] = ()
    owned_models: Mapping[str, type[Any]] | None = None
    child_labels: Mapping[str, str] | None = None
    resync: float | None = None
    finalizer: bool = False
    status_changes: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ResourceWebhookHandler(ResourceHandler):
    """A validating or mutating admission handler.

    Attributes:
        reason: Validating or mutating.
        operations: The operations it serves (``CREATE``...); ``None`` for all.
        subresource: The subresource it serves; ``None`` for the main one, ``'*'`` for all.
        persistent: Keep its webhook configuration when the operator exits.
        side_effects: Declare side effects (``sideEffects: NoneOnDryRun``).
        ignore_failures: Let requests pass if the webhook fails (``failurePolicy: Ignore``).
    """

    kind: ClassVar[str] = "Webhook"

    reason: WebhookType
    operations: Collection[str] | None = None
    subresource: str | None = None
    persistent: bool | None = None
    side_effects: bool | None = None
    ignore_failures: bool | None = None


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class ConversionHandler(ResourceHandler):
    """A conversion function: one step between two versions of one custom resource.

    The webhook server chains such steps to convert an object between any two versions of its
    resource (``@on.convert``).

    Attributes:
        from_version: The version of the objects it takes, e.g. ``"v1alpha1"``.
        to_version: The version of the objects it makes, e.g. ``"v1"``.
    """

    kind: ClassVar[str] = "Conversion"

    from_version: str
    to_version: str
    to_model: type[Any] | None = None

    def __post_init__(self) -> None:
        for key, value in (("from_", self.from_version), ("to", self.to_version)):
            if not isinstance(value, str):
                raise DeclarationTypeError(f"{key}= must be a version name: {value!r}.")
            if not _VERSION.fullmatch(value):
                raise DeclarationValueError(
                    f"{key}= is not a Kubernetes version name (e.g. 'v1beta1'): {value!r}."
                )
        if self.from_version == self.to_version:
            raise DeclarationValueError(
                f"from_= and to= are the same version: {self.to_version!r}."
            )

    def __str__(self) -> str:
        return f"{self.kind} {self.id!r} ({self.from_version} -> {self.to_version})"


def callable_id(fn: Callable[..., Any]) -> str:
    """A stable id of a function: its ``__qualname__``; ``lambda:<path>:<line>`` for lambdas.

    Partials and ``functools.wraps`` wrappers are unwrapped first.

    Raises:
        DeclarationValueError: For callables without a stable name; pass ``id=`` for those.
    """
    if isinstance(fn, functools.partial):
        return callable_id(fn.func)
    if hasattr(fn, "__wrapped__"):
        return callable_id(fn.__wrapped__)
    if isinstance(fn, types.FunctionType) and fn.__name__ == "<lambda>":
        return f"lambda:{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    if isinstance(fn, types.FunctionType | types.MethodType):
        return str(fn.__qualname__)
    raise DeclarationValueError(f"Cannot build a stable handler id for {fn!r}; pass id=...")


def generate_id(
    fn: Callable[..., Any],
    id: str | None = None,
    *,
    prefix: str | None = None,
    suffix: str | None = None,
) -> str:
    """The handler id: ``id`` or the function's, then ``/suffix`` (a field), ``prefix/`` (a parent).

    E.g. ``fn/spec.field`` for a field handler, ``create_fn/item1`` for a sub-handler.
    """
    real_id = id if id is not None else callable_id(fn)
    real_id = f"{real_id}/{suffix}" if suffix else real_id
    return f"{prefix}/{real_id}" if prefix else real_id
