"""Which handler results can be stored in the status."""

from __future__ import annotations

import datetime
import enum

import pytest

from anyop.handlers.outcomes import unstorable


@pytest.mark.parametrize("result", [None, "text", 1, 1.5, True, [1, "a"], {"a": {"b": [None]}}])
def test_json_results_are_storable(result: object) -> None:
    assert unstorable(result) is None


def test_an_object_is_named_by_its_type() -> None:
    reason = unstorable({"when": datetime.datetime(2026, 1, 1)})
    assert reason is not None
    assert "not JSON serializable" in reason
    assert "a dict was returned" in reason


def test_nan_is_not_storable() -> None:
    reason = unstorable(float("nan"))
    assert reason is not None
    assert "a float was returned" in reason


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@pytest.mark.parametrize(
    "result",
    [
        ("a", 1),  # a tuple is stored as a list
        {1: "int keys become strings"},
        {"deep": [[[[[[[[[["deeper than the quick check looks"]]]]]]]]]]},
        Level.HIGH,  # a subclass of int
        {"ratio": 0.5, "ok": False, "none": None},
        {"big": 2**70, "negative": -(2**70)},
    ],
)
def test_what_the_encoder_takes_is_storable_also_past_the_quick_check(result: object) -> None:
    assert unstorable(result) is None


@pytest.mark.parametrize(
    "result",
    [
        {"a": [1, float("inf")]},
        {"a": {"b": {1, 2}}},
        [{"when": datetime.date(2026, 1, 1)}],
        {"deep": [[[[[[[[[[float("nan")]]]]]]]]]]},
        pytest.param(10**5000, id="more-digits-than-int-to-text-allows"),
        pytest.param({"n": [10**5000]}, id="nested-more-digits"),
    ],
)
def test_what_the_encoder_refuses_is_unstorable_wherever_it_is_nested(result: object) -> None:
    assert unstorable(result) is not None
