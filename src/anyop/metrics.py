"""The operator's Prometheus metrics (prometheus-client), named as controller-runtime names them.

Existing dashboards for Go operators keep working: handling cycles are
``controller_runtime_reconcile_total{controller,result}``,
``controller_runtime_reconcile_errors_total`` and ``controller_runtime_reconcile_time_seconds``;
the work queue is ``workqueue_depth{name}`` and ``workqueue_retries_total{name}``; API requests
are ``rest_client_requests_total{code,method}`` and ``rest_client_request_duration_seconds{verb}``.
What controller-runtime has no name for is ``anyop_...``: handler runs by handler and outcome,
live objects, daemons and timers, the watch-streams' restarts and the age of their last event,
the blocks of the event loop (see :mod:`anyop.engine.operator.loop_watchdog`), and the TLS
handshakes that the webhook server's clients broke off (see :mod:`anyop.webhooks.handshakes`).

The ``controller`` label is the resource (``kopfexamples.v1.kopf.dev``); for the calls of an
``@anyop.reconcile``, the resource and the reconciler's id (``kopfexamples.v1.kopf.dev/keep``),
whose results are ``success``, ``requeue_after`` or ``error``, and whose queue is
``workqueue_depth{name="kopfexamples.v1.kopf.dev/keep"}``. Every operator has a
registry of its own, so several operators in one process (or in one test run) never mix.
The engine reaches the running operator's :class:`Metrics` through :data:`current_metrics`;
an operator that serves no metrics endpoint has none, counts nothing, and never imports
prometheus-client.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

__all__ = ["Metrics", "content_type", "current_metrics"]

current_metrics: contextvars.ContextVar[Metrics | None] = contextvars.ContextVar(
    "anyop.current_metrics", default=None
)
"""The running operator's metrics; ``None`` outside of :func:`anyop.operator`."""

_SECONDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """Counters and histograms of one operator, plus collectors of its live state.

    Attributes:
        registry: The Prometheus registry that :meth:`render` exposes.
    """

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry: Any = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._cycles = Counter(
            "controller_runtime_reconcile_total",
            "Handling cycles by resource and result.",
            ["controller", "result"],
            registry=r,
        )
        self._cycle_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Handling cycles that ended in an unexpected error.",
            ["controller"],
            registry=r,
        )
        self._cycle_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "How long handling cycles take.",
            ["controller"],
            buckets=_SECONDS,
            registry=r,
        )
        self._handlers = Counter(
            "anyop_handler_runs_total",
            "Handler, daemon and timer runs by outcome: success, retry, failure.",
            ["controller", "handler", "outcome"],
            registry=r,
        )
        self._handler_time = Histogram(
            "anyop_handler_duration_seconds",
            "How long one handler call takes.",
            ["controller", "handler"],
            buckets=_SECONDS,
            registry=r,
        )
        self._retries = Counter(
            "workqueue_retries_total",
            "Handler retries scheduled, by resource.",
            ["name"],
            registry=r,
        )
        self._requests = Counter(
            "rest_client_requests_total",
            "API requests by status code (or 'error' without an answer) and method.",
            ["code", "method"],
            registry=r,
        )
        self._request_time = Histogram(
            "rest_client_request_duration_seconds",
            "API request latency by method.",
            ["verb"],
            buckets=_SECONDS,
            registry=r,
        )
        self._loop_blocks = Counter(
            "anyop_event_loop_blocks_total",
            "Times the event loop was blocked longer than execution.loop_lag_threshold.",
            registry=r,
        )
        self._loop_blocked = Counter(
            "anyop_event_loop_blocked_seconds_total",
            "Seconds the event loop was blocked in those times, in all.",
            registry=r,
        )
        self._webhook_tls_errors = Counter(
            "anyop_webhook_tls_errors_total",
            "TLS handshakes that the webhook server's clients broke off, by reason "
            "(unknown_ca, bad_certificate, certificate_expired, ...).",
            ["reason"],
            registry=r,
        )

    def register(self, collector: Collector) -> None:
        """Add a collector of live values (read at every scrape)."""
        self.registry.register(collector)

    def cycle(self, controller: str, seconds: float, result: str) -> None:
        """Count a handling cycle: ``success``, ``requeue_after`` or ``error``."""
        self._cycles.labels(controller, result).inc()
        self._cycle_time.labels(controller).observe(seconds)
        if result == "error":
            self._cycle_errors.labels(controller).inc()

    def handler(self, controller: str, handler: str, outcome: str, *, seconds: float) -> None:
        """Count a handler's run: ``success``, ``retry`` or ``failure``, and its duration."""
        self._handlers.labels(controller, handler, outcome).inc()
        self._handler_time.labels(controller, handler).observe(seconds)
        if outcome == "retry":
            self._retries.labels(controller).inc()

    def request(self, method: str, code: int | None, seconds: float) -> None:
        """Count an API request and its latency (``code=None``: no answer came)."""
        self._requests.labels("error" if code is None else str(code), method).inc()
        self._request_time.labels(method).observe(seconds)

    def loop_blocked(self, seconds: float) -> None:
        """Count a block of the event loop, once it is over, and how long it took (from any
        thread)."""
        self._loop_blocks.inc()
        self._loop_blocked.inc(seconds)

    def webhook_tls_error(self, reason: str) -> None:
        """Count a failed TLS handshake of the webhook server (see
        :mod:`anyop.webhooks.handshakes` for the reasons)."""
        self._webhook_tls_errors.labels(reason).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        from prometheus_client.exposition import generate_latest

        text: bytes = generate_latest(self.registry)
        return text


def content_type() -> str:
    """The ``Content-Type`` of :meth:`Metrics.render`'s text."""
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    return str(CONTENT_TYPE_LATEST)
