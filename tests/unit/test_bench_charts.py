"""The benches' charts and kept results (bench/charts.py, bench/results.py): pure parts."""

from __future__ import annotations

import itertools
import math
import xml.etree.ElementTree as ET

import pytest
from bench import charts, results
from hypothesis import given
from hypothesis import strategies as st

SVG = "{http://www.w3.org/2000/svg}"


@given(st.floats(0, 1e6), st.floats(1e-3, 1e6), st.integers(2, 10))
def test_ticks_are_round_evenly_spaced_and_cover_the_range(
    low: float, width: float, count: int
) -> None:
    ticks = charts.nice_ticks(low, low + width, count)
    assert ticks[0] <= low + 1e-9
    assert ticks[-1] >= low + width - 1e-9
    steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1, ticks
    (step,) = steps
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 5, 10)


def test_a_chart_has_a_line_and_markers_per_series_and_a_legend() -> None:
    series = {"anyop-trio": [(1000, 600.0), (10000, 540.0)], "kopf": [(1000, 280.0)]}
    svg = charts.line_chart("bulk <throughput>", "objects", "objects / s", series, x_log=True)
    root = ET.fromstring(svg)
    assert len(root.findall(f"{SVG}polyline")) == 1  # one point draws no line
    assert len(root.findall(f"{SVG}circle")) == 3
    texts = [node.text for node in root.iter(f"{SVG}text")]
    assert "bulk <throughput>" in texts
    assert "anyop-trio" in texts
    assert "kopf" in texts
    heights = [float(node.get("cy", 0)) for node in root.findall(f"{SVG}circle")]
    assert max(heights) <= charts.HEIGHT
    assert min(heights) >= 0


def test_a_chart_without_points_or_with_a_zero_on_a_log_axis_is_refused() -> None:
    with pytest.raises(ValueError, match="no points"):
        charts.line_chart("empty", "x", "y", {"a": []})
    with pytest.raises(ValueError, match="logarithmic"):
        charts.line_chart("zero", "x", "y", {"a": [(0, 1.0)]}, x_log=True)


def test_a_new_measurement_replaces_the_old_one_of_its_point_only() -> None:
    old = [
        {"framework": "kopf", "objects": 1000, "v": 1},
        {"framework": "kopf", "objects": 10, "v": 2},
    ]
    new = [{"framework": "kopf", "objects": 1000, "v": 3}]
    kept = results.merged(old, new, key=("framework", "objects"))
    assert sorted(entry["v"] for entry in kept) == [2, 3]


def test_the_charts_in_the_docs_are_those_the_kept_results_draw() -> None:
    """docs/images/bench-*.svg are made by `python -m bench.charts`, never by hand."""
    drawn = charts.charts()
    assert drawn, "no results kept in bench/results/"
    kept = {path.name: path.read_text() for path in charts.IMAGES.glob("bench-*.svg")}
    assert kept == drawn
