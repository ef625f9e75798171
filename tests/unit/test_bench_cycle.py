"""The engine micro-benchmark's smoke mode: small N, so it does not rot (no timing is asserted)."""

from __future__ import annotations

import gc

import anyio
import pytest
from bench import cycle

from anyop.engine.operator.launch import OPERATOR_GC_THRESHOLDS


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_object_is_handled_with_one_patch_and_its_echo_is_handled_too(backend: str) -> None:
    spent = anyio.run(cycle.run, 20, backend=backend)  # it raises unless all 20 are handled
    assert spent >= 0


def test_a_broken_engine_fails_the_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    async def ignored(name: str, **_: object) -> None:
        return None  # no result: nothing lands in status.create_fn

    monkeypatch.setattr(cycle, "create_fn", ignored)
    with pytest.raises(RuntimeError, match="0 of 5 objects handled"):
        anyio.run(cycle.run, 5)


def test_the_command_prints_the_medians(capsys: pytest.CaptureFixture[str]) -> None:
    cycle.main(["--objects", "10", "--repeats", "2", "--backends", "asyncio", "trio"])
    out = capsys.readouterr().out
    assert "asyncio: " in out
    assert "trio: " in out
    assert "us per object (median of 2)" in out


def test_the_collector_is_tuned_only_while_it_measures() -> None:
    before = gc.get_threshold()
    with cycle.tuned_collector():
        assert gc.get_threshold() == OPERATOR_GC_THRESHOLDS
    assert gc.get_threshold() == before


def test_an_engine_that_stops_patching_fails_the_benchmark_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def never(*_: object, **__: object) -> None:
        await anyio.sleep_forever()

    monkeypatch.setattr(cycle.Server, "patch", never)
    with pytest.raises(RuntimeError, match=r"0 patches and 0 of 6 cycles in 0.2 s"):
        anyio.run(cycle.run, 3, 0.2)


def test_the_cycles_mode_times_the_create_and_the_echo_cycle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cycle.main(["--cycles", "--objects", "10", "--repeats", "1", "--backends", "trio"])
    assert "trio: create cycle " in capsys.readouterr().out


def test_a_create_cycle_that_does_not_patch_fails_the_cycles_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def ignored(*_: object, **__: object) -> None:
        return None

    monkeypatch.setattr(cycle.Server, "patch", ignored)
    with pytest.raises(RuntimeError, match="kex-0: its create cycle sent no patch"):
        anyio.run(cycle.cycles, 3)
