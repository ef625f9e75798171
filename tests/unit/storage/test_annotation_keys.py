"""Annotation key conventions: Kopf's v1/v2 keys, hashing, and markers, byte for byte."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.errors import ConfigError
from anyop.kube.patches import Patch
from anyop.storage.annotations import AnnotationsNaming, hash_suffix, mark_key, safe_name

PREFIX = "my-operator.example.com"  # 23 characters: 39 left for v1 names, 63 for v2 names

# Vectors from Kopf's own key tests (the prefix plus the hashed tail must be identical).
V1_KEYS = [
    ("x", PREFIX + "/x"),
    ("x" * 39, PREFIX + "/" + "x" * 39),
    ("x" * 40, PREFIX + "/" + "x" * 30 + "xx-tEokcg"),
    ("y" * 40, PREFIX + "/" + "y" * 30 + "yy-VZlvhw"),
    ("z" * 40, PREFIX + "/" + "z" * 30 + "zz-LlPQyA"),
    ("fn" * 323, PREFIX + "/" + "fn" * 15 + "fn-Az-r.g"),
]
V2_KEYS = [
    ("x", PREFIX + "/x"),
    ("x" * 63, PREFIX + "/" + "x" * 63),
    ("x" * 64, PREFIX + "/" + "x" * 54 + "xx-SItAqA"),
    ("y" * 64, PREFIX + "/" + "y" * 54 + "yy-0d251g"),
    ("z" * 64, PREFIX + "/" + "z" * 54 + "zz-E7wvIA"),
    ("fn" * 323, PREFIX + "/" + "fn" * 27 + "fn-Az-r.g"),
]


@pytest.mark.parametrize(("key", "expected"), V1_KEYS)
def test_v1_keys_cut_the_whole_key_to_63_characters(key: str, expected: str) -> None:
    assert AnnotationsNaming(PREFIX, v1=True).make_v1_key(key) == expected


@pytest.mark.parametrize(("key", "expected"), V2_KEYS)
def test_v2_keys_cut_only_the_name_to_63_characters(key: str, expected: str) -> None:
    full = AnnotationsNaming(PREFIX, v1=True).make_v2_key(key)
    assert full == expected
    assert len(full.split("/", 1)[1]) <= 63


def test_handler_ids_become_safe_names() -> None:
    naming = AnnotationsNaming("kopf.zalando.org", v1=True)
    assert naming.make_keys("update_fn/s2/z1") == ["kopf.zalando.org/update_fn.s2.z1"]
    assert naming.make_keys("create_fn/spec.field") == ["kopf.zalando.org/create_fn.spec.field"]
    assert naming.make_keys("lambda:<stdin>:5") == ["kopf.zalando.org/lambda:_stdin_:5"]
    assert safe_name("a_b.c-d/e") == "a_b.c-d.e"


def test_both_generations_of_keys_are_used_when_they_differ() -> None:
    naming = AnnotationsNaming("kopf.zalando.org", v1=True)
    long_id = "handler_" + "a" * 50  # 58 characters: fits v2, not v1 (63 - 17)
    assert naming.make_keys(long_id) == [
        f"kopf.zalando.org/{long_id}",
        naming.make_v1_key(long_id),
    ]
    assert naming.make_v1_key(long_id) != naming.make_v2_key(long_id)
    assert AnnotationsNaming("kopf.zalando.org", v1=False).make_keys(long_id) == [
        f"kopf.zalando.org/{long_id}"
    ]


def test_hash_suffixes_are_stable_and_end_with_an_alphanumeric() -> None:
    assert hash_suffix("x" * 64) == "-SItAqA"
    assert hash_suffix("anything")[-1].isalnum()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"kind": "ReplicaSet", "metadata": {"ownerReferences": [{"kind": "Deployment"}]}},
            "xyz-ofDRS",
        ),
        ({"kind": "ReplicaSet", "metadata": {"ownerReferences": [{"kind": "Other"}]}}, "xyz"),
        ({"kind": "Pod", "metadata": {"ownerReferences": [{"kind": "Deployment"}]}}, "xyz"),
        (None, "xyz"),
    ],
)
def test_replicasets_owned_by_deployments_get_their_own_keys(body: Any, expected: str) -> None:
    assert mark_key("xyz", body) == expected
    naming = AnnotationsNaming("kopf.dev", v1=True)
    assert naming.make_keys("xyz", body) == [f"kopf.dev/{expected}"]


def test_custom_prefixes_write_the_kopf_managed_marker_once() -> None:
    naming = AnnotationsNaming("my-op.example.com", v1=True)
    patch = Patch()
    naming.store_marker(patch, {})
    assert patch.meta.annotations == {"my-op.example.com/kopf-managed": "yes"}
    already = Patch()
    naming.store_marker(
        already, {"metadata": {"annotations": {"my-op.example.com/kopf-managed": "yes"}}}
    )
    assert not already


def test_kopf_prefixes_need_no_marker_but_anyop_writes_one() -> None:
    kopf, anyop = Patch(), Patch()
    AnnotationsNaming("kopf.zalando.org", v1=True).store_marker(kopf, {})
    AnnotationsNaming("anyop.dev", v1=False).store_marker(anyop, {})
    assert not kopf
    assert anyop.meta.annotations == {"anyop.dev/kopf-managed": "yes"}


@pytest.mark.parametrize("prefix", ["", "x" * (253 - 63)])
def test_prefixes_must_leave_room_for_names(prefix: str) -> None:
    with pytest.raises(ConfigError, match="prefix"):
        AnnotationsNaming(prefix, v1=True)
