"""Filters: which objects a handler wants, checked at declaration and at every event.

All filters of a handler are AND-ed: ``labels=``, ``annotations=``, ``field=`` with ``value=``,
``old=``/``new=`` (update handlers only), and ``when=`` last. Values may be exact strings,
:data:`PRESENT`, :data:`ABSENT`, or callbacks ``fn(value, **kwargs) -> bool``; ``when=`` is
``fn(**kwargs) -> bool``. Kwargs are built lazily: once per check, only if a callback needs them.

Exact and presence label filters shared by all handlers of a resource can be sent to the API
server as a ``labelSelector`` (:func:`server_side_selector`), so unwanted objects are never listed.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from anyop.handlers.causes import ChangingCause, ResourceCause
from anyop.handlers.diffs import FieldPath, parse_field, resolve
from anyop.handlers.field_selectors import FieldSelector
from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError

__all__ = [
    "ABSENT",
    "PRESENT",
    "FilterToken",
    "Filtered",
    "KwargsFactory",
    "LabelSelector",
    "MetaFilter",
    "MetaFilterFn",
    "WhenFilterFn",
    "all_",
    "any_",
    "check_callback",
    "check_field_filters",
    "check_meta_filter",
    "match",
    "none_",
    "not_",
    "prematch",
    "server_side_selector",
]


class FilterToken(enum.Enum):
    """Markers for presence checks of labels, annotations and fields."""

    PRESENT = enum.auto()
    ABSENT = enum.auto()


PRESENT = FilterToken.PRESENT
"""The label, annotation or field must be there (with any value, even empty)."""

ABSENT = FilterToken.ABSENT
"""The label, annotation or field must not be there."""

MetaFilterFn = Callable[..., bool]
"""A value callback: ``fn(value, **kwargs) -> bool``; ``value`` is ``None`` when absent."""

WhenFilterFn = Callable[..., bool]
"""A whole-object callback: ``fn(**kwargs) -> bool``."""

MetaFilter = Mapping[str, str | FilterToken | MetaFilterFn]
"""A ``labels=`` or ``annotations=`` filter."""

KwargsFactory = Callable[[], Mapping[str, Any]]
"""Builds the handler's kwargs for callbacks; called at most once per check."""


class Filtered(Protocol):
    """What the filters need from a handler record."""

    @property
    def field_selector(self) -> FieldSelector | None: ...
    @property
    def labels(self) -> MetaFilter | None: ...
    @property
    def annotations(self) -> MetaFilter | None: ...
    @property
    def when(self) -> WhenFilterFn | None: ...
    @property
    def field(self) -> FieldPath | None: ...
    @property
    def value(self) -> Any: ...


def not_(fn: Callable[..., bool]) -> Callable[..., bool]:
    """A callback that passes when ``fn`` fails."""
    check_callback(fn, "anyop.not_()")

    def not_fn(*args: Any, **kwargs: Any) -> bool:
        return not fn(*args, **kwargs)

    return not_fn


def all_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """A callback that passes when all of ``fns`` pass (and when there are none)."""
    fns = _checked(fns, "anyop.all_()")

    def all_fn(*args: Any, **kwargs: Any) -> bool:
        return all(fn(*args, **kwargs) for fn in fns)

    return all_fn


def any_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """A callback that passes when at least one of ``fns`` passes."""
    fns = _checked(fns, "anyop.any_()")

    def any_fn(*args: Any, **kwargs: Any) -> bool:
        return any(fn(*args, **kwargs) for fn in fns)

    return any_fn


def none_(fns: Iterable[Callable[..., bool]]) -> Callable[..., bool]:
    """A callback that passes when none of ``fns`` passes."""
    fns = _checked(fns, "anyop.none_()")

    def none_fn(*args: Any, **kwargs: Any) -> bool:
        return not any(fn(*args, **kwargs) for fn in fns)

    return none_fn


def _checked(fns: Iterable[Callable[..., bool]], culprit: str) -> tuple[Callable[..., bool], ...]:
    if not isinstance(fns, Iterable) or callable(fns):
        raise DeclarationTypeError(f"{culprit} expects a list of callbacks, got {fns!r}.")
    materialized = tuple(fns)
    for fn in materialized:
        check_callback(fn, culprit)
    return materialized


def check_callback(fn: object, culprit: str) -> None:
    """Fail fast if ``fn`` is not callable or cannot accept arbitrary kwargs (``**kwargs``).

    Raises:
        DeclarationTypeError: Naming ``culprit`` and the function.
    """
    if not callable(fn):
        raise DeclarationTypeError(f"{culprit}: {fn!r} is not callable.")
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins and C callables: nothing to check
        return
    if not any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        name = getattr(fn, "__name__", None) or repr(fn)
        raise DeclarationTypeError(
            f"{culprit}: {name}() must accept **kwargs (e.g. `**_`) for forward compatibility."
        )


