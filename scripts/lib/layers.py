"""Per-layer totals of a test run, for the end of ``scripts/test``.

``python scripts/lib/layers.py LOG`` reads the lines ``scripts/test`` appended to LOG while it
ran: ``step NAME START END RC`` for a step without tests (lint, types, docs), ``junit NAME START
END RC FILE`` for a pytest run with its JUnit XML report (START and END in epoch seconds). It
prints one line per layer (lint/types, unit, conformance, e2e, lowest versions) with its time
and counts, then the totals of all tests (``N passed, N failed, N skipped``). A pytest run's
tests are put in their layer by their path (``tests/unit``, ``tests/conformance``,
``tests/e2e``); the layer's time is its tests' own time (set-up and teardown included), the
run's wall time where the run is a layer of its own. Runs side by side (``main-1``, ``main-2``)
are added up, with their wall time on a line of their own.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

LAYERS = {"unit": "unit", "conformance": "conformance", "e2e": "e2e"}
"""The folder under ``tests/`` -> the layer's name."""


@dataclasses.dataclass
class Layer:
    """What one layer did."""

    name: str
    seconds: float = 0.0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    rc: int = 0
    tested: bool = True

    def line(self) -> str:
        """``NAME  TIME  counts`` as printed."""
        minutes, seconds = divmod(round(self.seconds), 60)
        took = f"{minutes:d}:{seconds:02d}"
        if not self.tested:
            verdict = "ok" if self.rc == 0 else f"FAILED (exit code {self.rc})"
            return f"{self.name:<16} {took:>6}  {verdict}"
        counts = f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped"
        return f"{self.name:<16} {took:>6}  {counts}"


def _outcome(case: ET.Element) -> str:
    tags = {child.tag for child in case}
    if tags & {"failure", "error"}:
        return "failed"
    if "skipped" in tags:
        return "skipped"
    return "passed"


def _layer_of(case: ET.Element) -> str:
    classname = case.get("classname", "")  # tests.unit.engine.test_x
    parts = classname.split(".")
    return LAYERS.get(parts[1], "other") if len(parts) > 1 and parts[0] == "tests" else "other"


def from_junit(
    paths: Iterable[Path], *, as_layer: str | None, seconds: float, rc: int
) -> list[Layer]:
    """The layers of one pytest run (or of runs side by side): by the tests' paths, or all as
    ``as_layer``."""
    layers: dict[str, Layer] = {}
    for path in paths:
        try:
            cases = list(ET.parse(path).getroot().iter("testcase"))
        except (OSError, ET.ParseError):
            name = as_layer or "tests"
            layers.setdefault(name, Layer(name, tested=False)).rc = rc or 1
            continue
        for case in cases:
            name = as_layer or _layer_of(case)
            layer = layers.setdefault(name, Layer(name))
            setattr(layer, _outcome(case), getattr(layer, _outcome(case)) + 1)
            layer.seconds += float(case.get("time") or 0.0)
    if as_layer is not None:
        layers.setdefault(as_layer, Layer(as_layer)).seconds = seconds
    for layer in layers.values():
        layer.rc = layer.rc or rc
    return sorted(
        layers.values(),
        key=lambda layer: (
            list(LAYERS.values()).index(layer.name)
            if layer.name in LAYERS.values()
            else len(LAYERS)
        ),
    )


def parse(lines: Iterable[str]) -> list[Layer]:
    """The layers named in ``scripts/test``'s log, in its order.

    Runs side by side (``NAME-1``, ``NAME-2``, ...) count as one: their tests' times add up in
    the layers, and a line ``NAME (N runs)`` shows their wall time, from the first start to the
    last end.
    """
    layers: list[Layer] = []
    runs: dict[str, list[tuple[float, float, int, Path]]] = {}
    for line in lines:
        kind, *fields = line.split()
        if kind == "step":
            name, start, end, rc = fields
            seconds = float(end) - float(start)
            layers.append(Layer(name, seconds, rc=int(rc), tested=False))
        elif kind == "junit":
            name, start, end, rc, report = fields
            base = re.sub(r"-\d+$", "", name)
            runs.setdefault(base, []).append((float(start), float(end), int(rc), Path(report)))
    for base, entries in runs.items():
        wall = max(end for _, end, _, _ in entries) - min(start for start, _, _, _ in entries)
        rc = max((rc for _, _, rc, _ in entries), default=0)
        reports = [report for _, _, _, report in entries]
        as_layer = None if base == "main" else base
        layers += from_junit(reports, as_layer=as_layer, seconds=wall, rc=rc)
        if len(entries) > 1:
            layers.append(Layer(f"{base} ({len(entries)} runs)", wall, rc=rc, tested=False))
    return layers


def report(layers: list[Layer]) -> str:
    """The lines to print: one per layer, then the totals."""
    tested = [layer for layer in layers if layer.tested]
    total = Layer("total", sum(layer.seconds for layer in layers))
    for field in ("passed", "failed", "skipped"):
        setattr(total, field, sum(getattr(layer, field) for layer in tested))
    lines = [layer.line() for layer in layers]
    lines.append(f"total: {total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print the report of the log named in ``argv``."""
    print(report(parse(Path(argv[1]).read_text().splitlines())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
