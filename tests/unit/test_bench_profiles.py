"""Reading py-spy's folded stacks (``bench/profiles.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import profiles

FOLDED = """\
main (run.py:1);cycle (anyop/engine/cycle/reconciler.py:10);patch (anyop/engine/cycle/patch_writer.py:5) 6
main (run.py:1);cycle (anyop/engine/cycle/reconciler.py:12);detect (anyop/handlers/causes.py:7) 3
main (run.py:1);cycle (anyop/engine/cycle/reconciler.py:12) 1
main (run.py:1);BaseEventLoop._run_once (base_events.py:9);EpollSelector.select (selectors.py:4) 50
Thread._bootstrap (threading.py:1);Worker.run (_asyncio.py:3);Condition.wait (threading.py:2) 4
run (trio/_run.py:1);EpollIOManager.get_events (trio/_core/_io_epoll.py:8) 30
main (run.py:1);watch (anyop/kube/watch.py:3) 10
not a folded line
"""


def stacks() -> list[tuple[list[str], int]]:
    return list(profiles.samples(FOLDED.splitlines()))


def test_frames_are_named_by_function_and_file() -> None:
    name = profiles.frame_name("Reconciler._cycle (/work/src/anyop/engine/cycle/reconciler.py:202)")
    assert name == "Reconciler._cycle (reconciler.py)"
    assert profiles.frame_name("<module> (<frozen runpy>)") == "<module> (<frozen runpy>)"


def test_waits_and_malformed_lines_are_not_busy_samples() -> None:
    assert [count for _, count in stacks()] == [6, 3, 1, 10]


def test_inclusive_shares_count_each_function_once_per_sample() -> None:
    total, ranked = profiles.shares(stacks())
    assert total == 20
    assert ranked[:2] == [(1.0, "main (run.py)"), (0.5, "cycle (reconciler.py)")]
    assert (0.3, "patch (patch_writer.py)") in ranked


def test_shares_under_a_function_and_of_innermost_frames() -> None:
    total, ranked = profiles.shares(stacks(), under="cycle", inclusive=False)
    assert total == 10
    assert ranked == [
        (0.6, "patch (patch_writer.py)"),
        (0.3, "detect (causes.py)"),
        (0.1, "cycle (reconciler.py)"),
    ]
    assert profiles.shares(stacks(), under="nothing such") == (0, [])


def test_the_command_prints_the_shares(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.folded"
    path.write_text(FOLDED)
    profiles.main([str(path), "--under", "cycle", "--top", "1"])
    assert capsys.readouterr().out.splitlines() == [
        "10 busy samples through cycle",
        "100.0 %  cycle (reconciler.py)",
    ]


def test_attaching_without_py_spy_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(profiles.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(profiles.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="nox -s bench"):
        profiles.attach(1, Path("x.folded"))


def test_py_spy_next_to_this_python_is_found_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "py-spy").write_text("")
    monkeypatch.setattr(profiles.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(profiles.shutil, "which", lambda name: "/elsewhere/py-spy")
    assert profiles.py_spy() == str(tmp_path / "py-spy")


def test_the_command_names_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        profiles.main(["/nonexistent/run.folded"])
    assert "no such file: /nonexistent/run.folded" in capsys.readouterr().err
