"""Liveness and readiness endpoints: ``/healthz`` and ``/readyz`` on Hypercorn.

They expose nothing but health, over plain HTTP (for the kubelet). The metrics are served on
an address of their own, securely by default (:mod:`.metrics_server`).

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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from anyop.engine.invocation import invoke
from anyop.engine.operator.activities import activity_kwargs
from anyop.engine.resource.serve_resource import Watched
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import OperatorIndexes
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.watchstate import WatchState
from anyop.servers import BoundAddress, Receive, Scope, Send, lifespan_ready, serve_asgi
from anyop.settings import OperatorSettings

__all__ = [
    "PROBE_CACHE",
    "Health",
    "current_health",
    "probes_app",
    "respond",
    "respond_bytes",
    "serve_probes",
    "watch_problem",
]

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
        watchers: The served resources, by a readable key (each a
            :class:`~anyop.engine.resource.serve_resource.Watched`).
        indexes: The operator's indexes, shared with :func:`serve` (probe kwargs by name; empty
            while the startup handlers run, as in Kopf).
    """

    def __init__(
        self,
        registry: OperatorRegistry,
        settings: OperatorSettings,
        *,
        memo: Any,
        indexes: OperatorIndexes | None = None,
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.memo = memo
        self.indexes = indexes
        self.ready = False
        self.watchers: dict[str, Watched] = {}
        self.shard: Any = None
        """This replica's shard (an :class:`~anyop.engine.coordination.shards.Shard`), when the
        operator is sharded."""
        self.limiter: anyio.CapacityLimiter | None = None
        """The threads of sync handler calls (``settings.execution.max_workers``), once the
        operator serves."""
        self._cache: tuple[float, int, dict[str, Any]] | None = None
        self._lock = anyio.Lock()

    @contextlib.contextmanager
    def watching(self, key: str, watcher: Watched) -> Iterator[None]:
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
            kwargs = activity_kwargs(
                self.settings, self.memo, Activity.PROBE, param=handler.param, indexes=self.indexes
            )
            try:
                results[handler.id] = await invoke(handler.fn, kwargs)
            except Exception as error:
                logger.exception(f"{handler} failed.")
                results[handler.id] = {"error": f"{type(error).__name__}: {error}"}
                code = 500
        return code, results


def _address(endpoint: str) -> tuple[str, int, str]:
    url = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if url.scheme != "http" or url.port is None:
        raise ValueError(f"An endpoint must be http://HOST:PORT[/path]: {endpoint!r}")
    return url.hostname or "0.0.0.0", url.port, url.path


def probes_app(health: Health, *, liveness_path: str = "/healthz") -> Any:
    """The ASGI app of the probe endpoints: the liveness path and ``/readyz``, nothing else."""

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
        await respond(send, code, document)

    return app


async def respond(send: Send, code: int, document: Mapping[str, Any]) -> None:
    """Answer an HTTP request with a JSON document."""
    body = json.dumps(document, default=repr).encode()
    await respond_bytes(send, code, body=body, content_type="application/json")


async def respond_bytes(
    send: Send,
    code: int,
    *,
    body: bytes,
    content_type: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer an HTTP request with a body of bytes (and more headers, if given)."""
    fields = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": code, "headers": fields})
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
    host, port, path = _address(endpoint)
    app = probes_app(health, liveness_path=path or "/healthz")
    await serve_asgi(app, host=host, port=port, task_status=task_status)
