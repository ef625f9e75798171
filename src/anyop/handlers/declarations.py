"""The checks behind the decorators: option schemas, and one declaration's validation.

Each decorator's keyword options are a :class:`~typing.TypedDict` (so type checkers see them as
keyword arguments); at runtime, :class:`Declaration` checks the names and the types of what was
given, and builds the fields of the handler record. Every mistake raises a
:class:`~anyop.handlers.selectors.DeclarationTypeError` or
:class:`~anyop.handlers.selectors.DeclarationValueError` naming the decorated function.
"""

# No ``from __future__ import annotations`` here: TypedDicts see ``Required[...]`` only in
# evaluated annotations, and ``Declaration`` reads ``__required_keys__`` at runtime.
import numbers
from collections.abc import Callable, Collection, Mapping
from typing import Any, Required, TypedDict, cast

from anyop.handlers.diffs import FieldSpec
from anyop.handlers.field_selectors import parse_field_selector
from anyop.handlers.filters import (
    MetaFilter,
    WhenFilterFn,
    check_callback,
    check_field_filters,
    check_meta_filter,
)
from anyop.handlers.outcomes import ErrorsMode
from anyop.handlers.records import generate_id
from anyop.handlers.registry import OperatorRegistry, get_default_registry
from anyop.handlers.selectors import (
    DeclarationTypeError,
    DeclarationValueError,
    Marker,
    Selector,
    SelectorFn,
)
from anyop.models.resources import CustomResource, is_custom_resource
from anyop.models.typed import typed_function

__all__ = [
    "ActivityOptions",
    "Args",
    "DaemonOptions",
    "Declaration",
    "DeleteOptions",
    "EventOptions",
    "FieldOptions",
    "RegisterOptions",
    "ResourceOptions",
    "ResumeOptions",
    "SelectorArg",
    "SubhandlerOptions",
    "TimerOptions",
    "UpdateOptions",
    "WebhookOptions",
]

SelectorArgPlain = str | Marker | SelectorFn | None
SelectorArg = SelectorArgPlain | type[CustomResource]
"""A positional selector argument of a decorator (a typed resource's class stands alone)."""

Args = tuple[SelectorArg, SelectorArg, SelectorArg]


class _Selecting(TypedDict, total=False):
    group: str | None
    version: str | None
    kind: str | None
    plural: str | None
    singular: str | None
    shortcut: str | None
    category: str | None
    registry: OperatorRegistry | None


class _Identity(TypedDict, total=False):
    id: str | None
    param: Any


class _Behaviour(_Identity, total=False):
    errors: ErrorsMode | None
    timeout: float | None
    retries: int | None
    backoff: float | None


class _MetaFilters(TypedDict, total=False):
    field_selector: str | None
    labels: MetaFilter | None
    annotations: MetaFilter | None
    when: WhenFilterFn | None


class _Filters(_MetaFilters, total=False):
    field: FieldSpec | None
    value: Any


class _ChangeFilters(TypedDict, total=False):
    old: Any
    new: Any


class ActivityOptions(_Behaviour, total=False):
    """Options of ``startup``, ``cleanup``, ``login`` and ``probe``."""

    registry: OperatorRegistry | None


class ResourceOptions(_Selecting, _Behaviour, _Filters, total=False):
    """Options of ``create`` and ``index`` (and the base of the others)."""


class ResumeOptions(ResourceOptions, total=False):
    """Options of ``resume``: ``deleted=True`` also resumes objects being deleted;
    ``failed_only=True`` resumes only objects whose last handling failed a handler."""

    deleted: bool | None
    failed_only: bool | None


class DeleteOptions(ResourceOptions, total=False):
    """Options of ``delete``: ``optional=True`` adds no finalizer for it; ``on_failure="keep"``
    keeps the finalizer while it fails (retried after its backoff), ``"release"`` (the default,
    Kopf's) releases it once it has failed for good."""

    optional: bool | None
    on_failure: str | None


class UpdateOptions(ResourceOptions, _ChangeFilters, total=False):
    """Options of ``update``."""


class FieldOptions(_Selecting, _Behaviour, _MetaFilters, _ChangeFilters, total=False):
    """Options of ``field``: ``field=`` is required."""

    field: Required[FieldSpec]
    value: Any


class EventOptions(_Selecting, _Identity, _Filters, total=False):
    """Options of ``event`` (errors are always ignored, never retried)."""


class DaemonOptions(ResourceOptions, total=False):
    """Options of ``daemon``."""

    initial_delay: float | Callable[..., float] | None
    cancellation_backoff: float | None
    cancellation_timeout: float | None
    cancellation_polling: float | None


