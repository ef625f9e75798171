"""The test files split into parallel runs of about equal time, the same for the same seed.

``python scripts/lib/split.py SEED N PATH...`` prints N lines, each the test files (under the
PATHs: files or folders; ``--ignore=FILE`` leaves one out) of one pytest run. ``scripts/test``
starts the N runs side by side, each with its own control plane and the same
``--randomly-seed``, so that one seed names every run's files and their order:
``ANYOP_TEST_SEED=S ANYOP_TEST_WORKERS=N ./scripts/test`` repeats them.

A file is never split (its module fixtures are set up once). The files are dealt, longest first,
to the run with the least time so far (ties broken by the seed), by the times in
``tests/durations.json``; a file not listed there counts as the median. ``--record JUNIT...``
rewrites that file from JUnit reports of a whole run.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

DURATIONS = Path(__file__).resolve().parents[2] / "tests" / "durations.json"
"""Each test file's seconds in a whole run (``tests/...py`` -> seconds)."""


def test_files(paths: Iterable[str]) -> list[str]:
    """The test files named, or under the folders named, as sorted relative paths."""
    found: set[str] = set()
    ignored = {arg.removeprefix("--ignore=") for arg in paths if arg.startswith("--ignore=")}
    for path in (Path(arg) for arg in paths if not arg.startswith("--ignore=")):
        if path.is_dir():
            found.update(str(p) for p in path.rglob("test_*.py"))
        elif path.suffix == ".py":
            found.add(str(path))
        else:
            raise SystemExit(f"split.py: {path} is neither a test file nor a folder")
    return sorted(found - ignored)


def split(
    files: Sequence[str], runs: int, *, seed: int, durations: dict[str, float]
) -> list[list[str]]:
    """``files`` dealt into ``runs`` groups of about equal time (longest first, to the least
    loaded group); the same arguments give the same groups."""
    if runs < 1:
        raise ValueError(f"the number of runs must be at least 1, not {runs}")
    known = [durations[f] for f in files if f in durations]
    typical = statistics.median(known) if known else 1.0
    order = sorted(files)  # the same files in any order give the same runs
    random.Random(seed).shuffle(order)  # the seed breaks the ties among equal times
    order.sort(key=lambda f: -durations.get(f, typical))
    groups: list[list[str]] = [[] for _ in range(runs)]
    loads = [0.0] * runs
    for file in order:
        least = min(range(runs), key=lambda i: (loads[i], i))
        groups[least].append(file)
        loads[least] += durations.get(file, typical)
    return [sorted(group) for group in groups]


def durations_of(reports: Iterable[Path]) -> dict[str, float]:
    """Each test file's total seconds in JUnit reports (``tests.e2e.test_x`` -> its path)."""
    totals: dict[str, float] = defaultdict(float)
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            parts = case.get("classname", "").split(".")  # tests.unit.test_x[.TestClass]
            while parts and not Path(*parts[:-1], f"{parts[-1]}.py").is_file():
                parts.pop()
            if parts:
                totals["/".join(parts) + ".py"] += float(case.get("time") or 0.0)
    return {file: round(seconds, 1) for file, seconds in sorted(totals.items())}


def main(argv: list[str]) -> int:
    """Print the groups, or record the durations (see the module's docstring)."""
    if argv[1:2] == ["--record"]:
        DURATIONS.write_text(json.dumps(durations_of(map(Path, argv[2:])), indent=0) + "\n")
        return 0
    seed, runs, *paths = argv[1:]
    durations = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    for group in split(test_files(paths), int(runs), seed=int(seed), durations=durations):
        print(" ".join(group))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
