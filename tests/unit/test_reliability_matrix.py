"""docs/reliability.md stays true: all 52 rows of the fault matrix, each proven by tests that exist.

A row that loses its last test, or names a test that was renamed or removed, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reliability.md"
ROWS = 52
LEVELS = {"real", "proxy", "fake", "unit", "partly"}
ROW = re.compile(r"^\| (\d+) \|(.*)\|\s*$")
NAMED_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def matrix() -> dict[int, list[str]]:
    """The matrix's rows by number: their cells, without the number."""
    rows: dict[int, list[str]] = {}
    for line in PAGE.read_text().splitlines():
        if match := ROW.match(line):
            number = int(match[1])
            assert number not in rows, f"row {number} is in the matrix twice"
            rows[number] = [cell.strip() for cell in match[2].split(" | ")]
    return rows


def defines(path: str, name: str) -> bool:
    """Whether the test file defines that test function (at any indentation)."""
    file = ROOT / path
    pattern = re.compile(rf"^\s*(async\s+)?def {re.escape(name)}\(", re.MULTILINE)
    return file.is_file() and bool(pattern.search(file.read_text()))


def test_the_matrix_has_every_row_once_with_five_cells() -> None:
    rows = matrix()
    assert sorted(rows) == list(range(1, ROWS + 1))
    wrong = {n: len(cells) for n, cells in rows.items() if len(cells) != 5}
    assert wrong == {}, "rows without: fault | what holds | level | proof | figure"


@pytest.mark.parametrize("number", range(1, ROWS + 1))
def test_each_row_has_a_level_and_tests_that_exist(number: int) -> None:
    _, holds, level, proof, _ = matrix()[number]
    assert level in LEVELS, f"row {number}: level {level!r} is not one of {sorted(LEVELS)}"
    assert holds, f"row {number} does not say what holds"
    named = NAMED_TEST.findall(proof)
    assert named, f"row {number} names no test"
    missing = [f"{path}::{name}" for path, name in named if not defines(path, name)]
    assert missing == [], f"row {number} names tests that do not exist"


def test_every_test_the_page_names_exists() -> None:
    named = NAMED_TEST.findall(PAGE.read_text())
    missing = [f"{path}::{name}" for path, name in named if not defines(path, name)]
    assert missing == []


def test_the_checker_tells_a_missing_test_from_a_present_one() -> None:
    assert defines("tests/unit/test_reliability_matrix.py", "defines")
    assert not defines("tests/unit/test_reliability_matrix.py", "test_that_was_never_written")
    assert not defines("tests/unit/no_such_file.py", "defines")
