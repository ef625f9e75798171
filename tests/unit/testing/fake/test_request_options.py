"""A request's options read and checked as kube-apiserver does (the conformance suite compares
them with the real server's answers; these pin the rules without one)."""

from __future__ import annotations

import pytest

from anyop.testing.fake.request_options import (
    checked_delete,
    checked_get,
    checked_list,
    checked_write,
    flag,
    integer,
)
from anyop.testing.fake.statuses import StatusError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("f", True),
        ("", True),
        ("1", True),
        ("yes", True),
    ],
)
def test_a_flag_is_false_only_for_0_and_false(value: str | None, expected: bool) -> None:
    assert flag({} if value is None else {"watch": value}, "watch") is expected


def test_an_integer_parses_as_go_parseint() -> None:
    assert integer({"limit": "-5"}, "limit") == -5
    assert integer({}, "limit") is None
    for text, error in (("abc", "invalid syntax"), ("1e3", "invalid syntax"),
                        ("9" * 20, "value out of range")):  # fmt: skip
        with pytest.raises(StatusError) as caught:
            integer({"limit": text}, "limit")
        assert caught.value.code == 400
        assert caught.value.body["message"] == f'strconv.ParseInt: parsing "{text}": {error}'


def test_a_writes_options_are_checked_together() -> None:
    assert checked_write("CreateOptions", {}) == "Warn"
    query = {"fieldManager": "m" * 129, "dryRun": "x", "fieldValidation": "strict"}
    with pytest.raises(StatusError) as caught:
        checked_write("CreateOptions", query)
    fields = [cause["field"] for cause in caught.value.body["details"]["causes"]]
    assert fields == ["fieldManager", "dryRun", "fieldValidation"]
    with pytest.raises(StatusError, match="may not be specified for non-apply patch"):
        checked_write("PatchOptions", {"force": "false"}, apply=False)
    with pytest.raises(StatusError, match="is required for apply patch"):
        checked_write("PatchOptions", {}, apply=True)


def test_deletes_lists_and_gets_refuse_what_kube_apiserver_refuses() -> None:
    checked_delete({"propagationPolicy": "Orphan"}, {"dryRun": "All"})
    with pytest.raises(StatusError, match='Unsupported value: "x"'):
        checked_delete({"propagationPolicy": "x"}, {})
    checked_list({"resourceVersion": "5", "resourceVersionMatch": "Exact"}, watch=False)
    with pytest.raises(StatusError, match="forbidden for list"):
        checked_list({"sendInitialEvents": "true"}, watch=False)
    checked_list({"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}, watch=True)
    with pytest.raises(StatusError, match=r"strconv\.ParseUint"):
        checked_get({"resourceVersion": "-1"})
