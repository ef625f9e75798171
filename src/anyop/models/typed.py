"""Handler kwargs of typed resources: ``body``, ``spec`` and ``status`` as model instances.

A handler declared for a :class:`~anyop.models.resources.CustomResource` class is wrapped once,
when it is decorated, by :func:`typed_function`: every call validates the body by the class and
passes the instances instead of Kopf's dict views. A body that does not validate raises a
:class:`~anyop.errors.PermanentError` naming each failing field's path and value, so the
handler is not retried, the failure is logged and posted as an Event, and the operator goes on.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import pydantic

from anyop.errors import PermanentError
from anyop.models.resources import CustomResource

__all__ = [
    "EventSink",
    "as_patch",
    "current_event_sink",
    "typed_conversion",
    "typed_function",
    "typed_kwargs",
    "validated",
    "validation_message",
]

VALUE_WIDTH = 80
"""How much of a refused value an error message shows."""


class EventSink(Protocol):
    """Where an Event about an object goes (the operator's Event poster)."""

    def __call__(self, obj: Mapping[str, Any], *, type: str, reason: str, message: str) -> None:
        """Queue the Event; never block, never raise."""


current_event_sink: contextvars.ContextVar[EventSink | None] = contextvars.ContextVar(
    "anyop.current_event_sink", default=None
)
"""The running operator's Event poster: an invalid body is reported on its object."""


def validated(cls: type[CustomResource], body: Mapping[str, Any]) -> CustomResource:
    """The body as an instance of ``cls``.

    Raises:
        PermanentError: The body does not validate; the message names the fields and values.
    """
    try:
        return cls.model_validate(_plain(body))
    except pydantic.ValidationError as e:
        raise PermanentError(validation_message(cls, e)) from None


def validation_message(cls: type[CustomResource], error: pydantic.ValidationError) -> str:
    """One line per failing field: ``spec.replicas=500: Input should be less than ...``."""
    problems = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"]) or "(root)"
        value = "(missing)" if item["type"] == "missing" else _shown(item["input"])
        problems.append(f"{path}={value}: {item['msg']}")
    return f"The {cls.__resource__.kind} does not validate: " + "; ".join(problems)


def typed_kwargs(
    cls: type[CustomResource] | None,
    kwargs: Mapping[str, Any],
    children: Mapping[str, type[CustomResource]] | None = None,
) -> dict[str, Any]:
    """``kwargs`` with ``body``, ``spec`` and ``status`` replaced by instances of ``cls``'s parts
    (unless ``cls`` is ``None``), and the ``children`` of typed owned resources by instances of
    their classes.

    Raises:
        PermanentError: The body (or a child) does not validate; also posted as an Event.
    """
    body = kwargs.get("body") or {}
    try:
        typed = _typed(cls, kwargs, children)
    except PermanentError as e:
        sink = current_event_sink.get()
        if sink is not None:
            sink(body, type="Warning", reason="Invalid", message=str(e))
        raise
    return {**kwargs, **typed}


def _typed(
    cls: type[CustomResource] | None,
    kwargs: Mapping[str, Any],
    children: Mapping[str, type[CustomResource]] | None,
) -> dict[str, Any]:
    typed: dict[str, Any] = {}
    if cls is not None:
        instance = validated(cls, kwargs.get("body") or {})
        typed["body"] = instance
        typed["spec"] = getattr(instance, "spec", None)
        typed["status"] = getattr(instance, "status", None)
    if children and isinstance(kwargs.get("children"), Mapping):
        typed["children"] = _typed_children(kwargs["children"], children)
    return typed


def _typed_children(
    found: Mapping[str, Any], classes: Mapping[str, type[CustomResource]]
) -> dict[str, Any]:
    return {
        name: [validated(classes[name], child) for child in items] if name in classes else items
        for name, items in found.items()
    }


def typed_function(
    fn: Callable[..., Any],
    cls: type[CustomResource] | None,
    children: Mapping[str, type[CustomResource]] | None = None,
) -> Callable[..., Any]:
    """``fn`` wrapped to get typed kwargs; async stays async, sync stays sync."""
    if _is_async(fn):

        @functools.wraps(fn)
        async def typed_async(**kwargs: Any) -> Any:
            return await fn(**typed_kwargs(cls, kwargs, children))

        return typed_async

    @functools.wraps(fn)
    def typed_sync(**kwargs: Any) -> Any:
        return fn(**typed_kwargs(cls, kwargs, children))

    return typed_sync


def typed_conversion(
    fn: Callable[..., Any], source: type[CustomResource], target: type[CustomResource]
) -> Callable[..., Any]:
    """A conversion function wrapped: it gets the object as ``source`` and returns a ``target``,
    whose ``spec`` and ``status`` (by wire names) become the converted object's.

    Raises:
        PermanentError: The object does not validate as ``source``, or the function returned
            another typed resource than ``target``.
    """

    def fields_of(returned: Any) -> Any:
        if not isinstance(returned, CustomResource):
            return returned
        if type(returned) is not target:  # a subclass is another version
            kind = type(returned).__qualname__
            raise PermanentError(f"The conversion returned a {kind}, not a {target.__qualname__}.")
        dumped = returned.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {key: dumped[key] for key in ("spec", "status") if key in dumped}

    if _is_async(fn):

        @functools.wraps(fn)
        async def converted_async(**kwargs: Any) -> Any:
            return fields_of(await fn(**typed_kwargs(source, kwargs)))

        return converted_async

    @functools.wraps(fn)
    def converted_sync(**kwargs: Any) -> Any:
        return fields_of(fn(**typed_kwargs(source, kwargs)))

    return converted_sync


def as_patch(value: Any) -> Any:
    """A value for a merge-patch: a model as the JSON of its fields that were set, by wire name.

    Only the fields given when the model was made are patched (``exclude_unset``): a patch of a
    partial model never resets the fields it does not mention to their defaults.
    """
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value  # the very object: callers keep writing into the mappings they set


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def _is_async(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    call = getattr(fn, "__call__", None)  # noqa: B004 (a callable object's async __call__)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _plain(value: Any) -> Any:
    """Kopf's views and other mappings as plain dicts and lists, for pydantic."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
