"""The benches' results kept as JSON, for the charts (``bench/charts.py``).

``bench/results/<bench>.json`` holds one record per measured point (a framework at a number of
objects, a backend with a number of replicas, ...), each with the commit it measured and its
date. A new measurement of the same point replaces the old one; other points stay, so a run of
one scenario does not erase the rest.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["RESULTS", "commit", "load", "record", "stamp"]

RESULTS = Path(__file__).resolve().parent / "results"
Record = dict[str, Any]


def commit() -> str:
    """The checkout's commit (short), with ``+`` if its tree has changes."""
    root = RESULTS.parent.parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=False).stdout.strip() or "unknown"  # fmt: skip
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return head + ("+" if dirty else "")


def load(name: str) -> list[Record]:
    """The records of one bench (none if it never ran)."""
    path = RESULTS / f"{name}.json"
    return list(json.loads(path.read_text())) if path.exists() else []


def merged(old: Sequence[Record], new: Sequence[Record], key: Sequence[str]) -> list[Record]:
    """``old`` with ``new`` in place of the records of the same ``key`` fields; sorted by key."""

    def point(entry: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(str(entry.get(field)) for field in key)

    fresh = {point(entry) for entry in new}
    kept = [entry for entry in old if point(entry) not in fresh]
    return sorted([*kept, *new], key=lambda entry: tuple(str(entry.get(f)) for f in key))


def stamp() -> Record:
    """The commit and the date of a measurement: take it when the bench starts, before the
    checkout can change under it."""
    return {"commit": commit(), "date": datetime.date.today().isoformat()}


def record(name: str, entries: Sequence[Record], key: Sequence[str], measured: Record) -> Path:
    """Keep ``entries``, stamped with ``measured`` (see :func:`stamp`), in the bench's file."""
    new = [{**entry, **measured} for entry in entries]
    path = RESULTS / f"{name}.json"
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(merged(load(name), new, key), indent=1, sort_keys=True) + "\n")
    return path
