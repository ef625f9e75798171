"""Liveness and readiness endpoints: ``/healthz`` and ``/readyz`` on Hypercorn.

``/healthz`` runs the ``@anyop.on.probe`` handlers (their results are cached for
:data:`PROBE_CACHE` seconds, as in Kopf) and answers their results as JSON; it answers 500 while a
probe fails or a watch-stream is failing and has seen nothing for longer than its inactivity
timeout (a stalled or unreachable API server). ``/readyz`` answers 200 once the startup handlers
have succeeded and every watched resource has been listed.

The watchers register themselves in the :class:`Health` of the running operator (a context
variable), so the engine needs no reference to the server.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import anyio.abc

from anyop.engine.activities import activity_kwargs
from anyop.engine.invocation import invoke
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import Index, OperatorIndexes
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watchstate import WatchState
from anyop.servers import BoundAddress, Receive, Scope, Send, lifespan_ready, serve_asgi
from anyop.settings import OperatorSettings

__all__ = ["PROBE_CACHE", "Health", "current_health", "serve_probes", "watch_problem"]

logger = logging.getLogger("anyop.engine")

PROBE_CACHE = 10.0
"""Seconds the probe handlers' results are reused by ``/healthz``."""

current_health: contextvars.ContextVar[Health | None] = contextvars.ContextVar(
    "anyop.current_health", default=None
)


def watch_problem(state: WatchState, *, now: float, stall_after: float | None) -> str | None:
    """Why a watch-stream makes the operator unhealthy, if it does. Pure.

    A watch is unhealthy when it is failing (its last attempts failed, and no watch response is
    open now) and has received nothing for longer than ``stall_after`` seconds (its inactivity
    timeout); a single failure that is retried at once never fails the probe, and a quiet watch
    that reconnects is healthy.
    """
    if not state.failures or state.streaming:
        return None
    silent = now - state.last_event_time if state.last_event_time is not None else None
    if stall_after is not None and silent is not None and silent <= stall_after:
        return None
    since = f"nothing received for {silent:.0f} s" if silent is not None else "never listed"
    return f"failing {state.failures} times, {since}: {state.last_error}"


class Health:
    """What the probes report about one running operator.

    Attributes:
        ready: The startup handlers have succeeded and every resource has been listed.
        watchers: The live watchers, by a readable key (resource and namespace).
        indexes: The ``@anyop.index`` indexes as probe kwargs: empty until :func:`serve`
            installs its own (probes answer during the startup, as in Kopf).
    """

    def __init__(self, registry: OperatorRegistry, settings: OperatorSettings, memo: Any) -> None:
        self.registry = registry
        self.settings = settings
        self.memo = memo
        self.ready = False
        self.watchers: dict[str, Any] = {}
        names = [handler.id for handler in registry.indexing.handlers]
        self.indexes: Callable[[], Mapping[str, Index]] = OperatorIndexes(names).kwargs
        self._cache: tuple[float, int, dict[str, Any]] | None = None
        self._lock = anyio.Lock()

    @contextlib.contextmanager
    def watching(self, key: str, watcher: Any) -> Iterator[None]:
        """Report ``watcher.state`` while the block runs."""
        self.watchers[key] = watcher
        try:
            yield
        finally:
            if self.watchers.get(key) is watcher:
                del self.watchers[key]

    def problems(self) -> dict[str, str]:
        """The failing watches and why."""
        now = anyio.current_time()
        stall_after = self.settings.watching.inactivity_timeout
        found = {}
        for key, watcher in self.watchers.items():
            if problem := watch_problem(watcher.state, now=now, stall_after=stall_after):
                found[key] = problem
        return found

    async def liveness(self) -> tuple[int, dict[str, Any]]:
        """The status code and JSON of ``/healthz``."""
        async with self._lock:  # concurrent scrapes share one run of the probes
            now = anyio.current_time()
            if self._cache is None or now - self._cache[0] >= PROBE_CACHE:
                code, results = await self._probe()
                self._cache = (now, code, results)
            _, code, results = self._cache
        problems = self.problems()
        if problems:
            return 500, {**results, "anyop": {"watches": problems}}
        return code, results

    async def _probe(self) -> tuple[int, dict[str, Any]]:
        results: dict[str, Any] = {}
        code = 200
        for handler in self.registry.activities.select(Activity.PROBE):
            kwargs = activity_kwargs(self.settings, self.memo, Activity.PROBE, param=handler.param)
            kwargs.update(self.indexes())  # index names win over the framework's, as in Kopf
            try:
                results[handler.id] = await invoke(handler.fn, kwargs)
            except Exception as error:
                logger.exception(f"{handler} failed.")
                results[handler.id] = {"error": f"{type(error).__name__}: {error}"}
                code = 500
        return code, results


def _address(endpoint: str) -> tuple[str, int]:
    url = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if url.scheme != "http" or url.port is None:
        raise ValueError(f"The liveness endpoint must be http://HOST:PORT[/path]: {endpoint!r}")
    return url.hostname or "0.0.0.0", url.port


def probes_app(health: Health, *, liveness_path: str = "/healthz") -> Any:
    """The ASGI app of the probe endpoints."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan_ready(receive, send)
            return
        path = scope.get("path", "")
        if path == liveness_path:
            code, document = await health.liveness()
        elif path == "/readyz":
            code, document = (200, {"ready": True}) if health.ready else (503, {"ready": False})
        else:
            code, document = 404, {"error": f"no such endpoint: {path}"}
        await _respond(send, code, document)

    return app


async def _respond(send: Send, code: int, document: Mapping[str, Any]) -> None:
    body = json.dumps(document, default=repr).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_probes(
    health: Health,
    endpoint: str,
    *,
    task_status: anyio.abc.TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``/healthz`` (or the endpoint's path) and ``/readyz`` until cancelled.

    Args:
        health: What to report.
        endpoint: E.g. ``http://0.0.0.0:8080/healthz`` (port 0 picks a free one).
        task_status: Receives the bound address once listening.
    """
    host, port = _address(endpoint)
    path = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}").path
    app = probes_app(health, liveness_path=path or "/healthz")
    await serve_asgi(app, host=host, port=port, task_status=task_status)
