"""The public doorway: `anyop.__all__` lists exactly the public names, sorted."""

from __future__ import annotations

import types

import anyop


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in dir(anyop) if name.isidentifier() and not name.startswith("_")}
    exported_modules = {"on", "lifecycles"}
    submodules = {
        name
        for name in public
        if isinstance(getattr(anyop, name), types.ModuleType) and name not in exported_modules
    }
    assert set(anyop.__all__) - {"__version__"} == public - submodules


def test_all_is_sorted_case_sensitively() -> None:
    assert anyop.__all__ == sorted(anyop.__all__)


def test_kopf_names_needed_by_simple_operators_exist() -> None:
    for name in (
        "on",
        "TemporaryError",
        "PermanentError",
        "Spec",
        "Patch",
        "Memo",
        "PRESENT",
        "ABSENT",
        "EVERYTHING",
        "OperatorSettings",
        "OperatorRegistry",
        "daemon",
        "timer",
        "index",
        "subhandler",
        "register",
        "execute",
        "Index",
        "Store",
        "ConnectionInfo",
    ):
        assert hasattr(anyop, name), name
