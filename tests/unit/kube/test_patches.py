"""Merge-patches, JSON patches, and their checks."""

from __future__ import annotations

import copy
import pickle
from collections.abc import MutableMapping
from typing import Any

import pytest

from anyop.kube.patches import (
    JsonPatchError,
    Patch,
    apply_json_patch,
    format_inconsistencies,
    inconsistencies,
    json_equal,
    json_patch_diff,
    json_patch_from_fns,
    merge,
    pointer,
    split_json_patch,
    split_status,
    with_resource_version,
)

BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "ex1", "resourceVersion": "42", "finalizers": ["a", "b"]},
    "spec": {"field": "value", "items": [1, 2, 3]},
}


def test_patch_accessors_create_stanzas_on_write() -> None:
    patch = Patch()
    patch.spec["x"] = 1
    patch.status["create_fn"] = {"message": "hello"}
    patch.meta.labels["app"] = "demo"
    patch.metadata.annotations["note"] = None
    assert patch == {
        "spec": {"x": 1},
        "status": {"create_fn": {"message": "hello"}},
        "metadata": {"labels": {"app": "demo"}, "annotations": {"note": None}},
    }


def test_patch_accessors_read_missing_stanzas_as_empty_without_creating_them() -> None:
    patch = Patch()
    assert dict(patch.spec) == {}
    assert len(patch.meta.labels) == 0
    assert "status" not in patch
    assert not patch


def test_patch_view_deletes_keys_and_fails_on_missing_ones() -> None:
    patch = Patch({"spec": {"x": 1}})
    del patch.spec["x"]
    assert patch == {"spec": {}}
    with pytest.raises(KeyError):
        del patch.spec["x"]


def test_patch_with_only_fns_is_truthy() -> None:
    patch = Patch()
    patch.fns.append(lambda body: None)
    assert patch
    assert Patch(patch).fns == patch.fns


def test_merge_applies_rfc7386_with_none_deleting_and_lists_replacing() -> None:
    result = merge(BODY, {"spec": {"field": None, "items": [9], "new": {"a": 1}}})
    assert result["spec"] == {"items": [9], "new": {"a": 1}}
    assert BODY["spec"]["field"] == "value"  # the input is not changed


def test_merge_replaces_non_mappings_and_creates_missing_parents() -> None:
    assert merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    assert merge({}, {"a": {"b": None, "c": 3}}) == {"a": {"c": 3}}
    assert merge({"a": 1}, [1, 2]) == [1, 2]


def test_json_equal_tells_booleans_from_integers() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal({"a": True}, {"a": 1})
    assert not json_equal([1], {"0": 1})
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})


def test_pointer_escapes_tilde_and_slash() -> None:
    assert pointer(["metadata", "annotations", "kopf.zalando.org/a~b"]) == (
        "/metadata/annotations/kopf.zalando.org~1a~0b"
    )
    assert pointer(["x", 0]) == "/x/0"


def test_json_patch_diff_of_dicts_uses_add_remove_replace() -> None:
    ops = json_patch_diff({"a": 1, "b": 2, "c": {"d": 1}}, {"a": 1, "c": {"d": 2}, "e": 5})
    assert ops == [
        {"op": "remove", "path": "/b"},
        {"op": "replace", "path": "/c/d", "value": 2},
        {"op": "add", "path": "/e", "value": 5},
    ]


def test_json_patch_diff_appends_to_lists_with_a_dash() -> None:
    assert json_patch_diff({"f": ["a"]}, {"f": ["a", "b"]}) == [
        {"op": "add", "path": "/f/-", "value": "b"}
    ]


def test_json_patch_diff_removes_a_middle_list_item_by_index() -> None:
    assert json_patch_diff({"f": ["a", "x", "b"]}, {"f": ["a", "b"]}) == [
        {"op": "remove", "path": "/f/1"}
    ]


