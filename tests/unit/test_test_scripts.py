"""scripts/test's helpers: the split of the suite into runs side by side, and the layers' lines."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> types.ModuleType:
    """A script of ``scripts/lib`` as a module (registered: its dataclasses look it up)."""
    qualified = f"anyop_scripts_{name}"
    spec = importlib.util.spec_from_file_location(
        qualified, ROOT / "scripts" / "lib" / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = sys.modules[qualified] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


split = _script("split")
layers = _script("layers")

files = st.lists(st.from_regex(r"tests/unit/test_[a-z]{1,8}\.py", fullmatch=True), unique=True)


@given(files=files, runs=st.integers(1, 5), seed=st.integers(0, 2**31), data=st.data())
def test_every_file_is_in_one_run_and_the_same_seed_gives_the_same_runs(
    files: list[str], runs: int, seed: int, data: st.DataObject
) -> None:
    times = st.floats(0.1, 300, allow_nan=False)
    durations = data.draw(st.dictionaries(st.sampled_from(files), times) if files else st.just({}))
    groups = split.split(files, runs, seed=seed, durations=durations)
    assert len(groups) == runs
    assert sorted(f for group in groups for f in group) == sorted(files)
    assert groups == split.split(list(reversed(files)), runs, seed=seed, durations=durations)


def test_the_runs_take_about_the_same_time() -> None:
    durations = {f"tests/e2e/test_{i}.py": float(10 + i % 7 * 20) for i in range(60)}
    groups = split.split(sorted(durations), 3, seed=1, durations=durations)
    loads = [sum(durations[f] for f in group) for group in groups]
    assert max(loads) - min(loads) <= max(durations.values())


def test_a_file_not_timed_counts_as_the_median() -> None:
    durations = {
        "tests/a/test_long.py": 100.0,
        "tests/a/test_short.py": 1.0,
        "tests/a/test_mid.py": 2.0,
    }
    groups = split.split([*durations, "tests/a/test_new.py"], 2, seed=3, durations=durations)
    assert ["tests/a/test_long.py"] in groups  # the three others (1 + 2 + 2) go together


def test_no_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        split.split(["tests/test_a.py"], 0, seed=1, durations={})


def test_the_files_under_folders_less_the_ignored_ones() -> None:
    found = split.test_files(["tests/unit", "--ignore=tests/unit/test_release.py"])
    assert "tests/unit/test_test_scripts.py" in found
    assert "tests/unit/test_release.py" not in found
    assert all(Path(f).name.startswith("test_") for f in found)


def _junit(path: Path, **outcomes: int) -> Path:
    cases = []
    for layer, count in outcomes.items():
        failing = "<failure message='x'/>" if layer.endswith("_failed") else ""
        folder = layer.removesuffix("_failed")
        cases += [f"<testcase classname='tests.{folder}.test_x' name='t{i}' time='2.0'>{failing}"
                  "</testcase>" for i in range(count)]  # fmt: skip
    path.write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>")
    return path


def test_runs_side_by_side_add_up_in_their_layers_with_their_wall_time(tmp_path: Path) -> None:
    one = _junit(tmp_path / "main-1.xml", unit=3, e2e=1)
    two = _junit(tmp_path / "main-2.xml", unit=1, e2e_failed=2)
    log = [
        "step lint 0 1 0",
        f"junit main-1 100 400 0 {one}",
        f"junit main-2 100 700 1 {two}",
    ]
    text = layers.report(layers.parse(log))
    lines = {line.split()[0]: line for line in text.splitlines()}
    assert "4 passed, 0 failed" in lines["unit"]
    assert "0:08" in lines["unit"]
    assert "1 passed, 2 failed" in lines["e2e"]
    assert "10:00" in lines["main"]
    assert "(2 runs)" in lines["main"]
    assert text.splitlines()[-1] == "total: 5 passed, 2 failed, 0 skipped"


def test_a_run_that_left_no_report_is_a_failed_layer(tmp_path: Path) -> None:
    text = layers.report(layers.parse([f"junit lowest-versions-1 0 60 2 {tmp_path / 'none.xml'}"]))
    assert "FAILED (exit code 2)" in text
