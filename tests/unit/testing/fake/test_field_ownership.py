"""Field sets and their ``fieldsV1`` documents (pure): generated sets against the definitions."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from anyop.testing.fake.field_ownership import Path, from_fields_v1, to_fields_v1
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.managed_fields import owners_after_update

ELEMENTS = st.tuples(st.sampled_from("fkvi"), st.sampled_from(["a", "b", '{"name":"x"}', "0"]))
PATHS = st.lists(ELEMENTS, min_size=1, max_size=4).map(tuple)


def by_definition(fields: set[Path]) -> dict[str, Any]:
    """``fieldsV1`` as the format defines it: a node per element; an item (``k:``/``i:``) with
    fields of its own also owned itself (``.``)."""
    root: dict[str, Any] = {}
    for path in sorted(fields):
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
        extended = any(other[: len(path)] == path and other != path for other in fields)
        if path[-1][0] in ("k", "i") and extended:
            node["."] = {}
    return root


@settings(max_examples=300, deadline=None)
@given(st.sets(PATHS, max_size=12))
def test_a_field_set_becomes_the_document_its_definition_gives(fields: set[Path]) -> None:
    assert to_fields_v1(fields) == by_definition(fields)


@settings(max_examples=300, deadline=None)
@given(st.sets(PATHS, max_size=12))
def test_a_document_reads_back_as_its_field_set_where_the_format_can_say_it(
    fields: set[Path],
) -> None:
    # A field or set item with fields under it is not owned itself: no mark says so (only
    # list items, `k:` and `i:`, have one: `.`).
    sayable = {
        path
        for path in fields
        if path[-1][0] in ("k", "i")
        or not any(other[: len(path)] == path and other != path for other in fields)
    }
    assert from_fields_v1(to_fields_v1(sayable)) == sayable


CONFIGMAPS = Kind("", "v1", "configmaps", "configmap", "ConfigMap")


def test_an_update_keeps_the_documents_of_the_owners_it_does_not_touch() -> None:
    """Another manager's entry whose fields the update leaves alone stays as stored; the one
    that loses a field is rewritten; the updater gets its own entry."""
    now = "2026-11-29T00:00:00Z"
    created = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    created["metadata"]["managedFields"] = owners_after_update(
        CONFIGMAPS, None, created, manager="first", subresource=None, now=now
    )
    second = {**created, "metadata": dict(created["metadata"]), "data": {"a": "1", "b": "3"}}
    owners = owners_after_update(
        CONFIGMAPS, created, second, manager="second", subresource=None, now=now
    )
    assert [entry["manager"] for entry in owners] == ["first", "second"]
    assert owners[0]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert owners[1]["fieldsV1"] == {"f:data": {"f:b": {}}}
    third = {**second, "metadata": {**second["metadata"], "managedFields": owners},
             "data": {"a": "1", "b": "3", "c": "4"}}  # fmt: skip
    after = owners_after_update(
        CONFIGMAPS,
        third | {"data": second["data"]},
        third,
        manager="third",
        subresource=None,
        now=now,
    )
    assert after[0]["fieldsV1"] is owners[0]["fieldsV1"]  # kept, not rewritten
    assert after[2]["fieldsV1"] == {"f:data": {"f:c": {}}}
