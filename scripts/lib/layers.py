"""Per-layer totals of a test run, for the end of ``scripts/test``.

``python scripts/lib/layers.py LOG`` reads the lines ``scripts/test`` appended to LOG while it
ran: ``step NAME START END RC`` for a step without tests (lint, types, docs), ``junit NAME START
END RC FILE`` for a pytest run with its JUnit XML report (START and END in epoch seconds). It
prints one line per layer (lint/types, unit, conformance, e2e, lowest versions) with its time
and counts, then the totals of all tests (``N passed, N failed, N skipped``). A pytest run's
tests are put in their layer by their path (``tests/unit``, ``tests/conformance``,
``tests/e2e``); the layer's time is its tests' own time (set-up and teardown included), the
run's wall time where the run is a layer of its own.
"""

from __future__ import annotations

import dataclasses
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


def from_junit(path: Path, *, as_layer: str | None, seconds: float, rc: int) -> list[Layer]:
    """The layers of one pytest run: by the tests' paths, or all as ``as_layer``."""
    layers: dict[str, Layer] = {}
    try:
        cases = ET.parse(path).getroot().iter("testcase")
    except (OSError, ET.ParseError):
        return [Layer(as_layer or "tests", seconds=seconds, rc=rc or 1, tested=False)]
    for case in cases:
        name = as_layer or _layer_of(case)
        layer = layers.setdefault(name, Layer(name))
        setattr(layer, _outcome(case), getattr(layer, _outcome(case)) + 1)
        layer.seconds += float(case.get("time") or 0.0)
    if as_layer is not None:
        layers.setdefault(as_layer, Layer(as_layer)).seconds = seconds
    for layer in layers.values():
        layer.rc = rc
    return sorted(
        layers.values(),
        key=lambda layer: (
            list(LAYERS.values()).index(layer.name)
            if layer.name in LAYERS.values()
            else len(LAYERS)
        ),
    )


def parse(lines: Iterable[str]) -> list[Layer]:
    """The layers named in ``scripts/test``'s log, in its order."""
    layers: list[Layer] = []
    for line in lines:
        kind, *fields = line.split()
        if kind == "step":
            name, start, end, rc = fields
            seconds = float(end) - float(start)
            layers.append(Layer(name, seconds, rc=int(rc), tested=False))
        elif kind == "junit":
            name, start, end, rc, report = fields
            seconds = float(end) - float(start)
            as_layer = None if name == "main" else name
            layers += from_junit(Path(report), as_layer=as_layer, seconds=seconds, rc=int(rc))
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
