"""FakeCluster's shard selectors, without a server (the real one is compared in
``tests/conformance/test_shard_selectors.py``)."""

from __future__ import annotations

import pytest

from anyop.kube.shard_ranges import uid_hash
from anyop.testing.fake.shard_selectors import parse_shard_selector
from anyop.testing.fake.statuses import StatusError

HALF = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"


def body(uid: str, namespace: str = "ns") -> dict[str, object]:
    return {"metadata": {"uid": uid, "namespace": namespace}}


def test_no_parameter_or_an_empty_one_selects_everything() -> None:
    assert parse_shard_selector(None) is None
    assert parse_shard_selector("") is None


def test_an_object_is_kept_when_its_hash_is_in_a_range() -> None:
    selector = parse_shard_selector(HALF)
    assert selector is not None
    for uid in ("a", "foobar", "0b8a6d0e-5f0f-4a4e-9c8e-2d3f6a7b8c9d", "x" * 40):
        assert selector(body(uid)) == (uid_hash(uid) < 1 << 63)


def test_parentheses_double_quotes_and_spaces_read_as_the_server_reads_them() -> None:
    text = (
        ' ( shardRange( object . metadata . namespace , "0x0000000000000000",'
        " '0x8000000000000000' ) ) || shardRange(object.metadata.namespace,"
        " '0x8000000000000000', '0x10000000000000000')"
    )
    selector = parse_shard_selector(text)
    assert selector is not None
    assert selector.key == "object.metadata.namespace"
    assert str(selector) == (
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
    )
    assert selector(body("any", namespace="whatever"))  # the whole space


@pytest.mark.parametrize(
    "text",
    [
        "   ",
        HALF + " &&",
        HALF + " || ",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
        "object.metadata.uid",
        "shardRange(object.metadata.uid, '0x0000000000000000', 7)",
        "shardRange('0x0000000000000000', '0x0000000000000000', '0x8000000000000000')",
    ],
)
def test_what_the_server_cannot_parse_is_refused_as_it_refuses_it(text: str) -> None:
    with pytest.raises(StatusError) as refused:
        parse_shard_selector(text)
    assert refused.value.code == 500
    assert refused.value.body["message"].startswith("invalid shard selector: ")
