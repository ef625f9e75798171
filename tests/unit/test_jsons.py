"""Compact JSON text as anyop writes it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from anyop._jsons import compact


@pytest.mark.parametrize(
    "value", [{"a": [1, 2.5, None, True]}, "text with \u00e9", [], {"nested": {"x": "y"}}]
)
def test_compact_is_json_dumps_without_spaces(value: Any) -> None:
    assert compact(value) == json.dumps(value, separators=(",", ":"))


def test_compact_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="set"):
        compact({"a": {1, 2}})
