"""FakeCluster's pure parts: patches, selectors, schemas, history, routes, discovery."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake.faults import ConnectionDropped
from anyop.testing.fake.field_labels import field_labels
from anyop.testing.fake.history import Change, History, visible_change
from anyop.testing.fake.json_patches import PatchFailed, apply_json_patch
from anyop.testing.fake.label_selectors import parse_field_selector, parse_label_selector
from anyop.testing.fake.patch_merging import apply_merge_patch, apply_strategic_patch
from anyop.testing.fake.routes import DiscoveryRoute, Route, parse_path
from anyop.testing.fake.schemas import prune, violations
from anyop.testing.fake.served_discovery import version_key
from anyop.testing.fake.statuses import StatusError


def _obj(name: str, rv: int = 1, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv),
                         "labels": labels}}  # fmt: skip


def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert apply_merge_patch(target, {"a": {"b": None, "d": 3}, "l": [3]}) == {
        "a": {"c": 2, "d": 3}, "l": [3],
    }  # fmt: skip
    assert target == {"a": {"b": 1, "c": 2}, "l": [1, 2]}


def test_merge_patch_drops_the_nulls_of_what_it_puts_in_but_not_of_what_replaces_a_map() -> None:
    target = {"m": {"a": 1}, "s": "x", "l": [1]}
    patch = {"new": {"a": None, "b": [None, {"c": None}]}, "s": {"d": None}, "l": [{"e": None}],
             "m": [{"f": None}]}  # fmt: skip
    assert apply_merge_patch(target, patch) == {
        "new": {"b": [None, {}]}, "s": {}, "l": [{}], "m": [{"f": None}],
    }  # fmt: skip


def test_json_patch_adds_inserts_appends_and_tests() -> None:
    ops = [
        {"op": "add", "path": "/l/0", "value": 0},
        {"op": "add", "path": "/l/-", "value": 9},
        {"op": "test", "path": "/a", "value": 1},
        {"op": "copy", "from": "/a", "path": "/b"},
    ]
    assert apply_json_patch({"a": 1, "l": [1]}, ops) == {"a": 1, "b": 1, "l": [0, 1, 9]}


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/a", "value": 2},
        {"op": "test", "path": "/a", "value": True},
        {"op": "remove", "path": "/missing"},
        {"op": "replace", "path": "/l/5", "value": 1},
        {"op": "bogus", "path": "/a"},
        {"op": "add", "path": "no-slash", "value": 1},
    ],
)
def test_json_patch_refuses_failed_tests_missing_paths_and_bad_ops(op: dict[str, Any]) -> None:
    with pytest.raises(PatchFailed):
        apply_json_patch({"a": 1, "l": []}, [op])


@pytest.mark.parametrize(
    ("op", "result"),
    [
        ({"op": "add", "path": "/l/01", "value": 9}, {"l": [1, 9, 2], "o": {}}),
        ({"op": "add", "path": "/l/-1", "value": 9}, {"l": [1, 2, 9], "o": {}}),
        ({"op": "remove", "path": "/l/-2"}, {"l": [2], "o": {}}),
        ({"op": "add", "path": "o/x", "value": 1}, {"l": [1, 2], "o": {}, "x": 1}),
        ({"op": "add", "path": "/o/x"}, {"l": [1, 2], "o": {"x": None}}),
        ({"op": "copy", "from": "/o/nope", "path": "/o/y"}, {"l": [1, 2], "o": {"y": None}}),
        ({"op": "test", "path": "/o/nope", "value": None}, {"l": [1, 2], "o": {}}),
    ],
)
def test_json_patch_is_as_loose_as_kube_apiservers(op: dict[str, Any], result: Any) -> None:
    assert apply_json_patch({"l": [1, 2], "o": {}}, [op]) == result


@pytest.mark.parametrize(
    "op",
    [
        {"op": "add", "path": "", "value": {}},
        {"op": "add", "path": "/l/1e0", "value": 9},
        {"op": "add", "path": "/l/-4", "value": 9},
        {"op": "test", "path": "/l/0", "value": 1.0},
        {"op": "test", "path": "/o", "value": {"x": 1}},
    ],
)
def test_json_patch_refuses_what_kube_apiserver_refuses(op: dict[str, Any]) -> None:
    with pytest.raises(PatchFailed):
        apply_json_patch({"l": [1, 2], "o": {}}, [op])


def test_json_patch_replace_of_a_missing_key_adds_it_as_the_api_server_does() -> None:
    assert apply_json_patch({}, [{"op": "replace", "path": "/x", "value": 1}]) == {"x": 1}


def test_strategic_merge_merges_lists_by_key_ordered_as_the_api_server_orders_them() -> None:
    target = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}
    patch = {"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}]}}
    merged = apply_strategic_patch(target, patch)
    # a was stored before b; c is new and comes after b, which the patch names first.
    assert [(c["name"], c["image"]) for c in merged["spec"]["containers"]] == [
        ("a", "1"), ("b", "2"), ("c", "3"),
    ]  # fmt: skip


def test_strategic_merge_deletes_items_and_primitives_by_directive() -> None:
    target = {"metadata": {"finalizers": ["a", "b"]}, "spec": {"ports": [{"port": 1}]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
             "spec": {"ports": [{"port": 1, "$patch": "delete"}]}}  # fmt: skip
    assert apply_strategic_patch(target, patch) == {"metadata": {"finalizers": ["b"]},
                                                    "spec": {"ports": []}}  # fmt: skip


def test_strategic_merge_deletes_an_item_before_it_merges_the_others() -> None:
    """Go's patcher applies a list's deletions first: an item the patch deletes and merges
    comes back as a new one, made of the patch's fields alone, in the patch's order."""
    target = {"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "E"}]},
                                      {"name": "b", "image": "1"}]}}  # fmt: skip
    patch = {"spec": {"containers": [{"name": "a", "image": "2"}, {"name": "b", "image": "2"},
                                     {"name": "a", "$patch": "delete"}]}}  # fmt: skip
    merged = apply_strategic_patch(target, patch)
    assert merged["spec"]["containers"] == [{"name": "a", "image": "2"},
                                            {"name": "b", "image": "2"}]  # fmt: skip


@pytest.mark.parametrize("key", [[], ["a"], {"a": 1}])
def test_strategic_merge_drops_the_connection_on_a_merge_key_that_is_no_scalar(key: Any) -> None:
    """kube-apiserver 1.36.3's patcher panics hashing such a key: the connection drops."""
    target = {"spec": {"containers": [{"name": "a", "image": "1"}]}}
    with pytest.raises(ConnectionDropped):
        apply_strategic_patch(target, {"spec": {"containers": [{"name": key, "image": "2"}]}})
    # A list new to the object is taken as it is: nothing to compare its keys with.
    merged = apply_strategic_patch({"spec": {}}, {"spec": {"containers": [{"name": key}]}})
    assert merged == {"spec": {"containers": [{"name": key}]}}