def test_json_patch_diff_inserts_in_the_middle_by_index() -> None:
    assert json_patch_diff({"f": ["a", "b"]}, {"f": ["a", "x", "b"]}) == [
        {"op": "add", "path": "/f/1", "value": "x"}
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"f": [1, 2, 3]}, {"f": [3, 2, 1]}),
        ({"f": [{"a": 1}, {"b": 2}]}, {"f": [{"a": 1, "c": 3}]}),
        ({"f": []}, {"f": [1, 2]}),
        ({"f": [1, 2]}, {}),
        ({"a/b": {"c~d": 1}}, {"a/b": {"c~d": 2, "e": [True]}}),
        ({"x": 1}, {"x": {"nested": [1]}}),
    ],
)
def test_json_patch_diff_applied_to_old_gives_new(old: Any, new: Any) -> None:
    assert apply_json_patch(old, json_patch_diff(old, new)) == new


def test_json_patch_from_fns_starts_with_a_resource_version_test() -> None:
    def add_condition(body: MutableMapping[str, Any]) -> None:
        body.setdefault("status", {}).setdefault("conditions", []).append({"type": "Ready"})

    ops = json_patch_from_fns(BODY, [add_condition])
    assert ops == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/status", "value": {"conditions": [{"type": "Ready"}]}},
    ]
    assert "status" not in BODY  # fns work on a copy


def test_json_patch_from_fns_accepts_fns_that_return_a_new_body() -> None:
    ops = json_patch_from_fns({"spec": {}}, [lambda body: {**body, "spec": {"x": 1}}])
    assert ops[1:] == [{"op": "add", "path": "/spec/x", "value": 1}]


def test_json_patch_from_fns_without_changes_is_empty() -> None:
    assert json_patch_from_fns(BODY, [lambda body: None]) == []
    assert json_patch_from_fns(BODY, []) == []


def test_with_resource_version_repoints_only_the_version_test() -> None:
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "test", "path": "/spec/x", "value": "1"},
    ]
    assert with_resource_version(ops, "2") == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "2"},
        {"op": "test", "path": "/spec/x", "value": "1"},
    ]


def test_apply_json_patch_supports_all_rfc6902_operations() -> None:
    doc = {"a": {"b": 1}, "l": [1, 2], "x~/y": 0}
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/a/b", "value": 1},
        {"op": "add", "path": "/l/0", "value": 0},
        {"op": "remove", "path": "/l/2"},
        {"op": "replace", "path": "/a/b", "value": 2},
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "move", "from": "/x~0~1y", "path": "/z"},
    ]
    assert apply_json_patch(doc, ops) == {"a": {"b": 2}, "l": [0, 1], "c": {"b": 2}, "z": 0}
    assert doc == {"a": {"b": 1}, "l": [1, 2], "x~/y": 0}


def test_apply_json_patch_replaces_the_root() -> None:
    assert apply_json_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "remove", "path": "/spec/missing"},
        {"op": "replace", "path": "/missing", "value": 1},
        {"op": "add", "path": "/spec/items/9", "value": 1},
        {"op": "add", "path": "/spec/items/01", "value": 1},
        {"op": "add", "path": "/spec/field/x", "value": 1},
        {"op": "frobnicate", "path": "/spec"},
        {"op": "add", "path": "spec", "value": 1},
    ],
)
def test_apply_json_patch_rejects_failed_tests_missing_paths_and_bad_ops(op: Any) -> None:
    with pytest.raises(JsonPatchError):
        apply_json_patch(BODY, [op])


def test_split_status_separates_the_status_stanza_and_keeps_fns_on_the_main_part() -> None:
    patch = Patch({"metadata": {"labels": {"a": "b"}}, "status": {"fn": 1}})
    patch.fns.append(lambda body: None)
    main, status = split_status(patch)
    assert main == {"metadata": {"labels": {"a": "b"}}}
    assert main.fns == patch.fns
    assert status == {"status": {"fn": 1}}
    assert not status.fns


def test_split_status_of_a_status_only_patch_leaves_the_main_part_empty() -> None:
    main, status = split_status(Patch({"status": {"x": 1}}))
    assert not main
    assert status == {"status": {"x": 1}}


