"""Field sets and their ``fieldsV1`` documents (pure): generated sets against the definitions."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from anyop.kube.patches import merge
from anyop.testing.fake.field_ownership import (
    Path,
    _item_key,
    _tracked,
    changes,
    fields_v1_of,
    from_fields_v1,
    to_fields_v1,
)
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.managed_fields import owners_after_update, shape_of, zero_object

ELEMENTS = st.tuples(st.sampled_from("fkvi"), st.sampled_from(["a", "b", '{"name":"x"}', "0"]))
PATHS = st.lists(ELEMENTS, min_size=1, max_size=4).map(tuple)


def by_definition(fields: set[Path]) -> dict[str, Any]:
    """``fieldsV1`` as the format defines it: a node per element; one with fields of its own
    that is owned itself too (an item, a map an update added) says so with ``.``."""
    root: dict[str, Any] = {}
    for path in sorted(fields):
        node = root
        for kind, name in path:
            node = node.setdefault(f"{kind}:{name}", {})
        extended = any(other[: len(path)] == path and other != path for other in fields)
        if extended:
            node["."] = {}
    return root


@settings(max_examples=300, deadline=None)
@given(st.sets(PATHS, max_size=12))
def test_a_field_set_becomes_the_document_its_definition_gives(fields: set[Path]) -> None:
    assert to_fields_v1(fields) == by_definition(fields)


@settings(max_examples=300, deadline=None)
@given(st.sets(PATHS, max_size=12))
def test_a_document_reads_back_as_its_field_set(
    fields: set[Path],
) -> None:
    # Every path can be said: a node with fields under it that is owned too has its `.`.
    assert from_fields_v1(to_fields_v1(fields)) == fields


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
    assert owners[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}  # it added the map too
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


DEPLOYMENTS = Kind("apps", "v1", "deployments", "deployment", "Deployment")
# Not both 1 and True: they are equal values, which an update leaves unchanged (see `changes`).
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(2, 4), st.sampled_from(["m", "x", "TCP"]))
ANY = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "image", "a"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def shaped(tree: Any, *, patch: bool) -> st.SearchStrategy[Any]:
    """Values shaped as ``tree`` says (a dict: a map of those fields, else a strategy): an
    object has every field; a patch some of them, each possibly ``None`` (which removes)."""
    if not isinstance(tree, dict):
        return tree
    fields = {key: shaped(inner, patch=patch) for key, inner in tree.items()}
    if not patch:
        return st.fixed_dictionaries(fields)
    return st.fixed_dictionaries({}, optional={k: st.none() | v for k, v in fields.items()})


NAMES = st.sampled_from(["a", "b", "c"])
LABELS = st.dictionaries(NAMES, st.sampled_from(["v", "w"]), max_size=2)
PORT = {"containerPort": st.integers(80, 81), "protocol": st.sampled_from(["TCP", "UDP"])}
CONTAINER = {"name": NAMES, "image": st.sampled_from(["x", "y"]), "args": st.lists(NAMES)}
STRUCTURE = {
    "metadata": {"labels": LABELS, "finalizers": st.lists(NAMES, max_size=2), "name": NAMES},
    "spec": {
        "replicas": st.integers(2, 3),
        "selector": {"matchLabels": LABELS},  # an atomic map
        "template": {
            "metadata": {"labels": LABELS},
            "spec": {"nodeSelector": LABELS, "other": ANY},
        },
    },
    "status": {"replicas": st.integers(2, 3), "conditions": ANY},
    "other": ANY,
}  # a Deployment's structure: maps, an atomic map, a set (finalizers); containers below


def deployments(*, patch: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Deployments (or patches of them) with a map-list of containers keyed by name, each with
    a map-list of ports keyed by port and protocol and an atomic list of args."""
    ports = st.lists(shaped(PORT, patch=patch), max_size=2)
    containers = st.lists(shaped({**CONTAINER, "ports": ports}, patch=patch), max_size=3)

    def with_containers(obj: dict[str, Any], found: list[Any]) -> dict[str, Any]:
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec")
        if isinstance(spec, dict):
            spec["containers"] = found
        return obj

    return st.builds(with_containers, shaped(STRUCTURE, patch=patch), containers)


