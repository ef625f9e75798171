"""Metrics and probes without a server: labels, live values, failing probes, index kwargs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import anyop.on as on
from anyop.engine.cycle.handler_calls import outcome_label
from anyop.engine.indexer import operator_indexes
from anyop.engine.operator.health import Health
from anyop.engine.operator.live_metrics import operator_metrics
from anyop.engine.resource.serve_resource import Watched
from anyop.handlers.progression import Outcome
from anyop.handlers.records import DaemonHandler, TimerHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.kube.watchstate import WatchState
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

RESOURCE = Resource("kopf.dev", "v1", "kopfexamples")


def scrape(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_outcomes_are_labelled_success_retry_or_failure() -> None:
    assert outcome_label(Outcome(final=True, result=1)) == "success"
    assert outcome_label(Outcome(final=False, delay=1.0, exception=ValueError())) == "retry"
    assert outcome_label(Outcome(final=True, exception=ValueError())) == "failure"


async def test_live_values_are_read_from_the_served_resources_at_scrape_time() -> None:
    health = Health(OperatorRegistry(), OperatorSettings(), memo=None)
    metrics = operator_metrics(health)

    def run(handler: Any, alive: bool = True) -> Any:
        return SimpleNamespace(handler=handler, alive=alive)

    daemon = DaemonHandler(id="d", fn=print)
    timer = TimerHandler(id="t", fn=print, interval=1)
    spawner = SimpleNamespace(objects={
        "u1": SimpleNamespace(runs={"d": run(daemon), "t": run(timer)}),
        "u2": SimpleNamespace(runs={"d": run(daemon, alive=False)}),
    })  # fmt: skip
    workers = type("Workers", (), {"busy": 1, "__len__": lambda self: 2})()
    state = WatchState(restarts=3, relists=1, streaming=True)
    watcher = SimpleNamespace(state=state)
    health.watchers["x"] = Watched(RESOURCE, "ns1", watcher, workers, spawner)
    samples = scrape(metrics.render())
    labels = (("controller", "kopfexamples.v1.kopf.dev"), ("namespace", "ns1"))
    assert samples[("anyop_objects", labels)] == 2
    assert (
        samples[("workqueue_depth", (("name", "kopfexamples.v1.kopf.dev"), ("namespace", "ns1")))]
        == 1
    )
    assert samples[("anyop_daemons", (*labels[:1], ("kind", "daemon"), labels[1]))] == 1
    assert samples[("anyop_daemons", (*labels[:1], ("kind", "timer"), labels[1]))] == 1
    assert samples[("anyop_watch_restarts_total", labels)] == 3
    assert samples[("anyop_watch_relists_total", labels)] == 1
    assert samples[("anyop_watch_streaming", labels)] == 1
    del health.watchers["x"]
    assert not any(name == "anyop_objects" for name, _ in scrape(metrics.render()))


async def test_counters_of_cycles_handlers_and_requests() -> None:
    metrics = operator_metrics(Health(OperatorRegistry(), OperatorSettings(), memo=None))
    metrics.cycle("r", 0.01, "success")
    metrics.cycle("r", 0.02, "error")
    metrics.handler("r", "h", "retry", seconds=0.5)
    metrics.request("PATCH", 200, 0.003)
    metrics.request("GET", None, 1.0)
    samples = scrape(metrics.render())
    assert (
        samples[
            ("controller_runtime_reconcile_total", (("controller", "r"), ("result", "success")))
        ]
        == 1
    )
    assert samples[("controller_runtime_reconcile_errors_total", (("controller", "r"),))] == 1
    assert samples[("workqueue_retries_total", (("name", "r"),))] == 1
    assert samples[("rest_client_requests_total", (("code", "200"), ("method", "PATCH")))] == 1
    assert samples[("rest_client_requests_total", (("code", "error"), ("method", "GET")))] == 1


async def test_a_failing_probe_is_reported_in_the_json_and_the_others_still_run() -> None:
    registry = OperatorRegistry()
    on.index("kopfexamples", registry=registry, id="by_name")(lambda name, **_: {name: 1})

    @on.probe(registry=registry, id="broken")
    def broken(**_: Any) -> None:
        raise RuntimeError("disk is full")

    @on.probe(registry=registry, id="sees_index")
    def sees_index(by_name: Any, **_: Any) -> int:
        return len(by_name)

    health = Health(registry, OperatorSettings(), memo=None, indexes=operator_indexes(registry))
    code, document = await health.liveness()
    assert code == 500
    assert document["broken"] == {"error": "RuntimeError: disk is full"}
    assert document["sees_index"] == 0