class TimerOptions(ResourceOptions, total=False):
    """Options of ``timer``."""

    interval: float | None
    initial_delay: float | Callable[..., float] | None
    sharp: bool | None
    idle: float | None


class WebhookOptions(_Selecting, _Identity, _Filters, total=False):
    """Options of ``validate`` and ``mutate``.

    ``timeout=`` (an anyop addition; 1-30 seconds) becomes the webhook's ``timeoutSeconds``,
    and the server answers a margin before it if the handler is still running.
    """

    timeout: float | None
    operation: str | None
    operations: Collection[str] | None
    subresource: str | None
    persistent: bool | None
    side_effects: bool | None
    ignore_failures: bool | None


class SubhandlerOptions(_Behaviour, _Filters, _ChangeFilters, total=False):
    """Options of ``subhandler``."""


class RegisterOptions(_Behaviour, _MetaFilters, total=False):
    """Options of ``register``."""


SELECTOR_KEYS = ("group", "version", "kind", "plural", "singular", "shortcut", "category")
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT", "*"})


class Declaration:
    """One decoration: checks the function and the options, and builds the record's fields."""

    def __init__(self, name: str, fn: object, *, options: Mapping[str, Any], schema: type) -> None:
        label = getattr(fn, "__qualname__", None) or repr(fn)
        self.culprit = f"@anyop.{name}() on {label}"
        required = set(getattr(schema, "__required_keys__", ()))
        self.allowed = required | set(getattr(schema, "__optional_keys__", ()))
        unknown = sorted(set(options) - self.allowed)
        if unknown:
            raise DeclarationTypeError(f"{self.culprit}: unknown options {unknown!r}.")
        missing = sorted(key for key in required if options.get(key) is None)
        if missing:
            names = ", ".join(f"{key}=" for key in missing)
            raise DeclarationTypeError(f"{self.culprit}: {names} is required.")
        check_callback(fn, self.culprit)
        self.fn = cast(Callable[..., Any], fn)
        self.options = options
        self.model: type[CustomResource] | None = None

    def get(self, key: str, kind: type | tuple[type, ...], *, minimum: float | None = None) -> Any:
        """An option's value checked against a type (``float`` means any real number)."""
        value = self.options.get(key)
        if value is None:
            return None
        numeric = kind is float
        bad_type = isinstance(value, bool) and kind is not bool
        if bad_type or not isinstance(value, numbers.Real if numeric else kind):
            raise DeclarationTypeError(f"{self.culprit}: {key}= has a wrong type: {value!r}.")
        if minimum is not None and isinstance(value, numbers.Real) and value < minimum:
            raise DeclarationValueError(f"{self.culprit}: {key}= must be >= {minimum}: {value!r}.")
        return value

    def seconds_or_callback(self, key: str) -> Any:
        """An option that is a number of seconds or a ``fn(**kwargs) -> seconds``."""
        value = self.options.get(key)
        if callable(value):
            check_callback(value, self.culprit)
            return value
        return self.get(key, float, minimum=0)

    def registry(self) -> OperatorRegistry:
        """The ``registry=`` option, or the default registry."""
        value = self.options.get("registry")
        if value is not None and not isinstance(value, OperatorRegistry):
            raise DeclarationTypeError(f"{self.culprit}: registry= is not a registry: {value!r}.")
        return value if value is not None else get_default_registry()

    def behaviour(self) -> dict[str, Any]:
        """The record's ``param``, ``errors``, ``timeout``, ``retries``, ``backoff``."""
        identity = self.get("id", str)
        if identity == "":
            raise DeclarationValueError(f"{self.culprit}: id= must not be empty.")
        return {
            "param": self.options.get("param"),
            "errors": self.get("errors", ErrorsMode),
            "timeout": self.get("timeout", float, minimum=0),
            "retries": self.get("retries", int, minimum=0),
            "backoff": self.get("backoff", float, minimum=0),
        }

    def selector(self, args: Args) -> Selector:
        """The resource selector from the positional arguments and the selector options.

        A typed resource's class is the whole selector: its group, version and plural.
        """
        names = {key: self.get(key, str) for key in SELECTOR_KEYS}
        if any(isinstance(arg, type) and issubclass(arg, CustomResource) for arg in args):
            return self._typed_selector(args, names)
        try:
            plain = cast(tuple[SelectorArgPlain, SelectorArgPlain, SelectorArgPlain], args)
            return Selector(*plain, **names)
        except (DeclarationTypeError, DeclarationValueError) as e:
            raise type(e)(f"{self.culprit}: {e}") from None

    def _typed_selector(self, args: Args, names: dict[str, Any]) -> Selector:
        cls = cast(type[CustomResource], args[0])
        given = [key for key, value in names.items() if value is not None]
        if args[1] is not None or args[2] is not None or given or not isinstance(cls, type):
            raise DeclarationTypeError(
                f"{self.culprit}: a typed resource's class names the resource alone: "
                f"no other selector arguments are allowed: {args!r}, options {given}."
            )
        if not is_custom_resource(cls):
            raise DeclarationTypeError(
                f"{self.culprit}: {cls.__qualname__} is not a typed resource with a group, "
                f"version and kind (an abstract base?)."
            )
        self.model = cls
        info = cls.__resource__
        return Selector(group=info.group, version=info.version, plural=info.plural)

    def target(
        self, children: Mapping[str, type[CustomResource]] | None = None
    ) -> Callable[..., Any]:
        """The function to call: the user's, wrapped for typed kwargs if a class selected it
        (or typed ``children``, by their names, were declared).

        WARNING: call after :meth:`selector`, which finds the class.
        """
        if self.model is None and not children:
            return self.fn
        return typed_function(self.fn, self.model, children)

    def filters(self, *, change_filters: bool = False) -> dict[str, Any]:
        """The record's filters; ``old``/``new`` only with ``change_filters``."""
        given = {"value": self.options.get("value")}
        if change_filters:
            given |= {"old": self.options.get("old"), "new": self.options.get("new")}
        field = check_field_filters(self.options.get("field"), given, self.culprit)
        when = self.options.get("when")
        if when is not None:
            check_callback(when, self.culprit)
        return {
            "field_selector": parse_field_selector(
                self.options.get("field_selector"), self.culprit
            ),
            "labels": check_meta_filter("labels", self.options.get("labels"), self.culprit),
            "annotations": check_meta_filter(
                "annotations", self.options.get("annotations"), self.culprit
            ),
            "when": when,
            "field": field,
            **given,
        }

    def handler_id(self, field: tuple[str, ...] | None, *, prefix: str | None = None) -> str:
        """The handler id, with the field as a suffix and the parent's id as a prefix."""
        suffix = ".".join(field or ())
        return generate_id(self.fn, self.get("id", str), prefix=prefix, suffix=suffix)

    def resource_fields(self, args: Args, *, change_filters: bool = False) -> dict[str, Any]:
        """The fields of every resource handler record: id, fn, behaviour, selector, filters."""
        filters = self.filters(change_filters=change_filters)
        selector = self.selector(args)
        return {
            "id": self.handler_id(filters["field"]),
            "fn": self.target(),
            "selector": selector,
            "model": self.model,
            **self.behaviour(),
            **filters,
        }

    def changing_flags(self) -> dict[str, Any]:
        """The flags of resume (``deleted=``) and delete (``optional=``) handlers."""
        flags: dict[str, Any] = {}
        if "deleted" in self.allowed:
            flags["deleted"] = bool(self.get("deleted", bool))
        if "failed_only" in self.allowed:
            flags["failed_only"] = bool(self.get("failed_only", bool))
        if "optional" in self.allowed:
            flags["requires_finalizer"] = not self.get("optional", bool)
        if "on_failure" in self.allowed:
            flags["keeps_finalizer_on_failure"] = self._keeps_finalizer_on_failure()
        return flags

    def _keeps_finalizer_on_failure(self) -> bool:
        """``on_failure="keep"``: never "failed for good", so no retries= or timeout= limits it."""
        mode = self.get("on_failure", str) or "release"
        if mode not in ("release", "keep"):
            raise DeclarationValueError(
                f"{self.culprit}: on_failure= must be 'release' or 'keep', not {mode!r}."
            )
        if mode == "keep" and (self.options.get("retries") or self.options.get("timeout")):
            raise DeclarationValueError(
                f"{self.culprit}: on_failure='keep' retries until the handler succeeds: "
                f"retries= and timeout= would give up; pass on_failure='release' for them."
            )
        return mode == "keep"

    def operations(self) -> frozenset[str] | None:
        """The admission operations from ``operation=`` or ``operations=``."""
        single, many = self.get("operation", str), self.options.get("operations")
        if single is not None and many is not None:
            raise DeclarationTypeError(
                f"{self.culprit}: either operation= or operations=, not both."
            )
        if many is not None and (isinstance(many, str) or not isinstance(many, Collection)):
            raise DeclarationTypeError(
                f"{self.culprit}: operations= must be a collection: {many!r}."
            )
        chosen = frozenset([single] if single is not None else many or ())
        if chosen - OPERATIONS:
            unknown = sorted(map(repr, chosen - OPERATIONS))
            raise DeclarationValueError(
                f"{self.culprit}: unknown operations: {', '.join(unknown)}."
            )
        return chosen or None
