"""Hostile framework annotations: RELIABILITY.md §5 rows 32 and 33, the shapes the e2e test lacks.

Anyone who may patch an object may write anyop's annotations. Whatever is there (deep nesting,
a value near the 256 KiB limit, wrong types, NaN, numbers too large), reading it never raises:
the record is absent, with one warning, so the engine treats the state as unknown.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anyop.storage.diffbase import AnnotationsDiffBaseStorage
from anyop.storage.progress import AnnotationsProgressStorage

PREFIX = "kopf.zalando.org"
DEEP_ARRAY = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 5000 + "1" + "}" * 5000
HOSTILE = [
    pytest.param(DEEP_ARRAY, id="5000-deep array"),
    pytest.param(DEEP_OBJECT, id="5000-deep object"),
    pytest.param(json.dumps({"started": "x" * 250 * 1024}), id="250 KiB value"),
    pytest.param('{"retries": 1e999}', id="infinite number"),
    pytest.param('{"retries": NaN}', id="NaN"),
    pytest.param('{"retries": ' + "9" * 5000 + "}", id="5000-digit number"),
    pytest.param('{"started": {"nested": []}, "success": "yes"}', id="wrong types"),
    pytest.param("null", id="null"),
    pytest.param('"a string"', id="a string"),
    pytest.param("\udcff", id="a lone surrogate"),
]

UNREADABLE = {DEEP_ARRAY, DEEP_OBJECT, '{"retries": ' + "9" * 5000 + "}", '"a string"', "\udcff"}


def annotated(key: str, value: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {key: value}}}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_progress_annotation_is_absent_with_one_warning(value: str) -> None:
    storage = AnnotationsProgressStorage(prefix=PREFIX)
    body = annotated(f"{PREFIX}/create_fn", value)
    assert storage.fetch(key="create_fn", body=body) is None
    (warning,) = storage.drain_warnings()
    assert warning.where == f"annotation '{PREFIX}/create_fn'"
    assert len(str(warning)) < 2000  # the warning does not repeat a huge value


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_diffbase_annotation_never_raises_and_what_is_no_object_is_absent(
    value: str,
) -> None:
    """A diff-base is any JSON object (odd values included); only what is none is absent."""
    storage = AnnotationsDiffBaseStorage(prefix=PREFIX)
    body = annotated(f"{PREFIX}/last-handled-configuration", value)
    essence = storage.fetch(body=body)
    warnings = storage.drain_warnings()
    assert all(len(str(w)) < 2000 for w in warnings)  # the warning does not repeat a huge value
    if value == "null":  # absent without a warning, as Kopf writes it
        assert (essence, warnings) == (None, [])
    elif value in UNREADABLE:
        assert essence is None
        assert len(warnings) == 1
    else:
        assert isinstance(essence, dict)
        assert warnings == []
