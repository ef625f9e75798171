"""The digest of an essence, kept where the essence does not fit the annotations (row 34)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from anyop.handlers.causes import Reason, detect_changing_cause
from anyop.kube.patches import Patch
from anyop.kube.resources import Resource
from anyop.storage.diffbase import (
    ANNOTATIONS_LIMIT,
    AnnotationsDiffBaseStorage,
    EssenceTooLargeError,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
    read_diffbase,
)
from anyop.storage.digests import (
    UNKNOWN,
    CorruptDigestError,
    digest_of,
    make_record,
    restore,
    split_extras,
)

RESOURCE = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
FILLER = {"example.com/filler": "x" * (ANNOTATIONS_LIMIT - 2000)}
DIGEST = "anyop.dev/last-handled-digest"
ESSENCE = "anyop.dev/last-handled-configuration"


def full_body(spec: Any, **annotations: str) -> dict[str, Any]:
    meta = {"name": "full", "namespace": "ns", "annotations": {**FILLER, **annotations}}
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": meta, "spec": spec}


def applied(body: dict[str, Any], patch: Patch) -> dict[str, Any]:
    """The body after a merge-patch of annotations (what the server would store)."""
    annotations = dict(body["metadata"]["annotations"])
    for key, value in patch.meta.annotations.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return {**body, "metadata": {**body["metadata"], "annotations": annotations}}


def stored_digest(storage: AnnotationsDiffBaseStorage, body: dict[str, Any]) -> dict[str, Any]:
    patch = Patch()
    with pytest.raises(EssenceTooLargeError):
        storage.store(body=body, patch=patch, essence=storage.build(body=body))
    assert storage.store_digest(body=body, patch=patch, essence=storage.build(body=body))
    return applied(body, patch)


def cause_of(storage: AnnotationsDiffBaseStorage, body: dict[str, Any]) -> Any:
    stored = read_diffbase(storage, body)
    return detect_changing_cause(
        resource=RESOURCE,
        event_type="MODIFIED",
        body=body,
        old=stored.essence,
        new=storage.build(body=body),
        finalizer="anyop.dev/finalizer",
        corrupt_diffbase=stored.corrupt,
    )


def test_the_stanzas_are_hashed_and_the_extras_kept_as_they_are() -> None:
    essence = {
        "spec": {"a": 1},
        "data": {"k": "v"},
        "metadata": {"labels": {"l": "1"}, "annotations": {"x/y": "z"}, "name": "n"},
        "status": {"phase": "Ready"},
    }
    base, extras = split_extras(essence)
    assert extras == {"metadata": {"name": "n"}, "status": {"phase": "Ready"}}
    record = make_record(essence)
    assert record["digests"] == {
        "spec": digest_of({"a": 1}),
        "data": digest_of({"k": "v"}),
        "metadata": {"labels": digest_of({"l": "1"}), "annotations": digest_of({"x/y": "z"})},
    }
    assert record["extras"] == extras
    assert digest_of({"a": 1, "b": 2}) == digest_of({"b": 2, "a": 1})  # canonical
    assert len(digest_of(base)) == 32


def test_an_unchanged_essence_is_restored_exactly() -> None:
    essence = {"spec": {"a": 1}, "metadata": {"labels": {"l": "1"}}, "status": {"x": 1}}
    current = {"spec": {"a": 1}, "metadata": {"labels": {"l": "1"}}}
    assert restore(make_record(essence), current) == essence


def test_changed_stanzas_are_unknown_and_removed_ones_marked() -> None:
    essence = {"spec": {"a": 1}, "data": {"k": "v"}, "metadata": {"labels": {"l": "1"}}}
    current = {"spec": {"a": 2}, "metadata": {"labels": {"l": "1"}}, "more": 1}
    old = restore(make_record(essence), current)
    assert old == {"data": UNKNOWN, "metadata": {"labels": {"l": "1"}}}


@pytest.mark.parametrize(
    "record",
    [None, [], {"digests": []}, {"digests": {"spec": 1}}, {"digests": {}, "extras": []}],
)
def test_a_malformed_digest_record_is_refused(record: object) -> None:
    with pytest.raises(CorruptDigestError):
        restore(record, {"spec": {}})


def test_a_full_budget_keeps_a_digest_and_an_unchanged_object_reads_as_unchanged() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = stored_digest(storage, full_body({"field": "value"}))
    assert ESSENCE not in body["metadata"]["annotations"]
    assert body["metadata"]["annotations"][DIGEST].endswith("\n")
    assert len(body["metadata"]["annotations"][DIGEST]) < 300
    cause = cause_of(storage, body)
    assert cause.reason == Reason.NOOP
    assert cause.old == cause.new


def test_a_change_after_a_digest_is_an_update_whose_diff_says_what_changed() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = stored_digest(storage, full_body({"field": "value"}))
    changed = {**body, "spec": {"field": "changed"}}
    cause = cause_of(storage, changed)
    assert cause.reason == Reason.UPDATE  # never a second creation
    assert list(cause.diff) == [("add", ("spec",), None, {"field": "changed"})]
    assert cause.old["metadata"]["annotations"] == FILLER  # unchanged: as it is


def test_a_removed_stanza_is_an_update_too() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = stored_digest(storage, full_body({"field": "value"}))
    changed = {key: value for key, value in body.items() if key != "spec"}
    cause = cause_of(storage, changed)
    assert cause.reason == Reason.UPDATE
    assert list(cause.diff) == [("remove", ("spec",), UNKNOWN, None)]


def test_the_digest_is_warned_about_once_and_goes_when_the_essence_fits_again() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = stored_digest(storage, full_body({"field": "value"}))
    patch = Patch()
    essence = storage.build(body=body)
    assert not storage.store_digest(body=body, patch=patch, essence=essence)  # not newly
    freed = {**body, "metadata": {**body["metadata"], "annotations": {DIGEST: "x"}}}
    patch = Patch()
    storage.store(body=freed, patch=patch, essence={"spec": {"field": "value"}})
    assert patch.meta.annotations[DIGEST] is None  # the stale digest is removed
    assert ESSENCE in patch.meta.annotations


def test_a_stored_essence_is_read_before_a_digest_which_removes_it() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = full_body({"field": "value"})
    body["metadata"]["annotations"][ESSENCE] = '{"spec":{"field":"old"}}\n'
    assert read_diffbase(storage, body).essence == {"spec": {"field": "old"}}
    patch = Patch()
    storage.store_digest(body=body, patch=patch, essence=storage.build(body=body))
    assert patch.meta.annotations[ESSENCE] is None


def test_a_corrupt_digest_is_a_warning_and_reads_as_resumed() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    body = full_body({"field": "value"}, **{DIGEST: '{"digests":[]}\n'})
    stored = read_diffbase(storage, body)
    assert stored.corrupt
    assert "not a digest record" in str(stored.warnings[0])
    assert cause_of(storage, body).reason == Reason.RESUME


def test_when_not_even_the_digest_fits_it_is_refused() -> None:
    storage = AnnotationsDiffBaseStorage(v1=False)
    full = {"example.com/filler": "x" * (ANNOTATIONS_LIMIT - 40)}
    body = {"metadata": {"name": "n", "annotations": full}, "spec": {"a": 1}}
    with pytest.raises(EssenceTooLargeError, match="Not even a digest"):
        storage.store_digest(body=body, patch=Patch(), essence={"spec": {"a": 1}})


def test_storages_without_a_digest_form_refuse_and_several_storages_digest_where_needed() -> None:
    status = StatusDiffBaseStorage()
    with pytest.raises(EssenceTooLargeError, match="keeps no digest"):
        status.store_digest(body={}, patch=Patch(), essence={})
    multi = MultiDiffBaseStorage([status, AnnotationsDiffBaseStorage(v1=False)])
    body = full_body({"field": "value"})
    patch = Patch()
    essence = multi.build(body=body)  # the filler is in it: too large for the annotations
    assert multi.store_digest(body=body, patch=patch, essence=essence)
    assert DIGEST in patch.meta.annotations
    assert ESSENCE not in patch.meta.annotations
    assert json.loads(patch["status"]["anyop"]["last-handled-configuration"]) == essence