def test_strategic_merge_replaces_a_map_on_request() -> None:
    patch = {"data": {"$patch": "replace", "x": "1"}}
    assert apply_strategic_patch({"data": {"y": "2"}}, patch) == {"data": {"x": "1"}}


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("tier=web", ["a"]),
        ("tier!=web", ["b", "c"]),
        ("tier in (web,db)", ["a", "b"]),
        ("tier notin (web)", ["b", "c"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c"]),
        ("tier,app=x", ["a"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_label_selectors_match_as_the_api_server_does(selector: str, names: list[str]) -> None:
    objects = [_obj("a", tier="web", app="x"), _obj("b", tier="db"), _obj("c")]
    chosen = parse_label_selector(selector)
    assert [o["metadata"]["name"] for o in objects if chosen(o)] == names


def test_malformed_selectors_are_400_bad_request() -> None:
    with pytest.raises(StatusError) as label:
        parse_label_selector("a in (b")
    with pytest.raises(StatusError) as field:
        parse_field_selector("spec.x=1", CONFIGMAPS)
    assert (label.value.code, field.value.code, field.value.reason) == (400, 400, "BadRequest")


CONFIGMAPS = field_labels("", "ConfigMap", custom=False, namespaced=True)


def test_field_selectors_match_name_and_namespace() -> None:
    chosen = parse_field_selector("metadata.name=a,metadata.namespace!=other", CONFIGMAPS)
    assert chosen(_obj("a"))
    assert not chosen(_obj("b"))


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        (("", "ConfigMap", False, True), "spec.x=1",
         '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        (("", "Secret", False, True), "spec.x=1", "field label not supported: spec.x"),
        (("batch", "Job", False, True), "spec.x=1", 'field label "spec.x" not supported for Job'),
        (("", "Namespace", False, False), "metadata.namespace=a",
         "field label not supported: metadata.namespace"),
        (("g", "Gizmo", True, False), "metadata.namespace=a",
         "field label not supported: metadata.namespace"),
    ],
)  # fmt: skip
def test_a_field_label_is_refused_with_its_kinds_own_message(
    kind: tuple[str, str, bool, bool], text: str, message: str
) -> None:
    group, name, custom, namespaced = kind
    labels = field_labels(group, name, custom=custom, namespaced=namespaced)
    with pytest.raises(StatusError) as refused:
        parse_field_selector(text, labels)
    assert refused.value.body["message"] == message


def test_field_values_are_read_as_the_kinds_strategy_computes_them() -> None:
    pods = field_labels("", "Pod", custom=False, namespaced=True)
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"},
           "status": {"podIPs": [{"ip": "10.0.0.1"}]}}  # fmt: skip
    assert parse_field_selector("spec.host=n1,spec.hostNetwork=false", pods)(pod)
    assert parse_field_selector("status.podIP=10.0.0.1", pods)(pod)
    events = field_labels("events.k8s.io", "Event", custom=False, namespaced=True)
    # an events.k8s.io Event is selected as stored: as a core Event
    event = {"metadata": {"name": "e"}, "involvedObject": {"name": "p"}, "reportingComponent": "c"}
    assert parse_field_selector("regarding.name=p,reportingController=c", events)(event)
    gizmos = field_labels("g", "Gizmo", custom=True, namespaced=True, selectable=("spec.on",))
    assert parse_field_selector("spec.on=true", gizmos)({"spec": {"on": True}})


SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "size": {"type": "integer"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "map": {"type": "object", "additionalProperties": {"type": "integer"}},
        "list": {"type": "array",
                 "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
    }},
}}  # fmt: skip


