"""The benchmarks' smoke mode: small N, so the harness does not rot (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from bench import ab
from bench.bulk_create import run
from bench.compare import ROOT, SCENARIOS, run_all

from anyop.testing.controlplane import LocalControlPlane


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
    frameworks = ["anyop-asyncio", "anyop-trio", "raw", "raw-list", "raw-state"]  # raw: on echoes
    if importlib.util.find_spec("aiohttp") is not None:  # in the bench environment only
        frameworks.append("raw-aiohttp")
    if os.environ.get("ANYOP_BENCH_KOPF"):
        frameworks.append("kopf")
    results = run_all(anyop_controlplane, list(SCENARIOS), frameworks, count=20, repeats=1)
    assert set(results) == set(SCENARIOS)
    for framework in ("anyop-asyncio", "anyop-trio"):
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
