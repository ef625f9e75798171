"""Conversion: answering ConversionReviews with the ``@on.convert`` functions, on the server.

:func:`plan_conversions` runs at startup, before the server: it finds each function's custom
resource, reads the resource's versions (from its CRD when the conversions are managed, from
discovery otherwise), and works out the routes between every pair of them
(:mod:`anyop.webhooks.conversion_routes`), refusing a set that leaves a pair unconnected.

:class:`Converter` answers the reviews at ``{root}/convert/{crd}``: every object converted along
its route, one step after another (``engine/operator/conversion_steps.py``; sync functions in a
worker thread), or the whole review ``Failed`` with the message of the first error.
:class:`WebhookRouter` is the server's :class:`~anyop.webhooks.review.WebhookFn` when there are
conversions: it sends those paths to the converter and the rest to the admission reviewer.
:func:`configure_conversions` writes the CRDs' ``spec.conversion`` with each client config the
server yields (only when asked).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Collection, Mapping
from typing import Any

import anyio

from anyop.engine.executor import run_sync
from anyop.engine.invocation import is_async
from anyop.engine.operator.conversion_steps import conversion_of, convert, convert_all
from anyop.errors import ConfigError, NotFoundError
from anyop.handlers.records import ConversionHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings
from anyop.webhooks.conversion import (
    ConversionFailure,
    build_conversion_response,
    parse_conversion,
)
from anyop.webhooks.conversion_managed import (
    CONVERSION_PREFIX,
    apply_conversion,
    build_conversion,
    crd_versions,
    read_crd,
)
from anyop.webhooks.conversion_routes import Routes, plan_routes
from anyop.webhooks.review import Headers, ReviewError, SSLPeer, WebhookFn

__all__ = [
    "Converter",
    "WebhookRouter",
    "configure_conversions",
    "find_conversions",
    "plan_conversions",
    "served_versions",
]

logger = logging.getLogger("anyop.webhooks")


class Converter:
    """Answers ConversionReviews of the custom resources that have conversion functions.

    A review whose functions are all sync is converted in one worker thread, object after
    object: a thread hop per object and step would cost more than most conversions.

    Args:
        routes: The routes of each resource, by the name of its CRD.
        settings: Passed to the functions.
        limiter: Bounds how many sync conversions run in threads at once.
    """

    def __init__(
        self,
        routes: Mapping[str, Routes],
        settings: OperatorSettings,
        *,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.routes = routes
        self.settings = settings
        self.limiter = limiter
        self._sync = {
            crd: not any(is_async(h.fn) for route in plan.routes.values() for h in route)
            for crd, plan in routes.items()
        }

    async def __call__(self, payload: Any, *, crd: str) -> dict[str, Any]:
        """Convert every object of one review; a failure fails the whole review.

        Raises:
            ReviewError: The payload is not a usable ConversionReview (400), or the CRD has no
                conversion functions here (404).
        """
        request = parse_conversion(payload)
        routes = self.routes.get(crd)
        if routes is None:
            known = ", ".join(sorted(self.routes)) or "none"
            raise ReviewError(f"No conversions for {crd!r} here (served: {known}).", 404)
        conversions = [
            conversion_of(routes, item, desired=request.desired_api_version, settings=self.settings)
            for item in request.objects
        ]
        try:
            if self._sync[crd]:
                in_thread = functools.partial(convert_all, conversions)
                converted = await run_sync(in_thread, limiter=self.limiter)
            else:
                converted = [await convert(item, self.limiter) for item in conversions]
        except ConversionFailure as e:
            logger.warning("A conversion of %s failed: %s", crd, e)
            return build_conversion_response(request, failure=str(e))
        return build_conversion_response(request, converted=converted)


class WebhookRouter:
    """The server's :class:`~anyop.webhooks.review.WebhookFn` when there are conversions:
    ``convert/<crd>`` goes to the converter, every other path to the admission reviewer."""

    def __init__(self, reviewer: WebhookFn, converter: Converter) -> None:
        self.reviewer = reviewer
        self.converter = converter

    async def __call__(
        self,
        request: Any,
        *,
        webhook: str | None = None,
        headers: Headers | None = None,
        sslpeer: SSLPeer | None = None,
    ) -> dict[str, Any]:
        """Answer one review (see :class:`~anyop.webhooks.review.WebhookFn`)."""
        prefix, _, crd = (webhook or "").partition("/")
        if prefix == CONVERSION_PREFIX:
            if not crd:
                raise ReviewError(f"Conversions are served at {CONVERSION_PREFIX}/<crd>.", 404)
            return await self.converter(request, crd=crd)
        return await self.reviewer(request, webhook=webhook, headers=headers, sslpeer=sslpeer)


async def plan_conversions(
    client: KubeClient,
    registry: OperatorRegistry,
    settings: OperatorSettings,
    *,
    resources: Collection[Resource],
) -> dict[str, Routes]:
    """The routes of every custom resource with conversion functions, by its CRD's name.

    Raises:
        ConfigError: A function's resource is not found, is ambiguous or is not a custom one,
            its CRD is missing (managed conversions), an admission handler's id takes the
            conversions' path, or the functions leave a pair of versions unconnected.
    """
    plans = {}
    for crd, (resource, handlers) in find_conversions(registry, resources).items():
        if settings.admission.managed_conversion:
            versions = await _crd_versions(client, crd)
        else:
            versions = tuple(served_versions(resource, resources))
        plans[crd] = plan_routes(
            crd, group=resource.group, kind=str(resource.kind), versions=versions, steps=handlers
        )
    return plans


def find_conversions(
    registry: OperatorRegistry, resources: Collection[Resource]
) -> dict[str, tuple[Resource, list[ConversionHandler]]]:
    """The conversion functions of each custom resource, by the name of its CRD. Pure.

    Raises:
        ConfigError: A function's resource is not found, is ambiguous or is not a custom one;
            or an admission handler's id takes the conversions' path.
    """
    clashing = [h for h in registry.webhooks.admission if _takes_conversion_path(h.id)]
    if clashing:
        raise ConfigError(
            f"{clashing[0]}: ids starting with {CONVERSION_PREFIX!r} are reserved for the "
            "conversion webhooks' paths; give the admission handler another id=."
        )
    found: dict[str, tuple[Resource, list[ConversionHandler]]] = {}
    for handler in registry.webhooks.conversions:
        resource = _resource_of(handler, resources)
        crd = f"{resource.plural}.{resource.group}"
        found.setdefault(crd, (resource, []))[1].append(handler)
    return found


def served_versions(resource: Resource, resources: Collection[Resource]) -> list[str]:
    """The versions in which discovery found the resource (the served ones). Pure."""
    same = (resource.group, resource.plural)
    return [r.version for r in resources if (r.group, r.plural) == same]


def _takes_conversion_path(handler_id: str) -> bool:
    return handler_id == CONVERSION_PREFIX or handler_id.startswith(CONVERSION_PREFIX + "/")


def _resource_of(handler: ConversionHandler, resources: Collection[Resource]) -> Resource:
    """The one custom resource the handler's selector names (in any of its versions)."""
    assert handler.selector is not None  # on.convert always gives one
    matches = {
        (r.group, r.plural): r
        for r in resources
        if handler.selector.check(dataclasses.replace(r, preferred=True))
    }
    if len(matches) != 1:
        found = ", ".join(sorted(f"{plural}.{group}" for group, plural in matches)) or "none"
        raise ConfigError(
            f"{handler} must name exactly one custom resource; {handler.selector!r} matches: "
            f"{found}."
        )
    resource = next(iter(matches.values()))
    if not resource.group or "." not in resource.group or resource.kind is None:
        raise ConfigError(f"{handler}: {resource} is not a custom resource; it has no CRD.")
    return resource


async def _crd_versions(client: KubeClient, crd: str) -> tuple[str, ...]:
    try:
        return crd_versions(await read_crd(client, crd))
    except NotFoundError:
        raise ConfigError(f"The CustomResourceDefinition {crd} does not exist.") from None


async def configure_conversions(
    client: KubeClient, plans: Mapping[str, Routes], config: Mapping[str, Any]
) -> None:
    """Point every CRD with conversion functions to the server (its ``spec.conversion``).

    Raises:
        ApiError: The API server refused (e.g. 403 without the RBAC permission to patch CRDs).
    """
    for crd in plans:
        await apply_conversion(client, crd, build_conversion(config, crd))
        logger.info("The conversion webhook of %s is applied.", crd)
