"""Charts of the benches' results, as SVG images for ``docs/benchmarks.md``.

``python -m bench.charts`` reads ``bench/results/*.json`` (written by ``bench.compare`` and
``bench.sharding``) and writes ``docs/images/bench-*.svg``; ``nox -s bench`` runs it after the
benches. The drawing is pure (:func:`line_chart` returns the SVG text) and needs no plotting
library: each chart is a few lines and their points.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from bench import results

__all__ = ["charts", "line_chart", "nice_ticks"]

IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
Series = Mapping[str, Sequence[tuple[float, float]]]

HEIGHT = 340
LEFT, TOP, BOTTOM = 64, 36, 48
PLOT_WIDTH = 350
"""The width of the plotting area; the legend's column widens the image to fit its names."""
CHAR_WIDTH = 6.6
"""About how wide a character of the 11 px sans-serif text is."""
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
DASHES = ("", "6 3", "2 3", "8 3 2 3")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten apart) from at most ``low``
    to at least ``high``."""
    if high <= low:
        high = low + 1
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value < high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _label(value: float) -> str:
    if value >= 1000 and value == int(value):
        return f"{int(value):,}"
    return f"{value:g}"


def line_chart(title: str, x_label: str, y_label: str, series: Series, *,
               x_log: bool = False) -> str:  # fmt: skip
    """An SVG line chart: one line with markers per series, axes from zero (the x axis from
    its first value when ``x_log``), a legend to the right.

    Raises:
        ValueError: No series has a point, or a logarithmic axis meets a value not above zero.
    """
    points = [point for line in series.values() for point in line]
    if not points:
        raise ValueError(f"the chart {title!r} has no points")
    xs = sorted({x for x, _ in points})
    if x_log and xs[0] <= 0:
        raise ValueError(f"the chart {title!r} has an x of {xs[0]} on a logarithmic axis")
    y_ticks = nice_ticks(0.0, max(y for _, y in points))
    x_ticks = xs if x_log or len(xs) <= 6 else nice_ticks(0.0, xs[-1])
    inner_w, inner_h = PLOT_WIDTH, HEIGHT - TOP - BOTTOM
    right = 50 + CHAR_WIDTH * max(len(name) for name in series)
    width = round(LEFT + inner_w + right)

    def fx(x: float) -> float:
        if x_log:
            span = math.log10(xs[-1] / xs[0]) or 1.0
            return LEFT + inner_w * (0.05 + 0.9 * math.log10(x / xs[0]) / span)
        return LEFT + inner_w * x / (x_ticks[-1] * 1.05 or 1.0)

    def fy(y: float) -> float:
        return TOP + inner_h * (1 - y / y_ticks[-1])

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
        f'viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="20" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for tick in y_ticks:
        y = fy(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + inner_w}" y2="{y:.1f}" '
                   'stroke="#ddd"/>')  # fmt: skip
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
    for tick in x_ticks:
        x = fx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + inner_h}" x2="{x:.1f}" y2="{TOP + inner_h + 4}" '
                   'stroke="#333"/>')  # fmt: skip
        out.append(f'<text x="{x:.1f}" y="{TOP + inner_h + 16}" text-anchor="middle">'
                   f"{_label(tick)}</text>")  # fmt: skip
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + inner_h}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP + inner_h}" x2="{LEFT + inner_w}" '
               f'y2="{TOP + inner_h}" stroke="#333"/>')  # fmt: skip
    out.append(f'<text x="{LEFT + inner_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
               f"{escape(x_label)}</text>")  # fmt: skip
    out.append(f'<text transform="translate(14 {TOP + inner_h / 2}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')  # fmt: skip
    for index, (name, line) in enumerate(series.items()):
        colour, dash = COLOURS[index % len(COLOURS)], DASHES[index // len(COLOURS) % len(DASHES)]
        ordered = sorted(line)
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in ordered)
        dashing = f' stroke-dasharray="{dash}"' if dash else ""
        if len(ordered) > 1:
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                       f'stroke-width="2"{dashing}/>')  # fmt: skip
        for x, y in ordered:
            out.append(f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="{colour}"/>')
        legend_y = TOP + 8 + 16 * index
        legend_x = LEFT + inner_w + 12
        out.append(f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 20}" '
                   f'y2="{legend_y}" stroke="{colour}" stroke-width="2"{dashing}/>')  # fmt: skip
        out.append(f'<text x="{legend_x + 26}" y="{legend_y + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _bulk_series(
    records: Sequence[results.Record], metric: str
) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {}
    for entry in records:
        if entry.get("scenario") == "bulk" and metric in entry["values"]:
            point = (float(entry["objects"]), float(entry["values"][metric]))
            series.setdefault(str(entry["framework"]), []).append(point)
    return series


def _sharding_series(
    records: Sequence[results.Record], value: str
) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {}
    for entry in records:
        name = f"{entry['backend']}, shard selectors {entry['selectors']}"
        stats = entry["stats"]
        y = {
            "per_s": float(entry["per_s"]),
            "cpu_s": max(float(s["cpu_s"]) for s in stats),
            "cpu_sum": sum(float(s["cpu_s"]) for s in stats),
            "peak_mib": max(float(s["peak_mib"]) for s in stats),
            "server_cpu_s": float(entry["server"]["cpu_s"]),
        }[value]
        series.setdefault(name, []).append((float(entry["replicas"]), y))
    return series


def charts() -> dict[str, str]:
    """Every chart the results allow: file name to SVG text."""
    made = {}
    bulk = results.load("compare")
    if bulk:
        rates = {
            name: [(n, n / seconds) for n, seconds in line]
            for name, line in _bulk_series(bulk, "seconds").items()
        }
        made["bench-bulk-throughput.svg"] = line_chart(
            "bulk: objects handled per second", "objects", "objects / s", rates, x_log=True
        )
        cpu = {
            name: [(n, 1000 * cpu_s / n) for n, cpu_s in line]
            for name, line in _bulk_series(bulk, "cpu_s").items()
        }
        made["bench-bulk-cpu.svg"] = line_chart(
            "bulk: operator CPU per object", "objects", "CPU ms / object", cpu, x_log=True
        )
        made["bench-bulk-rss.svg"] = line_chart(
            "bulk: operator peak RSS", "objects", "MiB", _bulk_series(bulk, "rss_mib"), x_log=True
        )
    shards = [entry for entry in results.load("sharding") if entry.get("kill_after") is None]
    for objects in sorted({int(entry["objects"]) for entry in shards}):
        of_count = [entry for entry in shards if int(entry["objects"]) == objects]
        for value, title, unit in (
            ("per_s", "objects handled per second", "objects / s"),
            ("cpu_s", "CPU of the busiest replica", "CPU s"),
            ("cpu_sum", "CPU of all replicas together", "CPU s"),
            ("peak_mib", "peak RSS of the largest replica", "MiB"),
            ("server_cpu_s", "kube-apiserver's CPU", "CPU s"),
        ):
            made[f"bench-sharding-{objects}-{value.replace('_', '-')}.svg"] = line_chart(
                f"sharding, {objects:,} objects: {title}", "replicas", unit,
                _sharding_series(of_count, value))  # fmt: skip
    return made


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, svg in charts().items():
        (args.out / name).write_text(svg)
        print(args.out / name)


if __name__ == "__main__":
    main()
