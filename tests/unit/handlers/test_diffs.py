"""Field paths, diffs, and essences."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.handlers.diffs import (
    EMPTY,
    Diff,
    DiffItem,
    DiffOperation,
    cherrypick,
    diff,
    ensure,
    essence,
    json_copy,
    managed_prefixes,
    parse_field,
    reduce,
    remove,
    resolve,
)


def test_fields_parse_from_dotted_strings_and_lists() -> None:
    assert parse_field("spec.field") == ("spec", "field")
    assert parse_field(["spec", "a.b"]) == ("spec", "a.b")
    assert parse_field(None) == ()
    assert parse_field("") == ()


@pytest.mark.parametrize("bad", [123, ["spec", 1], {"spec": "x"}])
def test_fields_of_other_types_are_rejected(bad: Any) -> None:
    with pytest.raises(TypeError, match="dotted string or a list of strings"):
        parse_field(bad)


def test_resolve_walks_mappings_and_falls_back_to_the_default() -> None:
    data = {"spec": {"a": {"b": 1}, "s": "text"}}
    assert resolve(data, ("spec", "a", "b")) == 1
    assert resolve(data, ("spec", "missing"), "dflt") == "dflt"
    assert resolve(data, ("spec", "s", "x"), None) is None  # through a non-mapping
    assert resolve(None, ("spec",), None) is None
    with pytest.raises(KeyError):
        resolve(data, ("spec", "missing"))


def test_ensure_creates_parents_and_remove_prunes_emptied_ones() -> None:
    data: dict[str, Any] = {"spec": "not-a-dict"}
    ensure(data, ("spec", "a", "b"), 1)
    assert data == {"spec": {"a": {"b": 1}}}
    remove(data, ("spec", "a", "b"))
    assert data == {}
    remove(data, ("spec", "nothing"))  # absent: no error
    with pytest.raises(ValueError, match="root"):
        remove(data, ())
    with pytest.raises(ValueError, match="root"):
        ensure(data, (), 1)


def test_cherrypick_copies_existing_fields_deeply() -> None:
    src = {"status": {"phase": {"name": "Running"}}}
    dst: dict[str, Any] = {}
    cherrypick(src, dst, [("status", "phase"), ("status", "missing")])
    assert dst == {"status": {"phase": {"name": "Running"}}}
    assert dst["status"]["phase"] is not src["status"]["phase"]


def test_diff_reports_added_removed_and_changed_fields() -> None:
    old = {"spec": {"a": 1, "b": 2, "l": [1]}}
    new = {"spec": {"a": 9, "c": 3, "l": [1, 2]}}
    assert diff(old, new) == (
        ("add", ("spec", "c"), None, 3),
        ("remove", ("spec", "b"), 2, None),
        ("change", ("spec", "a"), 1, 9),
        ("change", ("spec", "l"), [1], [1, 2]),
    )


def test_diff_treats_none_as_absence() -> None:
    assert diff(None, {"a": 1}) == (("add", (), None, {"a": 1}),)
    assert diff({"a": 1}, None) == (("remove", (), {"a": 1}, None),)
    assert diff({"a": None}, {}) == EMPTY
    assert not diff({"x": [1]}, {"x": [1]})


def test_diff_items_have_kopf_shape_and_accessors() -> None:
    (item,) = diff({"a": 1}, {"a": 2})
    assert isinstance(item, DiffItem)
    assert item.op is DiffOperation.CHANGE
    assert item.operation == "change"
    assert (item.field, item.old, item.new) == (("a",), 1, 2)
    assert str(item.op) == "change"
    assert repr(item) == "('change', ('a',), 1, 2)"


def test_a_diff_under_a_path_given_as_a_list_has_tuple_fields() -> None:
    (item,) = diff(1, 2, ["spec", "x"])  # type: ignore[arg-type]
    assert item.field == ("spec", "x")
    assert diff(1, 2, ["spec", "x"]) == Diff([("change", ("spec", "x"), 1, 2)])  # type: ignore[arg-type]
    assert hash(diff({"a": 1}, {"a": 2})) == hash(Diff([("change", ["a"], 1, 2)]))


def test_diffs_are_hashable_sequences_equal_to_plain_tuples() -> None:
    d = Diff([("add", ["spec", "x"], None, 1)])
    assert d == [("add", ("spec", "x"), None, 1)]
    assert d[0].field == ("spec", "x")
    assert len(d[:1]) == 1
    assert hash(d) == hash(Diff([("add", ("spec", "x"), None, 1)]))
    assert d != 5
    assert repr(d) == "(('add', ('spec', 'x'), None, 1),)"


def test_reduce_makes_nested_changes_relative_to_the_field() -> None:
    d = diff({"spec": {"f": {"a": 1}, "g": 1}}, {"spec": {"f": {"a": 2}, "g": 2}})
    assert reduce(d, ("spec", "f")) == (("change", ("a",), 1, 2),)


def test_reduce_turns_a_whole_parent_change_into_the_field_change() -> None:
    d = diff({}, {"spec": {"f": "new", "g": 1}})
    assert reduce(d, ("spec", "f")) == (("add", (), None, "new"),)
    assert reduce(d, ("spec", "missing")) == ()


def test_reduce_to_the_root_keeps_everything() -> None:
    d = diff({"a": 1}, {"a": 2})
    assert reduce(d, ()) == d


def test_managed_prefixes_detect_anyop_kopf_their_subdomains_and_marked_prefixes() -> None:
    keys = [
        "kopf.zalando.org/create_fn",
        "my-op.kopf.zalando.org/x",
        "anyop.dev/last-handled-configuration",
        "example.com/kopf-managed",
        "example.com/whatever",
        "other.io/keep",
        "plainkey",
    ]
    assert managed_prefixes(keys) == {
        "kopf.zalando.org",
        "my-op.kopf.zalando.org",
        "anyop.dev",
        "example.com",
    }


BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {
        "name": "ex1",
        "uid": "123",
        "resourceVersion": "42",
        "labels": {"app": "demo"},
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "kopf.zalando.org/last-handled-configuration": "{}",
            "anyop.dev/create_fn": "{}",
            "user.io/note": "keep me",
        },
    },
    "spec": {"field": "value"},
    "status": {"phase": "Running", "create_fn": {"message": "hello"}},
}


def test_essence_keeps_spec_labels_and_user_annotations_only() -> None:
    assert essence(BODY) == {
        "spec": {"field": "value"},
        "metadata": {"labels": {"app": "demo"}, "annotations": {"user.io/note": "keep me"}},
    }


def test_essence_drops_empty_stanzas() -> None:
    body = {"metadata": {"labels": {}, "annotations": {"anyop.dev/x": "1"}}, "spec": {}}
    assert essence(body) == {"spec": {}}


def test_essence_keeps_extra_status_fields_for_field_handlers() -> None:
    result = essence(BODY, [("status", "phase"), ("status", "missing")])
    assert result["status"] == {"phase": "Running"}


def test_essence_is_a_deep_copy() -> None:
    result = essence(BODY)
    result["spec"]["field"] = "changed"
    result["metadata"]["labels"]["app"] = "changed"
    assert BODY["spec"]["field"] == "value"
    assert BODY["metadata"]["labels"]["app"] == "demo"


def test_essence_of_an_essence_is_the_same() -> None:
    once = essence(BODY)
    assert essence(once) == once


def test_a_json_copy_is_deep_and_equal() -> None:
    body = {"spec": {"items": [{"a": 1, "b": [True, None, 1.5, "x"]}]}, "n": 0}
    copied = json_copy(body)
    assert copied == body
    copied["spec"]["items"][0]["b"].append("more")
    copied["spec"]["items"][0]["a"] = 2
    assert body == {"spec": {"items": [{"a": 1, "b": [True, None, 1.5, "x"]}]}, "n": 0}


def test_what_is_not_plain_json_is_deep_copied_as_usual() -> None:
    class Thing:
        def __init__(self) -> None:
            self.items = [1]

    nested = [1, 2]
    value = {"tuple": (nested,), "thing": Thing()}
    copied = json_copy(value)
    assert copied["tuple"] == ([1, 2],)
    assert copied["tuple"][0] is not nested
    assert copied["thing"] is not value["thing"]
    assert copied["thing"].items == [1]
    assert copied["thing"].items is not value["thing"].items
