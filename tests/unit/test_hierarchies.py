"""Hierarchies: owner references, labels, names and namespaces of children, as in Kopf's docs."""

from __future__ import annotations

from typing import Any

import pytest

import anyop
from anyop.handlers.context import current_body

OWNER: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
    "metadata": {"name": "kopf-example-1", "namespace": "default", "uid": "uid-1",
                 "labels": {"somelabel": "somevalue"}},
}  # fmt: skip


@pytest.fixture
def in_handler() -> Any:
    token = current_body.set(OWNER)
    yield
    current_body.reset(token)


def test_labels_are_added_without_overwriting_unless_forced() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job", "metadata": {"labels": {"a": "old"}}}]
    anyop.label(objs, {"a": "new", "b": "2"})
    assert objs[0]["metadata"]["labels"] == {"a": "old", "b": "2"}
    anyop.label(objs, {"a": "new"}, forced=True)
    assert objs[0]["metadata"]["labels"]["a"] == "new"


def test_kopfs_deprecated_force_overwrites_with_a_deprecation_warning() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job", "metadata": {"labels": {"a": "old"}}}]
    with pytest.warns(DeprecationWarning, match=r"label\(force=\.\.\.\) is deprecated"):
        anyop.label(objs, {"a": "new"}, force=True)
    assert objs[0]["metadata"]["labels"]["a"] == "new"
    with pytest.warns(DeprecationWarning, match="use label"):
        anyop.label(objs, {"a": "newer"}, forced=True, force=False)
    assert objs[0]["metadata"]["labels"]["a"] == "new"


@pytest.mark.usefixtures("in_handler")
def test_nested_structures_are_labelled_only_if_they_exist() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}, {"kind": "Deployment", "spec": {"template": {}}}]
    anyop.label(objs, nested="spec.template")
    assert objs[0] == {"kind": "Job", "metadata": {"labels": {"somelabel": "somevalue"}}}
    assert objs[1]["spec"]["template"]["metadata"]["labels"] == {"somelabel": "somevalue"}


@pytest.mark.usefixtures("in_handler")
def test_owner_references_default_to_the_current_object_and_are_idempotent() -> None:
    obj: dict[str, Any] = {"kind": "Pod"}
    anyop.append_owner_reference(obj)
    anyop.append_owner_reference(obj)
    assert obj["metadata"]["ownerReferences"] == [{
        "controller": True, "blockOwnerDeletion": True, "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample", "name": "kopf-example-1", "uid": "uid-1",
    }]  # fmt: skip
    anyop.remove_owner_reference(obj)
    assert obj["metadata"]["ownerReferences"] == []


def test_without_a_handler_or_an_owner_it_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="No owner"):
        anyop.append_owner_reference({"kind": "Pod"})


@pytest.mark.usefixtures("in_handler")
def test_naming_is_a_prefix_by_default_and_exact_when_strict() -> None:
    loose: dict[str, Any] = {"kind": "Pod"}
    strict: dict[str, Any] = {"kind": "Pod", "metadata": {"name": "kept"}}
    anyop.harmonize_naming(loose)
    anyop.harmonize_naming(strict, strict=True)
    assert loose["metadata"] == {"generateName": "kopf-example-1-"}
    assert strict["metadata"] == {"name": "kept"}
    anyop.harmonize_naming(strict, strict=True, forced=True)
    assert strict["metadata"] == {"name": "kopf-example-1"}


@pytest.mark.usefixtures("in_handler")
def test_adopt_sets_the_owner_name_namespace_and_labels() -> None:
    objs: list[dict[str, Any]] = [{"kind": "Job"}]
    anyop.adopt(objs, strict=True, forced=True)
    meta = objs[0]["metadata"]
    assert meta["name"] == "kopf-example-1"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {"somelabel": "somevalue"}
    assert meta["ownerReferences"][0]["uid"] == "uid-1"


def test_namespaces_are_kept_unless_forced() -> None:
    obj: dict[str, Any] = {"metadata": {"namespace": "mine"}}
    anyop.adjust_namespace(obj, "theirs")
    assert obj["metadata"]["namespace"] == "mine"
    anyop.adjust_namespace(obj, "theirs", forced=True)
    assert obj["metadata"]["namespace"] == "theirs"


def test_unsupported_objects_are_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="Unsupported object type int"):
        anyop.label(42, {"a": "b"})


def test_object_references_carry_the_namespace_when_there_is_one() -> None:
    assert anyop.build_object_reference(OWNER) == {
        "apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": "kopf-example-1",
        "uid": "uid-1", "namespace": "default",
    }  # fmt: skip


def test_a_handlers_read_only_body_can_be_the_owner() -> None:
    owner = anyop.Body({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                  "metadata": {"name": "kex", "namespace": "ns", "uid": "u-1"}})  # fmt: skip
    child: dict[str, Any] = {"metadata": {}}
    anyop.adopt(child, owner=owner)
    assert child["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert child["metadata"]["namespace"] == "ns"
