"""Admission: running validating and mutating handlers for reviews, and the webhook server
(which also serves the conversions of ``engine/operator/conversion_reviews.py``).

:class:`Reviewer` is the framework's :class:`~anyop.webhooks.review.WebhookFn`: it parses a
review, selects the handlers (by resource, kind, operation, subresource, filters, and the handler
id from the URL), runs them one after another (sync ones in threads), and answers: denied with
the most important error, or allowed with the warnings and, for mutations, a JSON patch built
from the ``patch`` kwarg (its merge part and its fns).

:func:`open_admission` runs the configured server (``settings.admission.server``) in the
operator's task group before any watch starts, keeps the managed webhook configurations up to
date with what the server advertises (and the CRDs' conversions, if asked), and removes the
non-persistent webhooks at exit.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectSendStream

from anyop.engine.cycle.handler_calls import common_kwargs, utcnow
from anyop.engine.cycle.object_memories import Memories
from anyop.engine.indexer import Indexer
from anyop.engine.invocation import invoke
from anyop.engine.operator.conversion_reviews import (
    Converter,
    WebhookRouter,
    configure_conversions,
    plan_conversions,
)
from anyop.errors import AdmissionError, ConfigError, PermanentError
from anyop.handlers.causes import WebhookCause, WebhookType
from anyop.handlers.diffs import diff
from anyop.handlers.records import ResourceWebhookHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient
from anyop.kube.discovery import discover
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.logs import object_logger
from anyop.settings import OperatorSettings
from anyop.webhooks.auto import current_api_server
from anyop.webhooks.managed import WebhookClientConfig, apply_configuration, build_webhooks
from anyop.webhooks.review import (
    AdmissionRequest,
    Headers,
    RequestHeaders,
    ReviewError,
    SSLPeer,
    WebhookFn,
    build_response,
    error_status,
    parse_review,
)

__all__ = ["ANSWER_MARGIN", "Reviewer", "open_admission"]

logger = logging.getLogger("anyop.webhooks")

ANSWER_MARGIN = 1.0
"""Seconds before a handler's ``timeout=`` when the server answers without it (per its policy)."""

CLEANUP_TIMEOUT = 10.0
"""Seconds to remove the non-persistent webhooks at exit."""


