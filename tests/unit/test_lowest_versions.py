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


def imported_modules() -> set[str]:
    """The top-level modules that anyop's own code imports."""
    import ast

    found: set[str] = set()
    for path in (ROOT / "src" / "anyop").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_every_runtime_dependency_is_imported_by_anyop() -> None:
    import importlib.metadata

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_normal(re.split(r"[<>=\[;]", r)[0]) for r in project["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    used = {
        _normal(dist) for module in imported_modules() for dist in distributions.get(module, [])
    }
    assert sorted(declared - used) == []


def _normal(name: str) -> str:
    """A distribution's name as the packaging specifications compare them."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()