def check_meta_filter(what: str, value: object, culprit: str) -> MetaFilter | None:
    """Validate a ``labels=`` or ``annotations=`` filter at declaration.

    Args:
        what: ``"labels"`` or ``"annotations"``, for the message.
        value: The filter as given.
        culprit: Who declared it, for the message.

    Returns:
        A read-only copy of the filter, or ``None`` if none was given.

    Raises:
        DeclarationValueError: For ``None`` values (use :data:`PRESENT` / :data:`ABSENT`).
        DeclarationTypeError: For non-mapping filters, non-string keys, or other value types.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DeclarationTypeError(f"{culprit}: {what}= must be a mapping, not {value!r}.")
    for key, item in value.items():
        if not isinstance(key, str):
            raise DeclarationTypeError(f"{culprit}: {what}= keys must be strings: {key!r}.")
        if item is None:
            raise DeclarationValueError(
                f"{culprit}: `None` in {what}= is not supported; use anyop.PRESENT or anyop.ABSENT."
            )
        if callable(item):
            check_callback(item, culprit)
        elif not isinstance(item, str | FilterToken):
            raise DeclarationTypeError(
                f"{culprit}: {what}[{key!r}] must be a string, a marker, or a callback: {item!r}."
            )
    return dict(value)


def check_field_filters(
    field: object,
    filters: Mapping[str, object],
    culprit: str,
) -> FieldPath | None:
    """Validate ``field=`` with ``value=``/``old=``/``new=`` at declaration.

    Args:
        field: The ``field=`` as given.
        filters: The given ``value``, ``old`` and ``new`` filters (``None`` if not given).
        culprit: Who declared them, for the message.

    Returns:
        The parsed field path, or ``None`` if no field was given.

    Raises:
        DeclarationTypeError: For a malformed field, value filters without a field, or ``value=``
            together with ``old=``/``new=``.
    """
    try:
        path = parse_field(field)  # type: ignore[arg-type]
    except TypeError as e:
        raise DeclarationTypeError(f"{culprit}: {e}") from None
    given = {name for name, item in filters.items() if item is not None}
    if not path and given:
        names = "/".join(f"{name}=" for name in sorted(given))
        raise DeclarationTypeError(f"{culprit}: {names} filters need a field= to check.")
    if "value" in given and given & {"old", "new"}:
        raise DeclarationTypeError(f"{culprit}: either value= or old=/new= can be used, not both.")
    for item in filters.values():
        if callable(item):
            check_callback(item, culprit)
    return path or None


class _Kwargs:
    """Builds kwargs on the first need, and only once."""

    def __init__(self, factory: KwargsFactory) -> None:
        self._factory = factory
        self._kwargs: Mapping[str, Any] | None = None

    def get(self) -> Mapping[str, Any]:
        if self._kwargs is None:
            self._kwargs = self._factory()
        return self._kwargs


def match(handler: Filtered, cause: ResourceCause, kwargs_factory: KwargsFactory) -> bool:
    """Whether the handler wants this object now: all filters, incl. field changes and ``when=``.

    For update handlers (``@on.update``, ``@on.field``) the ``field=`` must have changed, and
    ``old=``/``new=`` are checked against the field's values before and after.
    """
    return _matches(handler, cause, _Kwargs(kwargs_factory), changes=True)


def prematch(handler: Filtered, cause: ResourceCause, kwargs_factory: KwargsFactory) -> bool:
    """Like :func:`match`, but without the field-change checks.

    Used to decide whether an object is in the operator's scope at all (e.g. for finalizers):
    a field that did not change in this event does not take the object out of scope.
    """
    return _matches(handler, cause, _Kwargs(kwargs_factory), changes=False)


def _matches(handler: Filtered, cause: ResourceCause, kwargs: _Kwargs, *, changes: bool) -> bool:
    return (
        (handler.field_selector is None or handler.field_selector.matches(cause.body))
        and (not handler.labels or _matches_meta(handler.labels, _stanza(cause, "labels"), kwargs))
        and (
            not handler.annotations
            or _matches_meta(handler.annotations, _stanza(cause, "annotations"), kwargs)
        )
        and _matches_field_value(handler, cause, kwargs)
        and (not changes or _matches_field_change(handler, cause, kwargs))
        and (handler.when is None or bool(handler.when(**kwargs.get())))  # the last, always
    )


def _stanza(cause: ResourceCause, name: str) -> Mapping[str, Any]:
    stanza = resolve(cause.body, ("metadata", name), None)
    return stanza if isinstance(stanza, Mapping) else {}


def _matches_meta(pattern: MetaFilter | None, content: Mapping[str, Any], kwargs: _Kwargs) -> bool:
    for key, expected in (pattern or {}).items():
        if expected is ABSENT:
            ok = key not in content
        elif expected is PRESENT:
            ok = key in content
        elif callable(expected):
            ok = bool(expected(content.get(key), **kwargs.get()))
        else:
            ok = key in content and content[key] == expected
        if not ok:
            return False
    return True


_ABSENT_VALUE: Any = object()


def _check_value(expected: Any, value: Any, kwargs: _Kwargs) -> bool:
    """One value against one filter; ``None`` as a filter means "present"."""
    if expected is None or expected is PRESENT:
        return value is not _ABSENT_VALUE
    if expected is ABSENT:
        return value is _ABSENT_VALUE
    if callable(expected):
        return bool(expected(None if value is _ABSENT_VALUE else value, **kwargs.get()))
    return value is not _ABSENT_VALUE and bool(expected == value)


def _matches_field_value(handler: Filtered, cause: ResourceCause, kwargs: _Kwargs) -> bool:
    if not handler.field:
        return True
    if isinstance(cause, ChangingCause):
        # Update handlers sit between two states: either side may satisfy the filter.
        values = [resolve(cause.new, handler.field, _ABSENT_VALUE)]
        values += [resolve(cause.old, handler.field, _ABSENT_VALUE)]
    else:
        values = [resolve(cause.body, handler.field, _ABSENT_VALUE)]
    return any(_check_value(handler.value, value, kwargs) for value in values)


def _matches_field_change(handler: Filtered, cause: ResourceCause, kwargs: _Kwargs) -> bool:
    if not handler.field or not isinstance(cause, ChangingCause):
        return True
    old = resolve(cause.old, handler.field, _ABSENT_VALUE)
    new = resolve(cause.new, handler.field, _ABSENT_VALUE)
    if getattr(handler, "field_needs_change", False) and old == new:
        return False
    old_filter, new_filter = getattr(handler, "old", None), getattr(handler, "new", None)
    return (old_filter is None or _check_value(old_filter, old, kwargs)) and (
        new_filter is None or _check_value(new_filter, new, kwargs)
    )


# https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
_LABEL_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}$")
_LABEL_VALUE = re.compile(rf"^{_LABEL_NAME}?$")


@dataclasses.dataclass(frozen=True)
class LabelSelector:
    """A label selector the API server can evaluate: ``k=v``, ``k`` (present), ``!k`` (absent).

    Attributes:
        equal: Labels that must have these exact values.
        present: Labels that must exist.
        absent: Labels that must not exist.
    """

    equal: frozenset[tuple[str, str]] = frozenset()
    present: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()

    def __str__(self) -> str:
        terms = [f"{key}={value}" for key, value in self.equal]
        terms += list(self.present) + [f"!{key}" for key in self.absent]
        return ",".join(sorted(terms, key=lambda term: (term.lstrip("!").split("=")[0], term)))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with these labels is selected (e.g. to tell a deletion from an
        object that merely left the selection: a watch reports both as ``DELETED``)."""
        return (
            all(labels.get(key) == value for key, value in self.equal)
            and all(key in labels for key in self.present)
            and not any(key in labels for key in self.absent)
        )


