"""CHANGELOG.md is for users: an empty Unreleased section on top, then releases, newest first,
the newest being the installed version, each entry one or two lines."""

from __future__ import annotations

import re
from pathlib import Path

import anyop

CHANGELOG = Path(__file__).parents[2] / "CHANGELOG.md"
TEXT = CHANGELOG.read_text()
SECTIONS = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d\d-\d\d))?$", TEXT, flags=re.MULTILINE)


def test_unreleased_comes_first_then_the_installed_version() -> None:
    assert SECTIONS[0] == ("Unreleased", "")
    assert SECTIONS[1] == (anyop.__version__, "2026-11-28")


def test_the_changelog_is_short_and_each_entry_is_one_or_two_lines() -> None:
    assert len(TEXT.splitlines()) < 200
    entries = re.findall(r"^- .*(?:\n  .*)*", TEXT, flags=re.MULTILINE)
    assert entries
    assert [e for e in entries if e.count("\n") > 1] == []


def test_the_release_groups_are_those_of_keep_a_changelog() -> None:
    groups = re.findall(r"^### (\w+)", TEXT, flags=re.MULTILINE)
    assert set(groups) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert "Added" in groups
