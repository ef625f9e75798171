"""Kopf's index semantics: dict results by key, None keeps, others under None; error modes."""

from __future__ import annotations

import math

import pytest

from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.indexes import (
    DEFAULT_EXCLUSION,
    OperatorIndex,
    OperatorIndexes,
    failure_of,
)
from anyop.handlers.outcomes import ErrorsMode

A = ("ns", "a", "uid-a")
B = ("ns", "b", "uid-b")


def as_dict(index: OperatorIndex) -> dict[object, list[object]]:
    return {key: list(store) for key, store in index.view.items()}


def test_dict_results_are_merged_by_key_and_values_are_not_nested() -> None:
    index = OperatorIndex()
    index.replace(A, {"key1": "valueA"})
    index.replace(B, {"key1": "valueB", "key2": {"key3": "valueC"}})
    assert as_dict(index) == {"key1": ["valueA", "valueB"], "key2": [{"key3": "valueC"}]}


def test_non_dict_results_go_under_the_none_key() -> None:
    index = OperatorIndex()
    index.replace(A, ("ns", "a"))
    index.replace(B, {"x"})
    assert as_dict(index) == {None: [("ns", "a"), {"x"}]}


def test_a_dict_subclass_is_a_plain_value() -> None:
    class Sub(dict[str, str]):
        pass

    index = OperatorIndex()
    index.replace(A, Sub(k="v"))
    assert as_dict(index) == {None: [{"k": "v"}]}


def test_none_keeps_the_old_values_and_none_values_are_indexed() -> None:
    index = OperatorIndex()
    index.replace(A, {"key": None})
    index.replace(A, None)
    assert as_dict(index) == {"key": [None]}


def test_a_new_result_replaces_the_old_one_and_empty_stores_vanish() -> None:
    index = OperatorIndex()
    index.replace(A, {"old": 1, "kept": 1})
    index.replace(A, {"kept": 2, "new": 2})
    assert as_dict(index) == {"kept": [2], "new": [2]}
    index.discard(A)
    assert as_dict(index) == {}
    assert A not in index


def test_store_membership_and_length() -> None:
    index = OperatorIndex()
    index.replace(A, {"k": "a"})
    index.replace(B, {"k": "b"})
    store = index.view["k"]
    assert len(store) == 2
    assert "a" in store
    assert "c" not in store


@pytest.mark.parametrize(
    ("error", "errors", "backoff", "remove", "exclude_for"),
    [
        (Exception("x"), None, None, False, 0.0),
        (Exception("x"), ErrorsMode.IGNORED, None, False, 0.0),
        (Exception("x"), ErrorsMode.PERMANENT, None, True, math.inf),
        (PermanentError("x"), None, None, True, math.inf),
        (TemporaryError("x", delay=30), None, None, True, 30),
        (Exception("x"), ErrorsMode.TEMPORARY, 5.0, True, 5.0),
        (Exception("x"), ErrorsMode.TEMPORARY, None, True, DEFAULT_EXCLUSION),
    ],
)
def test_failures_follow_kopfs_error_modes(
    error: Exception,
    errors: ErrorsMode | None,
    backoff: float | None,
    remove: bool,
    exclude_for: float,
) -> None:
    failure = failure_of(error, errors=errors, backoff=backoff)
    assert (failure.remove, failure.exclude_for) == (remove, exclude_for)


def test_exclusions_expire_and_forgetting_removes_everything() -> None:
    indexes = OperatorIndexes(["idx"])
    indexes.index("idx").replace(A, {"k": 1})
    indexes.fail(
        "idx", A, failure_of(TemporaryError("x", delay=10), errors=None, backoff=None), now=100
    )
    assert indexes.kwargs()["idx"] == {}
    assert indexes.excluded("idx", A, now=105)
    assert not indexes.excluded("idx", A, now=110)
    indexes.index("idx").replace(A, {"k": 1})
    indexes.forget(A)
    assert dict(indexes.kwargs()["idx"]) == {}


def test_an_index_is_named_by_its_function_even_when_nested() -> None:
    from anyop import on
    from anyop.handlers.registry import OperatorRegistry

    registry = OperatorRegistry()

    @on.index("pods", registry=registry)
    def by_owner(**_: object) -> None: ...

    on.index("pods", registry=registry, id="named")(lambda **_: None)
    assert [h.id for h in registry.indexing.handlers] == ["by_owner", "named"]


def test_an_index_without_a_usable_name_is_a_declaration_error() -> None:
    from anyop import on
    from anyop.handlers.registry import OperatorRegistry
    from anyop.handlers.selectors import DeclarationValueError

    with pytest.raises(DeclarationValueError, match="cannot be a kwarg"):
        on.index("pods", registry=OperatorRegistry())(lambda **_: None)
