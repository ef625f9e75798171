"""Loading operator code: `anyop run FILE...` and `anyop run -m MODULE`."""

from __future__ import annotations

import gc
import operator as stdlib_operator
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from anyop.engine.operator import launch as running
from anyop.engine.operator.launch import load_sources
from anyop.errors import ConfigError
from anyop.handlers import registry as registry_module
from anyop.handlers.registry import OperatorRegistry


def test_an_operator_file_named_like_a_stdlib_module_does_not_replace_it(tmp_path: Path) -> None:
    (tmp_path / "operator.py").write_text("LOADED = 'yes'\n")
    load_sources([tmp_path / "operator.py"])
    assert sys.modules["operator"] is stdlib_operator
    loaded = [m for n, m in sys.modules.items() if n.startswith("anyop_operator_operator_")]
    assert [getattr(m, "LOADED", None) for m in loaded] == ["yes"]


def test_an_operator_file_may_import_its_siblings(tmp_path: Path) -> None:
    (tmp_path / "helper_for_loading_test.py").write_text("VALUE = 42\n")
    (tmp_path / "app_for_loading_test.py").write_text(
        "import helper_for_loading_test\nVALUE = helper_for_loading_test.VALUE\n"
    )
    load_sources([tmp_path / "app_for_loading_test.py"])
    assert sys.modules["app_for_loading_test"].VALUE == 42


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.py"):
        load_sources([tmp_path / "nope.py"])


def test_run_freezes_what_exists_before_its_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr(running.anyio, "run", lambda *a, **kw: seen.append(gc.get_freeze_count()))
    gc.unfreeze()
    try:
        running.run(backend="asyncio")
        assert len(seen) == 1
        assert seen[0] > 0  # the modules and handlers are out of the collector's sight
    finally:
        gc.unfreeze()


def test_run_collects_young_garbage_less_often_and_restores_the_thresholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, ...]] = []
    monkeypatch.setattr(running.anyio, "run", lambda *a, **kw: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    gc.set_threshold(*running.PYTHON_GC_THRESHOLDS)
    try:
        running.run(backend="asyncio")
        assert seen == [running.OPERATOR_GC_THRESHOLDS]
        assert gc.get_threshold() == running.PYTHON_GC_THRESHOLDS
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def test_overlapping_runs_restore_the_thresholds_the_first_one_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Test runners run operators in threads: a ends while b runs, then b ends.
    a_runs, a_may_end = threading.Event(), threading.Event()
    b_runs, b_may_end = threading.Event(), threading.Event()

    def fake_run(fn: object, kwargs: dict[str, str], backend: str) -> None:
        if kwargs["name"] == "a":
            a_runs.set()
            a_may_end.wait(10)
        else:
            b_runs.set()
            b_may_end.wait(10)

    monkeypatch.setattr(running.anyio, "run", fake_run)
    before = gc.get_threshold()
    gc.set_threshold(*running.PYTHON_GC_THRESHOLDS)
    a = threading.Thread(target=running.run, kwargs={"name": "a"})
    b = threading.Thread(target=running.run, kwargs={"name": "b"})
    try:
        a.start()
        assert a_runs.wait(10)
        assert gc.get_threshold() == running.OPERATOR_GC_THRESHOLDS  # a tuned the collector
        b.start()
        assert b_runs.wait(10)
        a_may_end.set()
        a.join(10)
        assert gc.get_threshold() == running.OPERATOR_GC_THRESHOLDS  # b still runs
        b_may_end.set()
        b.join(10)
        assert gc.get_threshold() == running.PYTHON_GC_THRESHOLDS
    finally:
        a_may_end.set()
        b_may_end.set()
        gc.set_threshold(*before)
        gc.unfreeze()


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        ((700, 10, 10), (10_000, 20, 10)),  # Python's defaults: the operator's
        ((50_000, 10, 10), (50_000, 10, 10)),  # the program's own tuning stays
        ((0, 10, 10), (0, 10, 10)),  # a program that turned collection off keeps it off
    ],
)
def test_gc_thresholds(current: tuple[int, ...], expected: tuple[int, ...]) -> None:
    assert running.gc_thresholds(current) == expected


HANDLERS = """
import anyop

@anyop.on.create("kopfexamples")
def create_fn(**_):
    pass

@anyop.daemon("kopfexamples")
async def watcher(**_):
    pass
"""


@pytest.fixture
def default_registry(monkeypatch: pytest.MonkeyPatch) -> OperatorRegistry:
    """A fresh default registry for the decorators of the loaded code; the old one comes back."""
    fresh = OperatorRegistry()
    monkeypatch.setattr(registry_module, "_default_registry", fresh)
    return fresh


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path; what is imported from it is forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [name for name in sys.modules if name.startswith("anyop_loading_")]:
        del sys.modules[name]


def test_a_module_is_imported_by_name_and_its_handlers_registered(
    importable: Path, default_registry: OperatorRegistry
) -> None:
    package = importable / "anyop_loading_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "handlers.py").write_text(HANDLERS)
    load_sources(modules=["anyop_loading_pkg.handlers"])
    assert "anyop_loading_pkg.handlers" in sys.modules
    assert [h.id for h in default_registry.changing.handlers] == ["create_fn"]
    assert [h.id for h in default_registry.spawning.handlers] == ["watcher"]


def test_files_and_modules_load_together(
    importable: Path, default_registry: OperatorRegistry
) -> None:
    (importable / "anyop_loading_module.py").write_text(HANDLERS)
    (importable / "anyop_loading_file.py").write_text(
        "import anyop\n\n@anyop.on.delete('kopfexamples')\ndef delete_fn(**_):\n    pass\n"
    )
    load_sources([importable / "anyop_loading_file.py"], ["anyop_loading_module"])
    assert [h.id for h in default_registry.changing.handlers] == ["delete_fn", "create_fn"]


def test_a_missing_module_is_named(importable: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot import the operator module 'anyop_loading_nope'"):
        load_sources(modules=["anyop_loading_nope"])


def test_a_module_that_fails_its_own_import_names_what_it_lacks(importable: Path) -> None:
    (importable / "anyop_loading_broken.py").write_text("import anyop_loading_lacking\n")
    expected = r"module 'anyop_loading_broken': No module named 'anyop_loading_lacking'"
    with pytest.raises(ConfigError, match=expected):
        load_sources(modules=["anyop_loading_broken"])