def test_split_json_patch_gives_each_endpoint_its_ops_with_the_test() -> None:
    test = {"op": "test", "path": "/metadata/resourceVersion", "value": "1"}
    spec = {"op": "add", "path": "/spec/x", "value": 1}
    status = {"op": "add", "path": "/status/conditions/-", "value": {}}
    assert split_json_patch([test, spec, status]) == ([test, spec], [test, status])
    assert split_json_patch([test, spec]) == ([test, spec], [])


def test_inconsistencies_report_pruned_status_fields() -> None:
    patch = {"status": {"create_fn": {"message": "hello"}}, "spec": {"x": 1}}
    echoed = {"spec": {"x": 1, "y": 2}, "metadata": {}}
    found = inconsistencies(patch, echoed)
    assert found == (("remove", ("status",), {"create_fn": {"message": "hello"}}, None),)
    assert format_inconsistencies(found) == (
        "Patching failed with inconsistencies: "
        "(('remove', ('status',), {'create_fn': {'message': 'hello'}}, None),)"
    )


def test_inconsistencies_report_deletions_that_did_not_happen_and_changed_values() -> None:
    found = inconsistencies({"spec": {"a": None, "b": 1}}, {"spec": {"a": 5, "b": 2}})
    assert found == (("add", ("spec", "a"), None, 5), ("change", ("spec", "b"), 1, 2))


def test_inconsistencies_ignore_emptied_labels_annotations_and_finalizers() -> None:
    patch: dict[str, Any] = {"metadata": {"labels": {}, "annotations": {}, "finalizers": []}}
    assert inconsistencies(patch, {"metadata": {}}) == ()


def test_consistent_patches_have_no_inconsistencies() -> None:
    assert (
        inconsistencies({"spec": {"x": None}, "status": {"a": [1]}}, {"status": {"a": [1]}}) == ()
    )


def test_as_json_patch_combines_the_merge_part_and_the_fns_for_webhooks() -> None:
    patch = Patch({"spec": {"injected": 123}, "metadata": {"labels": {"x": None}}})
    patch.fns.append(lambda body: body["spec"]["items"].append(4))
    body = {"metadata": {"labels": {"x": "1"}}, "spec": {"items": [1]}}
    assert patch.as_json_patch(body) == [
        {"op": "remove", "path": "/metadata/labels/x"},
        {"op": "add", "path": "/spec/items/-", "value": 4},
        {"op": "add", "path": "/spec/injected", "value": 123},
    ]


def test_a_patch_is_slotted_and_its_copies_keep_their_fns() -> None:
    patch = Patch({"status": {"a": 1}})
    patch.fns.append(_drop_field)
    assert not hasattr(patch, "__dict__")  # every daemon holds one: no per-instance dict
    for twin in (copy.copy(patch), copy.deepcopy(patch), pickle.loads(pickle.dumps(patch))):
        assert isinstance(twin, Patch)
        assert twin == patch
        assert twin.fns == [_drop_field]


def _drop_field(body: MutableMapping[str, Any]) -> None:
    body.pop("field", None)


def test_a_patch_made_with_kopfs_body_argument_is_expressed_against_that_body() -> None:
    body = {"metadata": {"labels": {"x": "1"}}, "spec": {"items": [1]}}
    patch = Patch({"spec": {"injected": 123}, "metadata": {"labels": {"x": None}}}, body=body)
    assert patch.as_json_patch() == [
        {"op": "remove", "path": "/metadata/labels/x"},
        {"op": "add", "path": "/spec/injected", "value": 123},
    ]


def test_a_patch_without_a_body_replaces_its_values_and_removes_its_nones_as_kopfs() -> None:
    patch = Patch({"spec": {"a/b": 1, "c": None}, "status": {"d": {}}})
    assert patch.as_json_patch() == [
        {"op": "replace", "path": "/spec/a~1b", "value": 1},
        {"op": "remove", "path": "/spec/c"},
        {"op": "replace", "path": "/status/d", "value": {}},
    ]
    assert Patch().as_json_patch() == []
    patch.fns.append(_drop_field)
    with pytest.raises(ValueError, match=r"pass Patch\(body=\.\.\.\)"):
        patch.as_json_patch()