def _requirements(labels: MetaFilter | None) -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for key, expected in (labels or {}).items():
        if not _LABEL_KEY.match(key):
            continue
        if isinstance(expected, str) and _LABEL_VALUE.match(expected):
            found |= {("=", key, expected), ("exists", key, "")}
        elif expected is PRESENT:
            found.add(("exists", key, ""))
        elif expected is ABSENT:
            found.add(("!", key, ""))
    return found


def server_side_selector(handlers: Iterable[Filtered]) -> LabelSelector | None:
    """The label selector that all these handlers' label filters imply, if any.

    Only requirements shared by every handler can be sent (a selector is an AND of terms, and an
    object that any handler wants must still be listed). Callbacks cannot be sent.

    Args:
        handlers: All handlers that consume the watch of one resource.

    Returns:
        The selector, or ``None`` if there are no handlers or they share no server-side term.
    """
    shared: set[tuple[str, str, str]] | None = None
    for handler in handlers:
        found = _requirements(handler.labels)
        shared = found if shared is None else shared & found
    if not shared:
        return None
    equal = frozenset((key, value) for op, key, value in shared if op == "=")
    exact = {key for key, _ in equal}
    present = frozenset(key for op, key, _ in shared if op == "exists" and key not in exact)
    absent = frozenset(key for op, key, _ in shared if op == "!")
    return LabelSelector(equal, present, absent)
