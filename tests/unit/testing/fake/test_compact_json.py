"""FakeCluster's answers as JSON text: msgspec's encoding where installed, the standard library's
where not (or where msgspec refuses a part), the same document either way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anyop.testing.fake import json_copy
from anyop.testing.fake.json_copy import compact_json

documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # lone surrogates too: msgspec refuses them, the standard library escapes them
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_any_json_document_reads_back_as_it_was_with_and_without_msgspec(document: Any) -> None:
    fast = compact_json(document)
    assert json.loads(fast) == document
    saved = json_copy._fast_json
    json_copy._fast_json = None
    try:
        assert json.loads(compact_json(document)) == document
    finally:
        json_copy._fast_json = saved


def test_the_encoding_is_msgspecs_compact_utf8_as_kube_apiserver_writes() -> None:
    assert json_copy._fast_json is not None, "msgspec, a test dependency, is not installed"
    document = {"metadata": {"name": "café"}, "data": {"k": "a:b"}, "n": [1, 2.5, None, True]}
    assert (
        compact_json(document)
        == '{"metadata":{"name":"café"},"data":{"k":"a:b"},"n":[1,2.5,null,true]}'.encode()
    )


def test_a_part_msgspec_refuses_is_encoded_by_the_standard_library() -> None:
    assert compact_json({"s": "\ud800é"}) == b'{"s":"\\ud800\\u00e9"}'


@pytest.mark.parametrize("document", [{"a": 1}, [], "x"])
def test_the_fallback_alone_writes_compact_ascii(
    document: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_copy, "_fast_json", None)
    assert compact_json(document) == json.dumps(document, separators=(",", ":")).encode()