_ABSENT = object()


def changed_by_definition(
    old: dict[str, Any], new: dict[str, Any], status: str
) -> tuple[set[Path], set[Path]]:
    """Structured merge's compare (``typed.Comparison``), walked plainly over both objects:
    the paths removed, modified or added, and those of them the new object has (modified or
    added)."""
    shape = shape_of(DEPLOYMENTS)
    removed: set[Path] = set()
    taken: set[Path] = set()

    def granular(value: Any, where: Any) -> str:
        node = None if where is None else shape.node(where)
        if isinstance(value, dict) and (node is None or not node.atomic_map):
            return "map"
        if (
            isinstance(value, list)
            and node is not None
            and (node.list_type == "set" or (node.list_type == "map" and node.keys))
        ):
            return "list"
        return ""

    def key_of(item: Any, where: Any) -> tuple[str, str]:
        node = shape.node(where)
        if node.list_type == "set":
            return "v", json.dumps(item, separators=(",", ":"))
        return "k", _item_key(item, node.keys, node.key_defaults)

    def children(value: Any, where: Any, path: Path) -> dict[Path, tuple[Any, Any]]:
        """Each child's path, with its values (a key twice: all its items) and schema."""
        if isinstance(value, dict):
            return {(*path, ("f", key)): ([item], shape.child(where, key))
                    for key, item in value.items()}  # fmt: skip
        found: dict[Path, tuple[Any, Any]] = {}
        for item in value:
            item_path = (*path, key_of(item, where))
            found.setdefault(item_path, ([], shape.items(where)))[0].append(item)
        return found

    def compare(lhs: Any, rhs: Any, where: Any, path: Path, item: bool = False) -> None:
        kinds = {granular(v, where) for v in (lhs, rhs) if v is not _ABSENT and v is not None}
        empty = all(v is _ABSENT or not v for v in (lhs, rhs))
        if len(kinds) > 1:  # one of another kind than the other: each walked alone
            for side in (lhs, rhs):
                if side is not _ABSENT and granular(side, where) and side:
                    found = children(side, where, path)
                    pair = (found, {}) if side is lhs else ({}, found)
                    paired(*pair, where, isinstance(side, list))
            taken.add(path)  # (ill-typed: Go's walk errs; the value is taken as modified)
            return
        if kinds == {""} or not kinds or empty:  # a leaf (or both empty: one value)
            if lhs is _ABSENT and rhs is not _ABSENT:
                taken.add(path)
            elif rhs is _ABSENT and lhs is not _ABSENT:
                removed.add(path)
            elif lhs != rhs:
                taken.add(path)
            return
        if item and bool(lhs) != bool(rhs) and _ABSENT not in (lhs, rhs):
            taken.add(path)  # (the fake's: an empty item is a leaf, that becomes a map)
        before = {} if lhs is _ABSENT or lhs is None else children(lhs, where, path)
        after = {} if rhs is _ABSENT or rhs is None else children(rhs, where, path)
        paired(before, after, where, isinstance(lhs if lhs not in (_ABSENT, None) else rhs, list))
        if path and path != (("f", "metadata"),):  # (metadata: there in every object)
            if lhs is _ABSENT:
                taken.add(path)
            elif rhs is _ABSENT:
                removed.add(path)

    def paired(before: dict[Path, Any], after: dict[Path, Any], where: Any, listed: bool) -> None:
        """The children of both sides compared, a key twice as ``visitListItems`` does."""
        for child in before.keys() | after.keys():
            was, sub = before.get(child, ([], None))
            now, sub = after.get(child, ([], sub))
            if len(was) >= 2 and len(now) >= 2:
                if was != now:
                    taken.add(child)
            elif len(was) >= 2:
                if now:
                    compare(_ABSENT, now[0], sub, child, listed)
                removed.add(child)
            elif len(now) >= 2:
                if was:
                    compare(was[0], _ABSENT, sub, child, listed)
                taken.add(child)
            else:
                compare(was[0] if was else _ABSENT, now[0] if now else _ABSENT, sub, child,
                        listed and shape.node(where).list_type == "map")  # fmt: skip

    compare(_tracked(old, status=status), _tracked(new, status=status), shape.schema, ())
    return removed | taken, taken


