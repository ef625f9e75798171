"""The oldest dependency versions that scripts/test proves are the ones pyproject.toml allows."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def floors() -> dict[str, str]:
    """Each direct runtime and test dependency's ``>=`` floor in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {}
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", requirement)
        assert match, f"{requirement!r} has no plain >= floor to test"
        found[match[1].lower()] = match[2]
    return found


def pins() -> dict[str, str]:
    lines = (ROOT / "tests" / "lowest-versions.txt").read_text().splitlines()
    entries = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {name.lower(): version for name, version in entries}


def test_every_floor_in_pyproject_is_pinned_for_the_lowest_versions_run() -> None:
    assert pins() == floors()
