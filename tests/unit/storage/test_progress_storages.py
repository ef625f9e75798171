"""Progress storages: where records go, how they are purged, and what corrupt state does."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import pytest

from anyop.kube.patches import Patch
from anyop.storage.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ParsedRecord,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)

NOW = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
RECORD = ParsedRecord(started=NOW, purpose="create", retries=0, success=False, failure=False)
JSON = RECORD.to_json()


def annotated(annotations: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations}}


def test_annotations_storage_uses_kopf_keys_with_a_kopf_prefix() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    patch = Patch()
    storage.write(key="update_fn/s2/z1", record=RECORD, body={}, patch=patch)
    assert patch.meta.annotations == {"kopf.zalando.org/update_fn.s2.z1": JSON}


def test_annotations_storage_defaults_to_anyop_keys_with_a_marker() -> None:
    patch = Patch()
    AnnotationsProgressStorage().write(key="create_fn", record=RECORD, body={}, patch=patch)
    assert patch.meta.annotations == {"anyop.dev/create_fn": JSON, "anyop.dev/kopf-managed": "yes"}


def test_annotations_storage_fetches_what_it_stored() -> None:
    storage = AnnotationsProgressStorage()
    body = annotated({"anyop.dev/create_fn": JSON})
    assert storage.read(key="create_fn", body=body) == RECORD
    assert storage.read(key="other", body=body) is None
    assert storage.read(key="create_fn", body={}) is None


def test_long_ids_are_hashed_to_at_most_63_characters() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    long_id = "create_fn/" + "item" * 20
    patch = Patch()
    storage.write(key=long_id, record=RECORD, body={}, patch=patch)
    keys = list(patch.meta.annotations)
    assert all(len(key.split("/", 1)[1]) <= 63 for key in keys)
    assert len(keys) == 2  # v2 and v1 differ for such a long id
    assert storage.read(key=long_id, body=annotated(dict(patch.meta.annotations))) == RECORD


def test_v1_keys_of_older_operators_are_read() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    long_id = "handler_" + "a" * 50
    v1_key = storage.naming.make_v1_key(long_id)
    assert storage.read(key=long_id, body=annotated({v1_key: JSON})) == RECORD


def test_verbose_storage_keeps_none_fields() -> None:
    patch = Patch()
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org", verbose=True)
    storage.write(key="fn", record=ParsedRecord(retries=1), body={}, patch=patch)
    assert '"stopped":null' in patch.meta.annotations["kopf.zalando.org/fn"]


@pytest.mark.parametrize("corrupt", ["{not json", '{"retries": "many"}', "[]"])
def test_corrupt_annotations_are_absent_with_a_warning(corrupt: str) -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    body = annotated({"kopf.zalando.org/create_fn": corrupt})
    assert storage.read(key="create_fn", body=body) is None
    (warning,) = storage.drain_warnings()
    assert warning.where == "annotation 'kopf.zalando.org/create_fn'"
    assert storage.drain_warnings() == []


def test_a_corrupt_v2_key_falls_back_to_a_readable_v1_key() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    long_id = "handler_" + "a" * 50
    keys = storage.naming.make_keys(long_id)
    body = annotated({keys[0]: "garbage", keys[1]: JSON})
    assert storage.read(key=long_id, body=body) == RECORD
    assert len(storage.drain_warnings()) == 1


def test_purge_removes_stored_keys_and_cancels_pending_writes() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    patch = Patch()
    storage.write(key="pending", record=RECORD, body={}, patch=patch)
    storage.purge(key="pending", body={}, patch=patch)
    storage.purge(key="stored", body=annotated({"kopf.zalando.org/stored": JSON}), patch=patch)
    storage.purge(key="absent", body={}, patch=patch)
    assert patch.meta.annotations == {"kopf.zalando.org/stored": None}


def test_touch_sets_and_clears_the_dummy_only_when_it_differs() -> None:
    storage = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    patch = Patch()
    storage.touch(body={}, patch=patch, value="2020-01-01T00:00:00")
    assert patch.meta.annotations == {"kopf.zalando.org/touch-dummy": "2020-01-01T00:00:00"}
    unchanged = Patch()
    storage.touch(body={}, patch=unchanged, value=None)
    assert not unchanged
    cleared = Patch()
    body = annotated({"kopf.zalando.org/touch-dummy": "x"})
    storage.touch(body=body, patch=cleared, value=None)
    assert cleared.meta.annotations == {"kopf.zalando.org/touch-dummy": None}


def test_clear_removes_the_storage_annotations_from_an_essence() -> None:
    storage = AnnotationsProgressStorage(prefix="my-op.example.com")
    essence = {
        "spec": {},
        "metadata": {"annotations": {"my-op.example.com/fn": "{}", "user/keep": "1"}},
    }
    kept = {"spec": {}, "metadata": {"annotations": {"user/keep": "1"}}}
    assert storage.clear(essence=essence) == kept
    only_ours = {"metadata": {"annotations": {"my-op.example.com/fn": "{}"}}}
    assert storage.clear(essence=only_ours) == {}
    assert essence["metadata"]["annotations"]["my-op.example.com/fn"] == "{}"  # a copy


def test_status_storage_keeps_records_as_objects_with_explicit_nones() -> None:
    storage = StatusProgressStorage()
    patch = Patch()
    storage.write(key="create_fn/item1", record=RECORD, body={}, patch=patch)
    record = patch["status"]["anyop"]["progress"]["create_fn/item1"]
    assert record["purpose"] == "create"
    assert record["delayed"] is None
    body = {"status": {"anyop": {"progress": {"create_fn/item1": record}}}}
    assert storage.read(key="create_fn/item1", body=body) == RECORD


def test_status_storage_with_kopf_legacy_layout() -> None:
    storage = StatusProgressStorage(name="kopf")
    body = {"status": {"kopf": {"progress": {"fn": {"started": "2020-01-01T00:00:00"}}}}}
    assert storage.read(key="fn", body=body) == ParsedRecord(started=NOW)
    assert storage.field == ("status", "kopf", "progress")
    assert storage.touch_field == ("status", "kopf", "dummy")


def test_status_storage_treats_corrupt_records_as_absent_with_a_warning() -> None:
    storage = StatusProgressStorage()
    body = {"status": {"anyop": {"progress": {"fn": "oops"}}}}
    assert storage.read(key="fn", body=body) is None
    (warning,) = storage.drain_warnings()
    assert "status.anyop.progress" in warning.where


def test_status_storage_purges_touches_and_clears() -> None:
    storage = StatusProgressStorage()
    body = {"status": {"anyop": {"progress": {"fn": {}}, "dummy": "x"}, "other": 1}}
    patch = Patch()
    storage.purge(key="fn", body=body, patch=patch)
    storage.touch(body=body, patch=patch, value=None)
    assert patch == {"status": {"anyop": {"progress": {"fn": None}, "dummy": None}}}
    essence: dict[str, Any] = {"spec": {}, "status": {"anyop": {"progress": {"fn": {}}}}}
    assert storage.clear(essence=essence) == {"spec": {}}
    assert essence["status"] == {"anyop": {"progress": {"fn": {}}}}  # cleared in a copy


@pytest.mark.parametrize(
    "storage",
    [
        StatusProgressStorage(),
        AnnotationsProgressStorage(prefix="my-op.example.com"),
        SmartProgressStorage(name="kopf", prefix="kopf.zalando.org"),
    ],
    ids=["status", "annotations", "smart"],
)
def test_an_essence_without_the_storages_fields_is_not_copied(storage: ProgressStorage) -> None:
    essence = {"spec": {"a": [1]}, "metadata": {"annotations": {"user/keep": "1"}}}
    assert storage.clear(essence=essence) is essence  # no copy of a spec per cycle for nothing
    assert essence == {"spec": {"a": [1]}, "metadata": {"annotations": {"user/keep": "1"}}}


def test_multi_storage_reads_the_first_found_and_writes_all() -> None:
    annotations = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    status = StatusProgressStorage(name="kopf")
    storage = MultiProgressStorage([annotations, status])
    older = ParsedRecord(started=NOW, retries=5)
    body = {
        "metadata": {"annotations": {"kopf.zalando.org/fn": JSON}},
        "status": {"kopf": {"progress": {"fn": older.to_dict()}}},
    }
    assert storage.read(key="fn", body=body) == RECORD
    assert storage.read(key="fn", body={"status": body["status"]}) == older
    patch = Patch()
    storage.write(key="fn", record=RECORD, body={}, patch=patch)
    assert "kopf.zalando.org/fn" in patch.meta.annotations
    assert "fn" in patch["status"]["kopf"]["progress"]


def test_multi_storage_collects_warnings_of_all_storages() -> None:
    annotations = AnnotationsProgressStorage(prefix="kopf.zalando.org")
    status = StatusProgressStorage(name="kopf")
    storage = MultiProgressStorage([annotations, status])
    body = {
        "metadata": {"annotations": {"kopf.zalando.org/fn": "{"}},
        "status": {"kopf": {"progress": {"fn": []}}},
    }
    assert storage.read(key="fn", body=body) is None
    assert len(storage.drain_warnings()) == 2


def test_smart_storage_reads_legacy_status_but_writes_only_annotations() -> None:
    storage = SmartProgressStorage(name="kopf", prefix="kopf.zalando.org")
    legacy = {"status": {"kopf": {"progress": {"fn": RECORD.to_dict()}}}}
    assert storage.read(key="fn", body=legacy) == RECORD
    patch = Patch()
    storage.write(key="fn", record=RECORD, body={}, patch=patch)
    storage.touch(body={}, patch=patch, value="now")
    assert "status" not in patch
    assert set(patch.meta.annotations) == {"kopf.zalando.org/fn", "kopf.zalando.org/touch-dummy"}


def test_smart_storage_clears_both_places_from_the_essence() -> None:
    storage = SmartProgressStorage(name="kopf", prefix="kopf.zalando.org")
    essence = {
        "spec": {"a": 1},
        "metadata": {"annotations": {"kopf.zalando.org/fn": "{}"}},
        "status": {"kopf": {"progress": {}}},
    }
    assert storage.clear(essence=essence) == {"spec": {"a": 1}}
    assert essence["metadata"] == {"annotations": {"kopf.zalando.org/fn": "{}"}}  # untouched


class KopfStyleStorage(StatusProgressStorage):
    """A storage written for Kopf: ``clear`` is keyword-only there."""

    def clear(self, *, essence: Mapping[str, Any]) -> Mapping[str, Any]:
        cleared = super().clear(essence=essence)
        return {key: value for key, value in cleared.items() if key != "scratch"}


def test_a_storage_written_for_kopf_overrides_clear_unchanged() -> None:
    storage = MultiProgressStorage([KopfStyleStorage(), AnnotationsProgressStorage()])
    assert storage.clear(essence={"spec": {}, "scratch": 1}) == {"spec": {}}


class _DictStorage(ProgressStorage):
    """A storage written for Kopf: it keeps Kopf's records as they come, in a dict."""

    def __init__(self, kept: dict[str, Any]) -> None:
        self.kept = kept

    def fetch(self, *, key: str, body: Mapping[str, Any]) -> Any:
        return self.kept.get(key)

    def store(self, *, key: str, record: Any, body: Mapping[str, Any], patch: Patch) -> None:
        self.kept[key] = record

    def purge(self, *, key: str, body: Mapping[str, Any], patch: Patch) -> None:
        self.kept.pop(key, None)

    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        pass


def test_a_kopf_storage_gets_kopfs_record_with_every_key_and_strings_for_times() -> None:
    storage = _DictStorage({})
    storage.write(key="fn", record=RECORD, body={}, patch=Patch())
    assert storage.kept["fn"] == {
        "started": "2020-01-01T00:00:00.000000", "stopped": None, "delayed": None,
        "purpose": "create", "retries": 0, "success": False, "failure": False,
        "message": None, "subrefs": None,
    }  # fmt: skip
    assert storage.read(key="fn", body={}) == RECORD


def test_a_kopf_storages_unreadable_record_is_absent_with_a_warning() -> None:
    storage = _DictStorage({"fn": {"retries": "many"}, "other": "text"})
    assert storage.read(key="fn", body={}) is None
    assert storage.read(key="other", body={}) is None
    warnings = [str(warning) for warning in storage.drain_warnings()]
    assert len(warnings) == 2
    assert "the record of 'fn' in _DictStorage" in warnings[0]
    assert "'retries' is malformed" in warnings[0]