class Reviewer:
    """Answers admission reviews by running the matching handlers.

    Args:
        registry: Where the admission handlers are.
        settings: Passed to the handlers.
        resources: The cluster's resources, to recognise the reviewed one.
        new_memo: Makes the ``memo`` of a request about an object the operator does not know
            (a creation, or no ``memories``): each request gets its own.
        memories: The objects' memories: a request about an existing object gets its memo, the
            one its resource handlers fill.
        indexer: The operator's indexes, passed to the handlers as kwargs.
        limiter: Bounds how many sync handlers run in threads at once.
    """

    def __init__(
        self,
        registry: OperatorRegistry,
        settings: OperatorSettings,
        resources: Collection[Resource],
        *,
        new_memo: Callable[[], Any],
        memories: Memories | None = None,
        indexer: Indexer | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.resources = {r: r for r in resources}  # found by (group, version, plural)
        self.new_memo = new_memo
        self.memories = memories
        self.indexer = indexer
        self.limiter = limiter

    async def __call__(
        self,
        request: Any,
        *,
        webhook: str | None = None,
        headers: Headers | None = None,
        sslpeer: SSLPeer | None = None,
        reason: WebhookType | None = None,
    ) -> dict[str, Any]:
        """Run the handlers for one review and return the response review.

        Raises:
            ReviewError: The review is malformed (400), or its resource or the webhook id is
                unknown (404).
        """
        parsed = parse_review(request)
        cause = self._cause(parsed, webhook, reason)
        base = self._kwargs(cause, parsed, headers=headers, sslpeer=sslpeer)
        handlers = self.registry.webhooks.select_admission(cause, lambda: base)
        errors: list[BaseException] = []
        for handler in handlers:
            error = await self._run(handler, base, parsed)
            if error is not None:
                errors.append(error)
        patch: Patch = base["patch"]
        mutated = any(h.reason == WebhookType.MUTATING for h in handlers)
        ops = patch.as_json_patch(parsed.new) if mutated and patch and parsed.new else []
        return build_response(
            parsed, warnings=base["warnings"], denial=error_status(errors), patch=ops
        )

    def _cause(
        self, request: AdmissionRequest, webhook: str | None, reason: WebhookType | None
    ) -> WebhookCause:
        key = Resource(request.group, request.version, request.plural)
        resource = self.resources.get(key)
        if resource is None:
            raise ReviewError(f"The resource {key} is not served by this operator.", 404)
        if webhook is not None and all(h.id != webhook for h in self.registry.webhooks.admission):
            raise ReviewError(f"No admission handler has the id {webhook!r}.", 404)
        return WebhookCause(
            resource=resource,
            body=request.body,
            reason=reason,
            webhook=webhook,
            operation=request.operation,
            subresource=request.subresource,
            dryrun=request.dryrun,
            old=request.old,
            new=request.new,
            diff=diff(request.old, request.new),
        )

    def _kwargs(
        self,
        cause: WebhookCause,
        request: AdmissionRequest,
        *,
        headers: Headers | None,
        sslpeer: SSLPeer | None,
    ) -> dict[str, Any]:
        warnings: list[str] = []
        admission = {
            "warnings": warnings,
            "userinfo": request.userinfo,
            "headers": RequestHeaders(headers),
            "sslpeer": dict(sslpeer or {}),  # empty without a client certificate, as in Kopf
            "reason": cause.reason,
        }
        kwargs = common_kwargs(
            {**cause.kwargs, **admission},
            logger=object_logger(cause.body),
            memo=self._memo(cause.body),
            patch=Patch(),
            settings=self.settings,
            indexer=self.indexer,
        )
        kwargs["started"] = utcnow()
        return kwargs

    def _memo(self, body: Mapping[str, Any]) -> Any:
        """The object's own memo, if the operator knows it; a memo of this request's otherwise."""
        uid = (body.get("metadata") or {}).get("uid")
        if self.memories is None or not uid:
            return self.new_memo()
        return self.memories.memo_of(str(uid))

    async def _run(
        self, handler: ResourceWebhookHandler, base: Mapping[str, Any], request: AdmissionRequest
    ) -> BaseException | None:
        """Run one handler; return its error (a too slow handler gets one), or ``None``."""
        kwargs = {**base, "param": handler.param, "reason": handler.reason}
        deadline = _answer_deadline(handler)
        with anyio.move_on_after(deadline) as timer:
            try:
                await invoke(handler.fn, kwargs, limiter=self.limiter, body=request.body)
            except AdmissionError as error:  # a denial, as meant: normal operation
                kwargs["logger"].info(f"{handler} denied: {error}")
                return error
            except PermanentError as error:
                kwargs["logger"].error(f"{handler} failed permanently: {error}")
                return error
            except Exception as error:  # every error denies; the user's traceback is logged
                kwargs["logger"].exception(f"{handler} failed with an exception.")
                return error
        if timer.cancelled_caught:
            return self._too_slow(handler, kwargs, deadline)
        kwargs["logger"].debug(f"{handler} succeeded.")
        return None

    def _too_slow(
        self, handler: ResourceWebhookHandler, kwargs: Mapping[str, Any], deadline: float
    ) -> BaseException | None:
        message = f"{handler} did not finish within {deadline:g}s."
        kwargs["logger"].error(message)
        if handler.ignore_failures:
            kwargs["warnings"].append(f"{message} Ignored (ignore_failures=True).")
            return None
        return TimeoutError(message)


def _answer_deadline(handler: ResourceWebhookHandler) -> float:
    """When to answer without the handler: a margin before the API server gives up on us."""
    if handler.timeout is None:
        return math.inf
    return max(handler.timeout - ANSWER_MARGIN, handler.timeout / 2)


@contextlib.asynccontextmanager
async def open_admission(
    client: KubeClient,
    registry: OperatorRegistry,
    settings: OperatorSettings,
    *,
    new_memo: Callable[[], Any],
    memories: Memories | None = None,
    indexer: Indexer | None = None,
    limiter: anyio.CapacityLimiter | None = None,
) -> AsyncIterator[None]:
    """Serve the admission and conversion webhooks (if there are any) while the block runs.

    Raises:
        ConfigError: Admission handlers or conversion functions exist, but
            ``settings.admission.server`` is not set; or the conversions cannot serve their
            resources (see :func:`~anyop.engine.operator.conversion_reviews.plan_conversions`).
    """
    if not registry.webhooks.handlers:
        yield
        return
    if settings.admission.server is None:
        raise ConfigError(
            "There are admission handlers (@on.validate/@on.mutate) or conversions "
            "(@on.convert), but no webhook server: set settings.admission.server (e.g. to "
            "anyop.WebhookServer()) in a startup handler."
        )
    resources = await discover(client)
    plans = await plan_conversions(client, registry, settings, resources=resources)
    reviewer = Reviewer(
        registry,
        settings,
        resources,
        new_memo=new_memo,
        memories=memories,
        indexer=indexer,
        limiter=limiter,
    )
    converter = Converter(plans, settings, limiter=limiter) if plans else None
    async with anyio.create_task_group() as tg:
        await tg.start(
            functools.partial(_serve_webhooks, client, reviewer, resources, converter=converter)
        )
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def _serve_webhooks(
    client: KubeClient,
    reviewer: Reviewer,
    resources: Sequence[Resource],
    *,
    converter: Converter | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the server; apply every client config it yields to the managed configurations
    (and to the CRDs' conversions, if asked)."""
    settings, registry = reviewer.settings, reviewer.registry
    managed = settings.admission.managed
    fn: WebhookFn = reviewer if converter is None else WebhookRouter(reviewer, converter)
    conversions = converter.routes if converter and settings.admission.managed_conversion else {}
    send, receive = anyio.create_memory_object_stream[WebhookClientConfig](math.inf)
    latest: WebhookClientConfig | None = None
    _, info = await client.sessions.vault.current()
    current_api_server.set(info.server)  # for the servers that guess the cluster (auto-server)
    async with receive, contextlib.AsyncExitStack() as stack, anyio.create_task_group() as tg:
        server = settings.admission.server
        if hasattr(server, "__aenter__"):
            server = await stack.enter_async_context(server)
        # The server outlives the operator's cancellation until its webhooks are deregistered:
        # requests arriving meanwhile are still answered.
        serving = anyio.CancelScope(shield=True)
        tg.start_soon(functools.partial(_pump, server, fn, send, scope=serving))
        failing = False
        try:
            async for config in receive:
                latest = config
                if managed:
                    await _configure(client, registry, resources, config=config, managed=managed)
                await configure_conversions(client, conversions, config)
                task_status.started()  # ready once the first config is applied
                task_status = anyio.TASK_STATUS_IGNORED
        except Exception:
            failing = True
            raise
        finally:
            try:
                if managed and latest is not None:
                    with anyio.move_on_after(CLEANUP_TIMEOUT, shield=True):
                        await _clean_up(client, registry, resources, latest, managed, failing)
            finally:
                serving.cancel()


async def _clean_up(
    client: KubeClient,
    registry: OperatorRegistry,
    resources: Sequence[Resource],
    config: WebhookClientConfig,
    managed: str,
    failing: bool,
) -> None:
    """Leave only the persistent webhooks. When the operator stops for an error (often the very
    refusal that the clean-up meets again: a 403 without RBAC for the configurations), a
    failing clean-up is logged and that first error is the one reported."""
    try:
        await _configure(client, registry, resources, config=config, managed=managed, exiting=True)
    except Exception as exc:
        if not failing:
            raise
        logger.warning("The webhook configuration %r was not cleaned up: %s", managed, exc)


async def _pump(
    server: Any,
    fn: WebhookFn,
    send: MemoryObjectSendStream[WebhookClientConfig],
    *,
    scope: anyio.CancelScope,
) -> None:
    """Iterate the server's configs in one task; the server's own task group lives in here."""
    with scope:
        configs = server(fn)
        closable = hasattr(configs, "aclose")  # Kopf allows any async iterator
        closing = contextlib.aclosing(configs) if closable else contextlib.nullcontext()
        async with send, closing:
            async for config in configs:
                send.send_nowait(config)  # never awaits: cancellation lands inside the server
        raise ConfigError(
            "The webhook server or tunnel exited; the operator cannot serve webhooks."
        )


async def _configure(
    client: KubeClient,
    registry: OperatorRegistry,
    resources: Sequence[Resource],
    *,
    config: WebhookClientConfig,
    managed: str,
    exiting: bool = False,
) -> None:
    """Write both managed configurations (at exit: only the persistent webhooks stay)."""
    for reason in (WebhookType.VALIDATING, WebhookType.MUTATING):
        webhooks = build_webhooks(
            registry.webhooks.admission,
            resources,
            config,
            managed=managed,
            reason=reason,
            persistent_only=exiting,
        )
        await apply_configuration(client, reason, name=managed, webhooks=webhooks)
        logger.info(
            "%s webhook configuration %r %s: %d webhooks.",
            reason.capitalize(),
            managed,
            "cleaned up" if exiting else "applied",
            len(webhooks),
        )
