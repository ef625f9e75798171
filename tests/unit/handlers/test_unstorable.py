"""Which handler results can be stored in the status."""

from __future__ import annotations

import datetime

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