def test_pruning_drops_unknown_fields_and_nulls_but_keeps_preserved_ones() -> None:
    body = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "top": 1,
            "spec": {"size": None, "junk": 1, "free": {"any": {"thing": 1}}, "map": {"k": 1},
                     "list": [{"a": "s", "b": 2}]}}  # fmt: skip
    assert prune(body, SCHEMA) == {
        "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
        "spec": {"free": {"any": {"thing": 1}}, "map": {"k": 1}, "list": [{"a": "s"}]},
    }  # fmt: skip


def test_type_violations_name_the_field_and_the_types() -> None:
    found = violations({"spec": {"size": "big", "map": {"k": "v"}}}, SCHEMA)
    assert [(field, cause["reason"]) for field, cause in found] == [
        ("spec.size", "FieldValueTypeInvalid"), ("spec.map.k", "FieldValueTypeInvalid"),
    ]  # fmt: skip
    assert "must be of type integer" in found[0][1]["message"]


def test_history_window_expires_old_resource_versions_with_410() -> None:
    history = History(limit=2)
    for rv in (1, 2, 3):
        history.append(Change(rv, ("", "configmaps"), "ADDED", _obj(f"o{rv}", rv), None))
    history.check(1, "watch", 3)
    with pytest.raises(StatusError) as gone:
        history.check(0, "watch", 3)
    assert (gone.value.code, gone.value.reason) == (410, "Expired")
    history.compact(3)
    with pytest.raises(StatusError):
        history.check(2, "list", 3)


