"""Conformance: shard selectors (``shardSelector``, KEP-5866) on lists and watches.

The local control plane runs kube-apiserver with the ``ShardedListAndWatch`` feature gate on.
Uids differ between the two servers, so the scenarios record whether each server kept exactly
the objects that the 64-bit FNV-1a hash of their uid puts in the ranges (computed here, as
anyop's replicas compute it), not which names those were.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

from anyop.kube.shard_ranges import shard_selector, uid_hash

pytestmark = pytest.mark.anyio

HALF = 1 << 63
RANGES = [(0, HALF // 2), (HALF, HALF + HALF // 2)]  # the first and the third quarter
SELECTOR = shard_selector(RANGES)


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def _inside(item: dict[str, Any]) -> bool:
    hashed = uid_hash(item["metadata"]["uid"])
    return any(start <= hashed < end for start, end in RANGES)


async def _objects(t: Target, count: int) -> dict[str, bool]:
    """Create ``count`` ConfigMaps; say of each whether the selector should keep it."""
    for index in range(count):
        await t.call("POST", t.cm(), _cm(f"cm-{index:02d}"), record=lambda d: None)
    listed = await t.call("GET", t.cm(), record=lambda d: None)
    return {item["metadata"]["name"]: _inside(item) for item in listed["items"]}


async def test_a_list_keeps_the_objects_whose_uid_hash_is_in_the_ranges(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        expected = await _objects(t, 12)
        kept = {name for name, inside in expected.items() if inside}
        answer = await t.get(
            t.cm(),
            params={"shardSelector": SELECTOR},
            record=lambda d: {"shardInfo": d["metadata"].get("shardInfo"), "kind": d["kind"]},
        )
        t.note(
            "kept exactly the objects in range",
            {i["metadata"]["name"] for i in answer["items"]} == kept,
        )

    await conform(scenario)


async def test_a_list_of_custom_resources_is_sharded_without_saying_so(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for index in range(8):
            body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
                    "metadata": {"name": f"w-{index}"}, "spec": {"size": index}}  # fmt: skip
            await t.call("POST", t.widgets(), body, record=lambda d: None)
        listed = await t.call("GET", t.widgets(), record=lambda d: None)
        kept = {i["metadata"]["name"] for i in listed["items"] if _inside(i)}
        answer = await t.get(
            t.widgets(),
            params={"shardSelector": SELECTOR},
            record=lambda d: sorted(d["metadata"]),
        )
        t.note(
            "kept exactly the objects in range",
            {i["metadata"]["name"] for i in answer["items"]} == kept,
        )

    await conform(scenario)


async def test_pages_of_a_sharded_list_carry_the_selector(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        expected = await _objects(t, 10)
        kept = sorted(name for name, inside in expected.items() if inside)
        params = {"shardSelector": SELECTOR, "limit": "2"}
        # Whether there is a next page depends on how many uids fall in range: noted, not recorded.
        paging = {"continue", "remainingItemCount"}
        first = await t.get(
            t.cm(), params=params, record=lambda d: sorted(set(d["metadata"]) - paging)
        )
        names = [i["metadata"]["name"] for i in first["items"]]
        token, echoes = first["metadata"].get("continue"), set()
        # A page has a next one whenever any object follows its last one, in range or not (so
        # the next may be empty), and the count left is of every object, in range or not:
        # a shard selector is no label or field selector. Which pages there are depends on the
        # uids, so what the pages hold together is compared, whatever the uids.
        left = first["metadata"].get("remainingItemCount")
        t.note("the count left is of all objects", left == (len(expected) - 2 if token else None))
        while token:  # how many pages there are depends on the uids: not recorded
            page = await t.call("GET", t.cm(), params={**params, "continue": token})
            t.records.pop()
            names += [i["metadata"]["name"] for i in page["items"]]
            echoes.add(page["metadata"].get("shardInfo", {}).get("selector"))
            token = page["metadata"].get("continue")
        t.note("the pages hold exactly the objects in range, in order", names == kept)
        t.note("every later page echoes the selector", echoes <= {SELECTOR})

    await conform(scenario)


async def test_a_namespace_shard_and_the_whole_space(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _objects(t, 3)
        whole = "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"
        await t.get(
            t.cm(),
            params={"shardSelector": whole},
            record=lambda d: (len(d["items"]), d["metadata"].get("shardInfo")),
        )
        spaced = f"( {SELECTOR.replace(' || ', ') || (')} )"
        await t.get(
            t.cm(),
            params={"shardSelector": spaced},
            record=lambda d: d["metadata"].get("shardInfo"),
        )

    await conform(scenario)


@pytest.mark.parametrize(
    "selector",
    [
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x000000000000000g', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x20000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000')",
        "otherRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
        "  ",
    ],
    ids=[
        "short",
        "reversed",
        "field",
        "prefix",
        "digit",
        "long",
        "arity",
        "function",
        "mixed",
        "blank",
    ],
)
async def test_a_bad_shard_selector_is_refused_with_the_server_s_words(
    conform: Conform, selector: str
) -> None:
    async def scenario(t: Target) -> None:
        await t.get(
            t.cm(),
            params={"shardSelector": selector},
            record=lambda d: d,
        )

    await conform(scenario)


async def test_a_sharded_watch_sends_only_the_objects_in_range(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        listed = await t.call("GET", t.cm(), record=lambda d: None)
        expected = await _objects(t, 10)  # created after the listing: the watch replays them
        kept = {name for name, inside in expected.items() if inside}
        params = {
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "shardSelector": SELECTOR,
        }

        def complete(events: list[dict[str, Any]]) -> bool:
            return sum(1 for event in events if event["type"] == "ADDED") >= len(kept)

        events = await t.watch(t.cm(), params, until=complete, limit=10)
        t.records.pop()  # which names those are differs with the uids: compared below instead
        seen = {e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"}
        t.note("the watch sent exactly the objects in range", seen == kept)

    await conform(scenario)
