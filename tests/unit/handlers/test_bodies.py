"""Body views and the memo."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from anyop.handlers.bodies import Body, Memo


def raw_body() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "ex1",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"app": "demo"},
            "annotations": {"note": "x"},
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {"field": "value"},
    }


def test_body_exposes_kopf_accessors() -> None:
    body = Body(raw_body())
    assert body.spec["field"] == "value"
    assert body.meta is not None
    assert body.metadata.name == "ex1"
    assert (body.meta.namespace, body.meta.uid) == ("ns", "u-1")
    assert body.meta.labels == {"app": "demo"}
    assert body.meta.annotations == {"note": "x"}
    assert body.meta.creation_timestamp == "2024-01-01T00:00:00Z"
    assert body.meta.deletion_timestamp is None


def test_missing_stanzas_read_as_empty() -> None:
    body = Body({})
    assert dict(body.status) == {}
    assert len(body.spec) == 0
    assert body.meta.labels == {}
    assert body.meta.name is None


def test_views_are_live_over_the_raw_dict() -> None:
    raw = raw_body()
    body = Body(raw)
    spec = body.spec
    raw["spec"] = {"field": "changed"}
    raw.setdefault("status", {})["phase"] = "Running"
    assert spec["field"] == "changed"
    assert body.status == {"phase": "Running"}


def test_replace_with_swaps_the_content_seen_by_existing_views() -> None:
    body = Body(raw_body())
    spec = body.spec
    body.replace_with({"spec": {"field": "new"}})
    assert spec == {"field": "new"}
    assert body.meta.name is None
    assert repr(spec) == "{'field': 'new'}"


def test_replace_with_needs_a_mutable_source() -> None:
    body = Body(Body(raw_body()))
    with pytest.raises(TypeError, match="mutable"):
        body.replace_with({})


def test_views_are_read_only() -> None:
    body = Body(raw_body())
    with pytest.raises(TypeError):
        body.spec["x"] = 1  # type: ignore[index]


def test_memo_allows_attribute_and_key_access() -> None:
    memo = Memo()
    memo.counter = 1
    memo["other"] = 2
    assert memo["counter"] == 1
    assert memo.other == 2
    del memo.counter
    assert "counter" not in memo
    with pytest.raises(AttributeError, match="no field 'missing'"):
        _ = memo.missing
    with pytest.raises(AttributeError):
        del memo.missing


def test_memo_copies_are_shallow_and_keep_the_type() -> None:
    shared: list[int] = []
    memo = Memo(children=shared)
    clone = copy.copy(memo)
    clone.extra = True
    assert isinstance(clone, Memo)
    assert clone.children is shared
    assert "extra" not in memo
    assert repr(memo) == "Memo({'children': []})"