def test_history_rebuilds_a_past_state_by_undoing_later_changes() -> None:
    history = History(limit=10)
    key = ("ns", "a")
    old, new = _obj("a", 1), _obj("a", 2)
    history.append(Change(2, ("", "configmaps"), "MODIFIED", new, old))
    history.append(Change(3, ("", "configmaps"), "ADDED", _obj("b", 3), None))
    state = history.state_at(1, ("", "configmaps"), {key: new, ("ns", "b"): _obj("b", 3)})
    assert state == {key: old}


def test_history_keeps_past_objects_as_they_were_and_gives_copies() -> None:
    history = History(limit=10)
    old, new = _obj("a", 1), _obj("a", 2)
    history.append(Change(2, ("", "configmaps"), "MODIFIED", new, old))
    old["metadata"]["labels"], new["metadata"]["labels"] = {"x": "1"}, {"x": "2"}  # in place
    [change] = history.since(1, ("", "configmaps"))
    assert (change.obj, change.old) == (_obj("a", 2), _obj("a", 1))
    change.obj["metadata"]["name"] = "changed by a reader"
    [again] = history.since(1, ("", "configmaps"))
    assert again.obj == _obj("a", 2)
    assert history.state_at(1, ("", "configmaps"), {("ns", "a"): new}) == {
        ("ns", "a"): _obj("a", 1)
    }


def test_history_takes_an_old_object_from_its_latest_change_while_in_the_window() -> None:
    history, cms = History(limit=2), ("", "configmaps")
    history.append(Change(1, cms, "ADDED", _obj("a", 1), None))
    told = _obj("a", 1, k="not what was stored")  # the store says: as stored, unchanged
    history.append(Change(2, cms, "MODIFIED", _obj("a", 2), told), old_latest=True)
    assert [c.old for c in history.since(1, cms)] == [_obj("a", 1)]
    history.append(Change(3, cms, "DELETED", _obj("a", 3), _obj("a", 2)), old_latest=True)
    history.append(Change(4, cms, "ADDED", _obj("a", 4), None))
    history.append(Change(5, cms, "MODIFIED", _obj("a", 5), told), old_latest=True)
    assert [c.old for c in history.since(4, cms)] == [_obj("a", 4)]
    history.append(Change(6, ("", "secrets"), "ADDED", _obj("s", 6), None))
    history.append(Change(7, ("", "secrets"), "ADDED", _obj("t", 7), None))
    history.append(Change(8, cms, "MODIFIED", _obj("a", 8), told), old_latest=True)
    assert [c.old for c in history.since(7, cms)] == [told]  # a's latest left the window


def test_a_watch_with_a_selector_sees_an_object_leave_as_deleted_at_the_new_version() -> None:
    change = Change(5, ("", "configmaps"), "MODIFIED", _obj("a", 5, k="x"), _obj("a", 4, k="v"))
    seen = visible_change(change, parse_label_selector("k=v"))
    assert seen is not None
    assert seen[0] == "DELETED"
    assert seen[1]["metadata"]["labels"] == {"k": "v"}
    assert seen[1]["metadata"]["resourceVersion"] == "5"


def test_paths_parse_into_routes_and_discovery() -> None:
    assert parse_path("/api/v1/namespaces/ns/configmaps/a") == Route(
        "", "v1", "configmaps", "ns", "a"
    )
    assert parse_path("/apis/g/v1/things/x/status") == Route(
        "g", "v1", "things", None, "x", "status"
    )
    assert parse_path("/api/v1/namespaces/ns/status") == Route(
        "", "v1", "namespaces", None, "ns", "status"
    )
    assert parse_path("/apis/g") == DiscoveryRoute("g")
    assert parse_path("/healthz") is None


def test_preferred_versions_sort_ga_over_beta_over_alpha() -> None:
    versions = ["v1alpha1", "v1beta2", "v1", "v2beta1", "v2", "v1beta1"]
    assert sorted(versions, key=version_key) == [
        "v2",
        "v1",
        "v2beta1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
    ]
