"""Live values for ``/metrics``: read from the served resources at every scrape, never counted.

The counters (cycles, handler runs, API requests) are incremented where things happen (see
:mod:`anyop.metrics`); the gauges here cost nothing between scrapes: objects and busy workers per
resource (and per reconciler), running daemons and timers, and each watch-stream's restarts,
relists, whether it is streaming, and the age of the last thing it received; the sync handler
calls waiting for a free thread, the busy threads and their limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import anyio
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from anyop.engine.operator.health import Health
from anyop.engine.resource.serve_resource import Watched
from anyop.handlers.records import TimerHandler
from anyop.metrics import Metrics

__all__ = ["LiveCollector", "operator_metrics"]

_LABELS = ["controller", "namespace"]


class LiveCollector:
    """A Prometheus collector of the operator's live state (its :class:`Health`'s resources)."""

    def __init__(self, health: Health) -> None:
        self.health = health

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: the metrics are only known when collected."""
        return ()

    def collect(self) -> Iterator[Metric]:
        """The gauges and counters of every served resource, now."""
        objects = GaugeMetricFamily("anyop_objects", "Objects with a worker slot.", labels=_LABELS)
        depth = GaugeMetricFamily(
            "workqueue_depth",
            "Objects with a cycle running or due (by resource).",
            labels=["name", "namespace"],
        )
        daemons = GaugeMetricFamily(
            "anyop_daemons", "Running daemons and timers.", labels=[*_LABELS, "kind"]
        )
        restarts = CounterMetricFamily(
            "anyop_watch_restarts", "Watch-streams reopened, for any reason.", labels=_LABELS
        )
        relists = CounterMetricFamily(
            "anyop_watch_relists", "Listings after an expired resourceVersion.", labels=_LABELS
        )
        streaming = GaugeMetricFamily(
            "anyop_watch_streaming", "1 while a watch response is open.", labels=_LABELS
        )
        age = GaugeMetricFamily(
            "anyop_watch_last_event_age_seconds",
            "Seconds since the watch-stream last received an event, bookmark or page.",
            labels=_LABELS,
        )
        now = anyio.current_time()
        for watched in list(self.health.watchers.values()):
            labels = [str(watched.resource), watched.namespace or ""]
            state = watched.state
            restarts.add_metric(labels, state.restarts)
            relists.add_metric(labels, state.relists)
            streaming.add_metric(labels, 1 if state.streaming else 0)
            if state.last_event_time is not None:
                age.add_metric(labels, now - state.last_event_time)
            if watched.workers is not None:
                objects.add_metric(labels, len(watched.workers))
                depth.add_metric(labels, watched.workers.busy)
            for kind, count in _runs(watched).items():
                daemons.add_metric([*labels, kind], count)
            for reconciler in list(watched.reconcilers or ()):  # each has a queue of its own
                if reconciler.workers is not None:
                    depth.add_metric([reconciler.name, labels[1]], reconciler.workers.busy)
        yield from (objects, depth, daemons, restarts, relists, streaming, age)
        yield from _shard_metrics(self.health.shard)
        if self.health.limiter is not None:
            yield from _thread_metrics(self.health.limiter)


def _shard_metrics(shard: Any) -> Iterator[Metric]:
    """The shard's size and members, when the operator is sharded."""
    if shard is None:
        return
    size = GaugeMetricFamily("anyop_shard_objects", "Objects this replica handles (its share).")
    size.add_metric([], shard.size)
    members = GaugeMetricFamily("anyop_shard_members", "Live members of the shard group.")
    members.add_metric([], len(shard.state.target.members))
    settled = GaugeMetricFamily(
        "anyop_shard_settled", "1 unless a hand-over is waiting for acknowledgements."
    )
    settled.add_metric([], 1 if shard.state.settled else 0)
    yield from (size, members, settled)


def _thread_metrics(limiter: anyio.CapacityLimiter) -> Iterator[Metric]:
    """The sync calls' threads: calls waiting for one, busy ones, and their limit."""
    stats = limiter.statistics()
    waiting = GaugeMetricFamily(
        "anyop_sync_calls_waiting",
        "Sync handler calls waiting for a free thread (settings.execution.max_workers).",
    )
    waiting.add_metric([], stats.tasks_waiting)
    busy = GaugeMetricFamily("anyop_sync_threads_busy", "Threads running sync handler calls.")
    busy.add_metric([], stats.borrowed_tokens)
    limit = GaugeMetricFamily(
        "anyop_sync_threads_limit", "Threads that sync handler calls may use at once."
    )
    limit.add_metric([], stats.total_tokens)
    yield from (waiting, busy, limit)


def _runs(watched: Watched) -> dict[str, int]:
    counts = {"daemon": 0, "timer": 0}
    spawner: Any = watched.spawner
    if spawner is None:
        return counts
    for obj in list(spawner.objects.values()):
        for run in list(obj.runs.values()):
            if run.alive:
                counts["timer" if isinstance(run.handler, TimerHandler) else "daemon"] += 1
    return counts


def operator_metrics(health: Health) -> Metrics:
    """New metrics for an operator, with the live values of its ``health``."""
    metrics = Metrics()
    metrics.register(LiveCollector(health))
    return metrics
