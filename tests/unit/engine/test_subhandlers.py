"""Sub-handler records and the execute() guard, without a server."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import anyop
from anyop.engine.cycle.subhandlers import _children
from anyop.handlers.records import ResourceChangingHandler


def parent_fn(**_: Any) -> None: ...


def child_fn(**_: Any) -> None: ...


PARENT = ResourceChangingHandler(id="create_fn", fn=parent_fn)


def test_children_from_a_dict_are_named_by_their_keys_under_the_parent() -> None:
    children = list(
        _children(PARENT, {"item1": child_fn, "item2": child_fn}, handlers=None, registry=None)
    )
    assert [child.id for child in children] == ["create_fn/item1", "create_fn/item2"]


def test_children_from_a_list_are_named_by_their_functions() -> None:
    children = list(_children(PARENT, [child_fn], handlers=None, registry=None))
    assert [child.id for child in children] == ["create_fn/child_fn"]


def test_a_partial_child_is_accepted() -> None:
    children = list(
        _children(PARENT, {"p": functools.partial(child_fn)}, handlers=None, registry=None)
    )
    assert children[0].id == "create_fn/p"


def test_a_child_that_is_not_callable_is_named_in_the_error() -> None:
    with pytest.raises(TypeError, match="'oops' is not callable"):
        list(_children(PARENT, {"x": "oops"}, handlers=None, registry=None))  # type: ignore[dict-item]


@pytest.mark.anyio
async def test_execute_outside_of_a_handler_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="only inside a running resource-changing handler"):
        await anyop.execute(fns={"x": lambda **_: None})
