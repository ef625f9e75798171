"""Diff-base storages: the last handled essence, in Kopf's exact format."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from anyop.kube.patches import Patch
from anyop.storage.defaults import (
    anyop_storages,
    kopf_compatible_storages,
    status_storages,
)
from anyop.storage.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
    read_diffbase,
    status_was_pruned,
)
from anyop.storage.finalizers import ANYOP_FINALIZER, KOPF_FINALIZER
from anyop.storage.progress import (
    AnnotationsProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)

BODY: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {
        "name": "ex1",
        "labels": {"app": "demo"},
        "annotations": {
            "kopf.zalando.org/last-handled-configuration": '{"spec":{}}\n',
            "marked.example.com/kopf-managed": "yes",
            "marked.example.com/create_fn": "{}",
        },
    },
    "spec": {"field": "value", "items": ["a"]},
    "status": {"create_fn": {"message": "hello"}},
}
ESSENCE = {"spec": {"field": "value", "items": ["a"]}, "metadata": {"labels": {"app": "demo"}}}


def test_the_annotation_holds_compact_json_and_a_newline_as_kopf_writes_it() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    patch = Patch()
    storage.store(body=BODY, patch=patch, essence=ESSENCE)
    assert patch.meta.annotations == {
        "kopf.zalando.org/last-handled-configuration": (
            '{"spec":{"field":"value","items":["a"]},"metadata":{"labels":{"app":"demo"}}}\n'
        )
    }


def test_the_stored_essence_is_fetched_back() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    assert storage.fetch(body=BODY) == {"spec": {}}
    assert storage.fetch(body={"metadata": {}}) is None


def test_the_essence_is_built_without_operators_annotations() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="my-op.example.com")
    assert storage.build(body=BODY) == ESSENCE


def test_the_essence_excludes_the_storage_own_key_even_before_its_marker_exists() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="my-op.example.com")
    body = {"spec": {}, "metadata": {"annotations": {
        "my-op.example.com/last-handled-configuration": "{}", "user/note": "x"}}}  # fmt: skip
    assert storage.build(body=body) == {"spec": {}, "metadata": {"annotations": {"user/note": "x"}}}


def test_extra_fields_and_ignored_fields_shape_the_essence() -> None:
    storage = AnnotationsDiffBaseStorage(ignored_fields=["spec.items", ["metadata", "labels"]])
    essence = storage.build(body=BODY, extra_fields=[("status", "create_fn")])
    assert essence == {"spec": {"field": "value"}, "status": {"create_fn": {"message": "hello"}}}


def test_anyop_writes_its_own_key_and_marker() -> None:
    patch = Patch()
    AnnotationsDiffBaseStorage().store(body={}, patch=patch, essence={"spec": {}})
    assert patch.meta.annotations == {
        "anyop.dev/last-handled-configuration": '{"spec":{}}\n',
        "anyop.dev/kopf-managed": "yes",
    }


@pytest.mark.parametrize("corrupt", ["{not json", '"a string"', "[1]", "42"])
def test_a_corrupt_diffbase_is_absent_with_a_warning(corrupt: str) -> None:
    storage = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    body = {"metadata": {"annotations": {"kopf.zalando.org/last-handled-configuration": corrupt}}}
    assert storage.fetch(body=body) is None
    (warning,) = storage.drain_warnings()
    assert "kopf.zalando.org/last-handled-configuration" in warning.where


def test_reading_tells_a_corrupt_diffbase_from_a_missing_one() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    key = "kopf.zalando.org/last-handled-configuration"
    corrupt = read_diffbase(storage, {"metadata": {"annotations": {key: "{oops"}}})
    assert corrupt.corrupt
    assert corrupt.essence is None
    assert len(corrupt.warnings) == 1
    missing = read_diffbase(storage, {})
    assert not missing.corrupt
    assert missing.warnings == ()
    found = read_diffbase(storage, BODY)
    assert found.essence == {"spec": {}}
    assert not found.corrupt


def test_a_null_diffbase_is_absent_without_a_warning() -> None:
    storage = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    body = {"metadata": {"annotations": {"kopf.zalando.org/last-handled-configuration": "null"}}}
    assert storage.fetch(body=body) is None
    assert storage.drain_warnings() == []


def test_the_status_storage_keeps_a_json_string_in_the_status() -> None:
    storage = StatusDiffBaseStorage()
    patch = Patch()
    storage.store(body={}, patch=patch, essence=ESSENCE)
    stored = patch["status"]["anyop"]["last-handled-configuration"]
    assert isinstance(stored, str)
    assert json.loads(stored) == ESSENCE
    assert storage.fetch(body=dict(patch)) == ESSENCE


def test_the_status_storage_drops_its_own_field_from_tracked_status() -> None:
    storage = StatusDiffBaseStorage(name="kopf", field="status.{name}.diff-base")
    body = {"spec": {}, "status": {"kopf": {"diff-base": "{}"}, "phase": "x"}}
    assert storage.build(body=body, extra_fields=[("status",)]) == {
        "spec": {},
        "status": {"phase": "x"},
    }


def test_the_status_storage_warns_about_corrupt_values() -> None:
    storage = StatusDiffBaseStorage()
    assert storage.fetch(body={"status": {"anyop": {"last-handled-configuration": "{"}}}) is None
    assert len(storage.drain_warnings()) == 1


def test_multi_storage_reads_the_first_found_and_writes_all() -> None:
    status = StatusDiffBaseStorage(name="kopf", field="status.diff-base")
    annotations = AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")
    storage = MultiDiffBaseStorage([status, annotations])
    assert storage.fetch(body=BODY) == {"spec": {}}
    patch = Patch()
    storage.store(body={}, patch=patch, essence={"spec": {}})
    assert "diff-base" in patch["status"]
    assert "kopf.zalando.org/last-handled-configuration" in patch.meta.annotations
    assert storage.build(body=BODY) == ESSENCE


def test_multi_storage_collects_warnings_of_all_storages() -> None:
    storage = MultiDiffBaseStorage([AnnotationsDiffBaseStorage(prefix="kopf.zalando.org")])
    body = {"metadata": {"annotations": {"kopf.zalando.org/last-handled-configuration": "{"}}}
    assert storage.fetch(body=body) is None
    assert len(storage.drain_warnings()) == 1


def test_pruned_status_fields_are_detected_in_the_echo() -> None:
    patch = Patch()
    patch.status["create_fn"] = {"message": "hello"}
    StatusDiffBaseStorage().store(body={}, patch=patch, essence={"spec": {}})
    assert status_was_pruned(patch, {"status": {"create_fn": {"message": "hello"}}})
    kept = {"status": {"create_fn": {"message": "hello"}, "anyop": dict(patch["status"]["anyop"])}}
    assert not status_was_pruned(patch, kept)


def test_patches_without_our_status_are_never_pruned() -> None:
    assert not status_was_pruned({"spec": {"x": 1}}, {})
    assert not status_was_pruned({"status": {"anyop": {"progress": {"fn": None}}}}, {"status": {}})


def test_anyop_default_storages_use_anyop_keys_without_legacy_v1_keys() -> None:
    persistence = anyop_storages()
    assert isinstance(persistence.progress, AnnotationsProgressStorage)
    assert persistence.progress.prefix == "anyop.dev"
    assert not persistence.progress.naming.v1
    assert isinstance(persistence.diffbase, AnnotationsDiffBaseStorage)
    assert persistence.finalizer == ANYOP_FINALIZER == "anyop.dev/finalizer"


def test_status_storages_put_everything_under_one_status_stanza() -> None:
    persistence = status_storages()
    assert isinstance(persistence.progress, StatusProgressStorage)
    assert isinstance(persistence.diffbase, StatusDiffBaseStorage)
    patch = Patch()
    patch.status["create_fn"] = {"message": "hello"}
    persistence.diffbase.store(body={}, patch=patch, essence={"spec": {}})
    assert list(patch) == ["status"]  # one /status request for a simple creation


def test_kopf_compatible_storages_use_kopf_keys_exactly() -> None:
    persistence = kopf_compatible_storages()
    assert isinstance(persistence.progress, SmartProgressStorage)
    assert persistence.finalizer == KOPF_FINALIZER == "kopf.zalando.org/KopfFinalizerMarker"
    patch = Patch()
    persistence.diffbase.store(body={}, patch=patch, essence={"spec": {}})
    assert list(patch.meta.annotations) == ["kopf.zalando.org/last-handled-configuration"]


@pytest.mark.parametrize(
    ("echoed_status", "pruned"),
    [
        (
            {"anyop": {"last-handled-configuration": "{}", "progress": {"fn": {"retries": 1}}}},
            False,
        ),
        ({"anyop": {"last-handled-configuration": "{}", "progress": {}}}, True),  # a nested part
        ({"anyop": {"progress": {"fn": {"retries": 1}}}}, True),  # a sibling
        ({"anyop": {}}, True),
        ({}, True),
        (None, True),  # no status at all
        (
            {"anyop": {"last-handled-configuration": "{}", "progress": {"fn": {"retries": 2}}}},
            False,
        ),
    ],
)
def test_any_part_of_our_status_missing_from_the_echo_means_pruned(
    echoed_status: Any, pruned: bool
) -> None:
    patch = {
        "status": {
            "anyop": {
                "last-handled-configuration": "{}",
                "progress": {"fn": {"retries": 1}, "gone": None},  # None: a deletion
            }
        }
    }
    echoed = {} if echoed_status is None else {"status": echoed_status}
    assert status_was_pruned(patch, echoed) is pruned


class KeptDiffBase(DiffBaseStorage):
    """A custom storage that returns the very essence it keeps (as a cache would)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[str, Any] = {"spec": {"a": 1}, "metadata": {"labels": {}}}

    def fetch(self, *, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.kept

    def store(self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]) -> None:
        self.kept = dict(essence)


