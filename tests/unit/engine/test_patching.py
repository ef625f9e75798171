"""Applying a cycle's patch: the order of the requests, and JSON patches that meet a conflict."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tests.unit.engine.test_once import WITH_STATUS, WITHOUT_STATUS, Server

from anyop.engine.cycle.patch_writer import apply_patch, json_parts, merge_requests
from anyop.errors import InvalidError
from anyop.kube.patches import Patch
from anyop.storage.finalizers import allow_deletion, block_deletion

pytestmark = pytest.mark.anyio


class Meddling(Server):
    """Another client writes before each of our JSON patches, ``times`` times in all."""

    def __init__(self, times: int, **kwargs: Any) -> None:
        super().__init__(WITH_STATUS, **kwargs)
        self.times = times
        self.meddle: Any = lambda body: body["metadata"].setdefault("labels", {})

    async def patch(self, resource: Any, payload: Any, **kwargs: Any) -> Any:
        if isinstance(payload, list) and self.times > 0:
            self.times -= 1
            self.change(self.meddle)
        return await super().patch(resource, payload, **kwargs)


def patch_with(*fns: Any, **merge: Any) -> Patch:
    patch = Patch(merge)
    patch.fns.extend(fns)
    return patch


async def test_a_json_patch_that_meets_another_write_is_applied_to_the_fresh_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Meddling(times=3)
    client: Any = server
    landed: list[Any] = []
    patch = patch_with(block_deletion("x/y"), status={"a": 1})
    with caplog.at_level(logging.DEBUG, logger="anyop"):
        response = await apply_patch(client, WITH_STATUS, server.body(), patch=patch, landed=landed)
    assert response is not None
    assert response["metadata"]["finalizers"] == ["x/y"]
    assert server.body()["metadata"]["finalizers"] == ["x/y"]
    assert [body["metadata"]["resourceVersion"] for body in landed] == ["2", "6"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("changed meanwhile" in message for message in caplog.messages) == 3


async def test_a_json_patch_that_the_fresh_object_no_longer_needs_is_not_sent() -> None:
    server = Meddling(times=1)
    client: Any = server
    stale = server.body()
    server.change(lambda body: body["metadata"].update(finalizers=["x/y"]))
    response = await apply_patch(
        client, WITH_STATUS, stale, patch=patch_with(block_deletion("x/y"))
    )
    assert response is None  # nothing of ours was written
    assert server.requests == 1  # the refused one


async def test_a_refused_json_patch_of_an_unchanged_object_is_an_error() -> None:
    server = Server(WITHOUT_STATUS)
    client: Any = server

    def impossible(body: Any) -> None:
        body["metadata"]["finalizers"] = ["a"]

    refused: list[Any] = []

    async def refusing(resource: Any, payload: Any, **kwargs: Any) -> Any:
        refused.append(payload)
        raise InvalidError("spec.x: Invalid value", status=422)

    server.patch = refusing  # type: ignore[method-assign]
    with pytest.raises(InvalidError, match=r"spec\.x"):
        await apply_patch(client, WITHOUT_STATUS, server.body(), patch=patch_with(impossible))
    assert len(refused) == 1  # not retried: the object is at the tested version


async def test_the_release_is_sent_after_the_merge_patches_and_sees_them() -> None:
    server = Server(WITH_STATUS)
    server.change(lambda body: body["metadata"].update(finalizers=["x/y"]))
    client: Any = server
    patch = patch_with(allow_deletion("x/y"), status={"a": 1}, metadata={"labels": {"b": "2"}})
    response = await apply_patch(client, WITH_STATUS, server.body(), patch=patch, first="main")
    assert response is not None
    versions = [state["metadata"] for state in server.states[1:]]
    assert [meta.get("labels") for meta in versions] == [{"b": "2"}, {"b": "2"}, {"b": "2"}]
    assert [meta.get("finalizers") for meta in versions] == [["x/y"], ["x/y"], []]


def test_the_merge_patch_with_the_state_goes_first() -> None:
    patch = Patch({"status": {"a": 1}, "metadata": {"annotations": {"b": "2"}}})
    assert [sub for _, sub in merge_requests(WITH_STATUS, patch)] == ["status", None]
    assert [sub for _, sub in merge_requests(WITH_STATUS, patch, first="main")] == [None, "status"]
    assert [sub for _, sub in merge_requests(WITHOUT_STATUS, patch, first="main")] == [None]
    assert merge_requests(WITH_STATUS, Patch()) == []


def test_the_status_json_patch_goes_before_the_main_one() -> None:
    def both(body: Any) -> None:
        body["metadata"]["finalizers"] = []
        body.setdefault("status", {})["a"] = 1

    body = {"metadata": {"resourceVersion": "1", "finalizers": ["x/y"]}}
    assert [sub for _, sub in json_parts(WITH_STATUS, body, patch_with(both))] == ["status", None]
    assert [sub for _, sub in json_parts(WITHOUT_STATUS, body, patch_with(both))] == [None]


async def test_after_a_conflict_in_the_status_part_the_main_part_is_made_anew() -> None:
    server = Meddling(times=1)
    client: Any = server
    server.change(lambda body: body["metadata"].update(finalizers=["other/f", "x/y"]))
    stale = server.body()

    def other_leaves(body: Any) -> None:
        body["metadata"]["finalizers"] = ["x/y"]

    server.meddle = other_leaves  # another writer removes its finalizer before our JSON patch

    def status_and_release(body: Any) -> None:
        body.setdefault("status", {})["a"] = 1
        body["metadata"]["finalizers"] = [f for f in body["metadata"]["finalizers"] if f != "x/y"]

    await apply_patch(client, WITH_STATUS, stale, patch=patch_with(status_and_release))
    assert server.body()["metadata"]["finalizers"] == []
    assert server.body()["status"] == {"a": 1}
    assert server.requests == 3  # the refused status part, then each part once


def test_a_patch_of_functions_only_has_no_merge_patch() -> None:
    patch = patch_with(block_deletion("x/y"))
    assert merge_requests(WITHOUT_STATUS, patch) == []
    assert merge_requests(WITH_STATUS, patch) == []