@settings(max_examples=500, deadline=None)
@given(
    deployments(patch=False),
    deployments(patch=True) | deployments(patch=False),
    st.sampled_from(["keep", "skip", "only"]),
)
@example(  # an empty map-list item (a leaf) that gets a field (a map then)
    old={"status": {"conditions": [{}]}},
    patch={"status": {"conditions": [{"name": None}]}},
    status="keep",
)
def test_an_updates_changes_are_those_of_every_path_compared(
    old: dict[str, Any], patch: dict[str, Any], status: str
) -> None:
    """The changed paths of an update, found by skipping equal subtrees, are those that
    comparing every path of both objects finds (on a kind with map-lists, sets, maps); the
    update is a merge patch, or a whole object merged over the old one."""
    new = merge(old, patch)
    found = changes(old, new, shape_of(DEPLOYMENTS), status=status)
    assert found == changed_by_definition(old, new, status)


@settings(max_examples=400, deadline=None)
@given(deployments(patch=False), st.sampled_from(["keep", "skip", "only"]), st.booleans())
def test_a_creates_document_is_the_one_of_its_field_set(
    obj: dict[str, Any], status: str, twice: bool
) -> None:
    """Made in one walk, a create's ``fieldsV1`` is the document of what it changes from the
    kind's zero value, in the same order (``.`` first, each level sorted); also when a
    map-list has a key twice."""
    containers = obj["spec"]["template"]["spec"]["containers"]
    if twice and containers:
        containers.append(
            {"name": containers[0]["name"], "image": "z", "ports": [{"containerPort": 9}]}
        )
    shape = shape_of(DEPLOYMENTS)
    zero = zero_object(DEPLOYMENTS)
    _, taken = changes(zero, obj, shape, status=status)
    expected = to_fields_v1(taken)
    assert json.dumps(fields_v1_of(obj, shape, status=status, zero=zero)) == json.dumps(expected)


ITEM_VALUES = st.one_of(
    st.text(max_size=4), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False)
) | st.lists(st.integers(), max_size=2)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["name", "port", "é", 'q"']), ITEM_VALUES, max_size=3)
    | ITEM_VALUES,
    st.lists(st.sampled_from(["name", "port", "é", 'q"']), min_size=1, max_size=3, unique=True),
)
def test_an_items_key_is_the_json_of_its_key_fields(item: Any, keys: list[str]) -> None:
    """A map-list item's key: its key fields as compact JSON with sorted keys (`k:` paths)."""
    found = {key: item[key] for key in keys if isinstance(item, dict) and key in item}
    expected = json.dumps(found, separators=(",", ":"), sort_keys=True)
    assert _item_key(item, tuple(keys), {}) == expected


def test_an_items_key_field_left_out_is_keyed_by_its_default() -> None:
    """A Service port without a protocol is ``TCP``'s, as structured merge keys it."""
    defaults = {"protocol": "TCP"}
    assert _item_key({"port": 80}, ("port", "protocol"), defaults) == '{"port":80,"protocol":"TCP"}'
    given = {"port": 80, "protocol": "UDP"}
    assert _item_key(given, ("port", "protocol"), defaults) == '{"port":80,"protocol":"UDP"}'


def test_a_create_owns_no_field_it_leaves_at_the_go_zero_value() -> None:
    """kube-apiserver counts a create's changes from the kind's Go zero value: a StatefulSet's
    ``serviceName: ""`` (always written, never sent) is no manager's, nor a nil list Go writes
    as ``null`` (the template's containers); its defaults are."""
    kind = Kind("apps", "v1", "statefulsets", "statefulset", "StatefulSet", generation=True)
    template = {"metadata": {}, "spec": {"containers": None}}  # as decoded: nil, written
    spec = {"serviceName": "", "replicas": 1, "template": template}
    document = fields_v1_of({"spec": spec}, shape_of(kind), zero=zero_object(kind))
    assert document == {"f:spec": {"f:replicas": {}}}
    named = fields_v1_of({"spec": {**spec, "serviceName": "s"}}, shape_of(kind),
                         zero=zero_object(kind))  # fmt: skip
    assert named == {"f:spec": {"f:replicas": {}, "f:serviceName": {}}}