def test_a_custom_storage_keeps_its_essence_whatever_the_reader_does() -> None:
    storage = KeptDiffBase()
    read = read_diffbase(storage, {})
    assert read.essence == {"spec": {"a": 1}}  # empty stanzas dropped, in the reader's copy
    read.essence["spec"]["a"] = 2  # type: ignore[index]  # e.g. a handler editing ``old``
    assert storage.kept == {"spec": {"a": 1}, "metadata": {"labels": {}}}


@pytest.mark.parametrize(
    "storage",
    [AnnotationsDiffBaseStorage(), StatusDiffBaseStorage(), anyop_storages().diffbase],
    ids=["annotations", "status", "multi"],
)
def test_anyop_storages_decode_a_fresh_essence_that_is_not_copied_again(
    storage: DiffBaseStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = Patch()
    storage.store(body={}, patch=patch, essence={"spec": {"a": 1}})
    body = dict(patch)
    monkeypatch.setattr("anyop.storage.diffbase.json_copy", lambda value: pytest.fail("copied"))
    assert read_diffbase(storage, body).essence == {"spec": {"a": 1}}


def test_an_essence_too_large_for_the_annotations_is_refused_before_the_write() -> None:
    from anyop.kube.patches import Patch
    from anyop.storage.diffbase import (
        ANNOTATIONS_LIMIT,
        AnnotationsDiffBaseStorage,
        EssenceTooLargeError,
    )

    storage = AnnotationsDiffBaseStorage(v1=False)
    others = {"other/big": "y" * (ANNOTATIONS_LIMIT - 1000)}
    body = {"metadata": {"name": "x", "annotations": others}, "spec": {}}
    patch = Patch()
    storage.store(body=body, patch=patch, essence={"spec": {"a": "b" * 100}})  # fits
    assert patch
    patch = Patch()
    with pytest.raises(EssenceTooLargeError, match="262144") as raised:
        storage.store(body=body, patch=patch, essence={"spec": {"a": "b" * 1000}})
    assert "anyop.status_storages()" in str(raised.value)
    assert patch == {}  # nothing half-written
    removed = Patch({"metadata": {"annotations": {"other/big": None}}})
    storage.store(body=body, patch=removed, essence={"spec": {"a": "b" * 1000}})  # fits again
