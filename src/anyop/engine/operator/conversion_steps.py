"""One object's conversion along its route of ``@on.convert`` functions.

:func:`conversion_of` is a generator: it yields each step (a function to call with its kwargs, on
a copy of the object) and takes what the function returned, so that the same code serves
:func:`convert`, which awaits each step in the caller's task (sync functions in threads), and
:func:`convert_all`, which calls sync functions one after another in the thread it runs in.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping, Sequence
from typing import Any

import anyio

from anyop.engine.invocation import invoke, use_context
from anyop.errors import PermanentError
from anyop.handlers.records import ConversionHandler
from anyop.logs import object_logger
from anyop.settings import OperatorSettings
from anyop.webhooks.conversion import ConversionFailure, converted_object, split_api_version
from anyop.webhooks.conversion_routes import Routes

__all__ = ["Conversion", "conversion_of", "convert", "convert_all"]

_ATTACHED = (("spec",), ("status",), ("metadata", "labels"), ("metadata", "annotations"))
"""The parts of the body given to the functions as kwargs of their own (added if absent)."""


Conversion = Generator["_Step", Any, dict[str, Any]]
"""One object's conversion: yields each step to call, takes its result, returns the object."""


def conversion_of(
    routes: Routes, original: Mapping[str, Any], *, desired: str, settings: OperatorSettings
) -> Conversion:
    """Convert one object along its route; the caller calls each step's function."""
    group, route = _route(routes, original, desired=desired)
    current = dict(original)
    for handler in route:
        step = _Step(handler, current, settings)
        returned = yield step
        current = step.converted(returned, api_version=f"{group}/{handler.to_version}")
    return converted_object(original, current, api_version=desired)


async def convert(steps: Conversion, limiter: anyio.CapacityLimiter | None) -> dict[str, Any]:
    """Run a conversion's steps in this task (sync functions in threads)."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await step.call(limiter))
    except StopIteration as stop:
        converted: dict[str, Any] = stop.value
        return converted


def convert_all(conversions: Sequence[Conversion]) -> list[dict[str, Any]]:
    """Run the conversions' sync steps one after another, in this thread."""
    converted = []
    for steps in conversions:
        try:
            step = next(steps)
            while True:
                step = steps.send(step.call_sync())
        except StopIteration as stop:
            converted.append(stop.value)
    return converted


def _route(
    routes: Routes, original: Mapping[str, Any], *, desired: str
) -> tuple[str, Sequence[ConversionHandler]]:
    """The group and the steps that convert the object to ``desired``.

    Raises:
        ConversionFailure: The object or the target is not of the resource, or a version is
            unknown.
    """
    group, target = split_api_version(desired)
    source_group, source = split_api_version(original.get("apiVersion"))
    if group != routes.group or source_group != routes.group:
        raise ConversionFailure(
            f"{routes.crd} converts within {routes.group}, not from {source_group} to {group}."
        )
    if original.get("kind") != routes.kind:
        raise ConversionFailure(
            f"{routes.crd} converts {routes.kind}, not {original.get('kind')!r}."
        )
    try:
        return group, routes.route(source, target)
    except KeyError:
        versions = ", ".join(routes.versions)
        raise ConversionFailure(
            f"{routes.crd} has no conversion from {source} to {target} (versions: {versions})."
        ) from None


class _Step:
    """One function called for one object: its kwargs (on a copy of the object), and what its
    result makes of the object."""

    def __init__(
        self, handler: ConversionHandler, current: Mapping[str, Any], settings: OperatorSettings
    ) -> None:
        self.handler = handler
        self.current = current
        self.body = copy.deepcopy(dict(current))
        self.absent = [path for path in _ATTACHED if _get(self.body, path) is None]
        self.kwargs = _kwargs(handler, self.body, settings)

    async def call(self, limiter: anyio.CapacityLimiter | None) -> Any:
        """Call the function (a sync one in a thread); return what it returned.

        Raises:
            ConversionFailure: It raised (logged; with the traceback unless permanent).
        """
        try:
            return await invoke(self.handler.fn, self.kwargs, limiter=limiter, body=self.body)
        except Exception as e:
            raise self._failure(e) from e

    def call_sync(self) -> Any:
        """Call the sync function in this thread (see :meth:`call`)."""
        try:
            with use_context(self.body):
                return self.handler.fn(**self.kwargs)
        except Exception as e:
            raise self._failure(e) from e

    def _failure(self, error: Exception) -> ConversionFailure:
        if isinstance(error, PermanentError):  # a refusal, as meant: no traceback
            self.kwargs["logger"].error(f"{self.handler} failed permanently: {error}")
        else:  # the user's traceback is worth seeing
            self.kwargs["logger"].exception(f"{self.handler} failed with an exception.")
        return ConversionFailure(f"{self.handler} failed: {str(error) or type(error).__name__}")

    def converted(self, returned: Any, *, api_version: str) -> dict[str, Any]:
        """The object after the step: the changed body, or the returned fields over it.

        Raises:
            ConversionFailure: The function returned something else than a mapping or ``None``,
                or changed metadata that must stay.
        """
        if returned is None:
            result = _without_empty(self.body, self.absent)
        elif isinstance(returned, Mapping):
            result = _merged(self.current, returned)
        else:
            raise ConversionFailure(
                f"{self.handler} returned {type(returned).__name__}; expected the converted "
                f"fields (a mapping), or None after changing the body in place."
            )
        try:
            return converted_object(self.current, result, api_version=api_version)
        except ConversionFailure as e:
            raise ConversionFailure(f"{self.handler}: {e}") from None


def _kwargs(
    handler: ConversionHandler, body: dict[str, Any], settings: OperatorSettings
) -> dict[str, Any]:
    metadata = body.setdefault("metadata", {})
    return {
        "body": body,
        "spec": body.setdefault("spec", {}),
        "status": body.setdefault("status", {}),
        "meta": metadata,
        "metadata": metadata,
        "labels": metadata.setdefault("labels", {}),
        "annotations": metadata.setdefault("annotations", {}),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "uid": metadata.get("uid"),
        "from_version": handler.from_version,
        "to_version": handler.to_version,
        "logger": object_logger(body),
        "param": handler.param,
        "settings": settings,
    }


def _get(body: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _without_empty(body: Mapping[str, Any], paths: Sequence[tuple[str, ...]]) -> dict[str, Any]:
    """The body without the parts that were absent before the call and are still empty."""
    result = dict(body)
    for path in paths:
        parent = result if len(path) == 1 else result.get(path[0])
        if isinstance(parent, dict) and parent.get(path[-1]) == {}:
            if len(path) > 1:
                parent = result[path[0]] = dict(parent)
            del parent[path[-1]]
    return result


def _merged(current: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """The object with the returned top-level fields (and the returned metadata's keys)."""
    merged = {**current, **result}
    before, after = current.get("metadata"), result.get("metadata")
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        merged["metadata"] = {**before, **after}
    return merged
