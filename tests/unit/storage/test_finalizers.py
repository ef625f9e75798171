"""The finalizer: checks, and the guarded JSON patches that add and remove it."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.kube.patches import JsonPatchError, Patch, apply_json_patch, json_patch_from_fns
from anyop.storage.finalizers import (
    ADDING_MESSAGE,
    ANYOP_FINALIZER,
    RELEASING_MESSAGE,
    UNNEEDED_MESSAGE,
    add_finalizer_ops,
    allow_deletion,
    block_deletion,
    has_finalizer,
    is_deletion_blocked,
    is_deletion_ongoing,
    remove_finalizer_ops,
)

TEST = {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}


def body(*finalizers: str, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "ex1", "resourceVersion": "7"}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata}


def test_deletion_is_ongoing_once_the_timestamp_is_set() -> None:
    assert is_deletion_ongoing(body(deleting=True))
    assert not is_deletion_ongoing(body())
    assert not is_deletion_ongoing({})


def test_deletion_is_blocked_by_our_finalizer_only() -> None:
    assert has_finalizer(body(ANYOP_FINALIZER), ANYOP_FINALIZER)
    assert is_deletion_blocked(body("other", ANYOP_FINALIZER), ANYOP_FINALIZER)
    assert not is_deletion_blocked(body("other"), ANYOP_FINALIZER)
    assert not is_deletion_blocked({}, ANYOP_FINALIZER)


def test_adding_the_first_finalizer_creates_the_list_after_a_version_test() -> None:
    assert add_finalizer_ops(body(), ANYOP_FINALIZER) == [
        TEST,
        {"op": "add", "path": "/metadata/finalizers", "value": [ANYOP_FINALIZER]},
    ]


def test_adding_to_existing_finalizers_appends() -> None:
    assert add_finalizer_ops(body("other"), ANYOP_FINALIZER) == [
        TEST,
        {"op": "add", "path": "/metadata/finalizers/-", "value": ANYOP_FINALIZER},
    ]


def test_adding_a_present_finalizer_does_nothing() -> None:
    assert add_finalizer_ops(body(ANYOP_FINALIZER), ANYOP_FINALIZER) == []


def test_removing_the_finalizer_removes_it_by_index_after_a_version_test() -> None:
    assert remove_finalizer_ops(body("a", ANYOP_FINALIZER, "b"), ANYOP_FINALIZER) == [
        TEST,
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    assert remove_finalizer_ops(body("a"), ANYOP_FINALIZER) == []


def test_the_ops_apply_cleanly_and_fail_on_a_concurrent_change() -> None:
    original = body("a", ANYOP_FINALIZER)
    released = apply_json_patch(original, remove_finalizer_ops(original, ANYOP_FINALIZER))
    assert released["metadata"]["finalizers"] == ["a"]
    changed = body("a", ANYOP_FINALIZER)
    changed["metadata"]["resourceVersion"] = "8"
    with pytest.raises(JsonPatchError, match="Test failed"):
        apply_json_patch(changed, remove_finalizer_ops(original, ANYOP_FINALIZER))


def test_fns_for_patches_are_idempotent() -> None:
    patch = Patch()
    patch.fns.extend([block_deletion(ANYOP_FINALIZER), block_deletion(ANYOP_FINALIZER)])
    ops = json_patch_from_fns(body(), patch.fns)
    assert apply_json_patch(body(), ops)["metadata"]["finalizers"] == [ANYOP_FINALIZER]
    releasing = json_patch_from_fns(
        body(ANYOP_FINALIZER, ANYOP_FINALIZER), [allow_deletion(ANYOP_FINALIZER)]
    )
    assert releasing[1:] == [{"op": "remove", "path": "/metadata/finalizers/0"}] * 2


def test_finalizer_log_lines_use_kopf_wording() -> None:
    assert ADDING_MESSAGE == "Adding the finalizer, thus preventing the actual deletion."
    assert UNNEEDED_MESSAGE == "Removing the finalizer, as there are no handlers requiring it."
    assert RELEASING_MESSAGE == "Removing the finalizer, thus allowing the actual deletion."
