"""Unit tests: which parts of an updated custom resource are as they were (ratcheting)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake.ratcheting import correlated_items, unchanged

PORTS: dict[str, Any] = {
    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
    "items": {"type": "object", "properties": {"name": {"type": "string"},
                                               "port": {"type": "integer"}}},
}  # fmt: skip
SPEC: dict[str, Any] = {"type": "object", "properties": {
    "ports": PORTS, "tags": {"type": "array", "items": {"type": "string"}},
    "size": {"type": "integer"}, "free": {"type": "object"},
    "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
}}  # fmt: skip


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ({"size": 1}, {"size": 1}, True),
        ({"size": 1}, {"size": 1.0}, False),  # type for type, as Go's reflect.DeepEqual
        ({"size": 1}, {"size": 2}, False),
        ({"size": 1}, {"size": 1, "tags": []}, False),
        (
            {"ports": [{"name": "a"}, {"name": "b"}]},
            {"ports": [{"name": "b"}, {"name": "a"}]},
            True,
        ),
        ({"tags": ["a", "b"]}, {"tags": ["b", "a"]}, False),  # an atomic list: in order
        ({"limits": {"a": 1}}, {"limits": {"a": 1}}, True),
        ({"free": {"x": 1}}, {"free": {"x": 1}}, False),  # a field without a schema: changed
        ({"size": None}, {"size": None}, True),
    ],
)
def test_unchanged_walks_what_kube_apiserver_correlates(
    new: dict[str, Any], old: dict[str, Any], expected: bool
) -> None:
    assert unchanged(new, old, SPEC) is expected


def test_a_map_list_s_items_are_correlated_by_their_keys_and_no_other_list_s() -> None:
    old = [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    new = [{"name": "b", "port": 3}, {"name": "c"}]
    assert correlated_items(new, old, PORTS) == [{"name": "b", "port": 2}, None]
    assert correlated_items(["x"], ["x"], SPEC["properties"]["tags"]) is None
