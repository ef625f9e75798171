"""The benchmarks' smoke mode: small N, so the harness does not rot (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench import ab
from bench.bulk_create import run
from bench.compare import ROOT, SCENARIOS, run_all
from bench.namespaces import scratch_namespace

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bulk_create_handles_every_object_with_one_write_each(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str, backend: str
) -> None:
    result = run(anyop_controlplane, 20, backend)
    assert result["writes_per_object"] == 1.0
    assert result["rss_mib"] > 0


def test_the_side_by_side_harness_runs_every_scenario_in_smoke_mode(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str
) -> None:
    """Kopf joins only with ANYOP_BENCH_KOPF=1 (it is installed from the package index)."""
    # raw: on echoes; raw-list (a variant of raw-state's listing) runs in `nox -s bench` only;
    # anyop on Trio only: on asyncio it is the same harness with another `--backend`.
    frameworks = ["anyop-trio", "raw", "raw-state"]
    if importlib.util.find_spec("aiohttp") is not None:  # in the bench environment only
        frameworks.append("raw-aiohttp")
    if os.environ.get("ANYOP_BENCH_KOPF"):
        frameworks.append("kopf")
    results = run_all(anyop_controlplane, list(SCENARIOS), frameworks, count=20, repeats=1)
    assert set(results) == set(SCENARIOS)
    for framework in ("anyop-trio",):
        assert results["bulk"][framework]["patches_per_object"] == [1.0]
        assert results["bulk"][framework]["seconds"][0] > 0
        assert results["latency"][framework]["p99_ms"][0] > 0
        assert results["restart"][framework]["seconds"][0] > 0
        assert results["background"][framework]["stop_s"][0] < 30
        assert results["idle"][framework]["cpu_s"][0] > 0
    for floor in {"raw", "raw-list", "raw-aiohttp", "raw-state"} & set(frameworks):
        assert results["bulk"][floor]["patches_per_object"] == [1.0]
        assert results["idle"][floor]["cpu_s"][0] > 0
    assert "raw" not in results["latency"]
    assert kopfexamples_outside_tests(anyop_controlplane) == []  # every scenario's are gone


def kopfexamples_outside_tests(plane: LocalControlPlane) -> list[str]:
    """KopfExamples in namespaces that a benchmark made (the tests' own are named otherwise)."""
    listed = json.loads(kubectl(plane, "get", "kopfexamples", "-A", "-o", "json"))["items"]
    prefixes = ("bulk-", "bg-", "restart-", "idle-", "lat-", "daemons-", "cold-", "shards-")
    return [f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" for obj in listed
            if obj["metadata"]["namespace"].startswith(prefixes)]  # fmt: skip


def test_a_scratch_namespace_goes_with_its_objects_though_they_hold_finalizers(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str
) -> None:
    """A benchmark's operator is gone before its namespace is: the finalizers it left would
    keep its objects forever, for every cluster-wide operator that runs later to handle."""
    plane = anyop_controlplane
    with scratch_namespace(plane, "scratch-finalized") as namespace:
        for i in range(3):
            metadata = {"name": f"kex-{i}", "finalizers": ["bench.anyop.dev/held"]}
            kex = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata}
            kubectl(plane, "create", "-n", namespace, "-f", "-", stdin=json.dumps(kex))
    left = kubectl(plane, "get", "kopfexamples", "-n", "scratch-finalized", "-o", "name")
    assert left.strip() == ""
    phase = kubectl(plane, "get", "namespace", "scratch-finalized", "--ignore-not-found",
                    "-o", "jsonpath={.status.phase}")  # fmt: skip
    assert phase in ("", "Terminating")


def test_the_before_after_harness_alternates_two_trees(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str
) -> None:
    trees = {"before": ROOT, "after": ROOT}
    results = ab.run(anyop_controlplane, "bulk", trees, count=10, repeats=2, framework="anyop-trio")
    assert [len(runs) for runs in results.values()] == [2, 2]
    assert all(run["patches_per_object"] == 1.0 for runs in results.values() for run in runs)


def test_the_before_after_harness_refuses_a_folder_that_is_no_checkout(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ab.main(["bulk", "--before", str(tmp_path)])


def webhook_bench(backend: str) -> dict[str, Any]:
    """Run bench/webhook_bad_input.py for two rounds in a process of its own; its figures."""
    command = [sys.executable, "-m", "bench.webhook_bad_input", "--rounds", "2", "--json"]
    done = subprocess.run(
        [*command, "--backend", backend], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    figures["exit_code"] = done.returncode
    return figures


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_webhook_bench_answers_garbage_without_tracebacks_or_5xx(backend: str) -> None:
    figures = webhook_bench(backend)
    assert figures["garbage_requests"] > 20
    assert figures["server_errors_5xx"] == 0
    assert figures["wrong_answers"] == 0
    assert figures["tracebacks"] - figures["tracebacks_at_stop"] == 0
    assert figures["denials_logged"] > 0  # denials are logged, in one line each


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_webhook_bench_stops_its_server_cleanly(backend: str) -> None:
    figures = webhook_bench(backend)
    assert figures["tracebacks_at_stop"] == 0
    assert figures["clean_stop"]
    assert figures["exit_code"] == 0
