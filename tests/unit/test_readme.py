"""README.md is the front door: short, its code runs, its links lead somewhere, its figures are
those of the benchmarks page."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
import typer.main
from tests.unit.docs_snippets import ROOT, Snippet, cli_problems, command_lines, compiled, snippets

import anyop
from anyop.cli import app

README = ROOT / "README.md"
LINES_AT_MOST = 200
PYTHON = snippets("python", [README])
BASH = snippets("bash", [README])


@pytest.fixture
def fresh_registry() -> Any:
    """A new default registry for one snippet, and the old one back after it."""
    before = anyop.get_default_registry()
    anyop.set_default_registry(anyop.OperatorRegistry())
    try:
        yield
    finally:
        anyop.set_default_registry(before)


def test_the_readme_fits_in_200_lines() -> None:
    assert len(README.read_text().splitlines()) <= LINES_AT_MOST


def test_the_readme_has_an_operator_and_the_two_quick_start_commands() -> None:
    assert PYTHON, "no Python block"
    commands = [line.split("#")[0].strip() for s in BASH for line in s.code.splitlines()]
    assert "./scripts/demo" in commands
    assert "./scripts/test" in commands


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.name for s in PYTHON])
@pytest.mark.usefixtures("fresh_registry")
def test_the_readmes_python_runs(snippet: Snippet) -> None:
    namespace: dict[str, Any] = {"__name__": "readme_snippet", "__file__": str(README)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a third-party import's, not ours
        exec(compiled(snippet), namespace)


def test_the_readmes_operator_registers_its_handler(fresh_registry: None) -> None:
    exec(compiled(PYTHON[0]), {"__name__": "readme_snippet"})
    selectors = anyop.get_default_registry().changing.selectors()
    assert ["kopfexamples" in repr(selector) for selector in selectors] == [True]


@pytest.mark.parametrize("snippet", BASH, ids=[s.name for s in BASH])
def test_the_readmes_anyop_commands_exist(snippet: Snippet) -> None:
    command = typer.main.get_command(app)
    problems = [p for args in command_lines(snippet.code) for p in cli_problems(args, command)]
    assert problems == []


def test_the_readmes_links_lead_to_files() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "no link into the docs"
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_the_readmes_benchmark_figures_are_those_of_the_benchmarks_page() -> None:
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text()
    rows = [line for line in README.read_text().splitlines() if re.search(r"`[0-9a-f]{7}`", line)]
    assert rows, "no dated figures"
    for row in rows:
        commit, date = re.findall(r"`([0-9a-f]{7})`, (\d{4}-\d\d-\d\d)", row)[0]
        assert commit in benchmarks, row
        assert date in benchmarks, row
        figures = [cell.strip() for cell in row.strip("|").split("|")[1:3]]
        assert all(f"| {figure} |" in benchmarks for figure in figures), row
