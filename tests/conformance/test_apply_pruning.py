"""Conformance: what a server-side apply removes and records beyond the plain cases: an applied
``metadata.generateName`` (a field of its applier's, removed when no one applies it any
more), and structured merge's last pruning step (``addBackDanglingItems``): a field the
applier held things in, left holding nothing a field set finds (only fields no one owns and
empty lists), goes whole.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, MERGE, Target

pytestmark = pytest.mark.anyio

APPLY = "application/apply-patch+yaml"


def _shown(d: Any) -> Any:
    """A refusal as it is; else the object's spec (or data), generateName and owners."""
    if d.get("kind") == "Status":
        return d
    entries = d["metadata"].get("managedFields") or []
    owners = sorted(
        (e["manager"], e["operation"], json.dumps(e.get("fieldsV1"), sort_keys=True))
        for e in entries
    )
    return {
        "spec": d.get("spec"),
        "data": d.get("data"),
        "generateName": d["metadata"].get("generateName"),
        "owners": owners,
    }


async def _apply(t: Target, path: str, body: Any, manager: str) -> Any:
    return await t.patch(path, json.dumps(body).encode(), ct=APPLY,
                         params={"fieldManager": manager}, record=_shown)  # fmt: skip


async def _patch(t: Target, path: str, body: Any, manager: str) -> Any:
    return await t.patch(path, body, ct=MERGE, params={"fieldManager": manager}, record=_shown)


def _cm(generate: str | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "a"}
    if generate is not None:
        metadata["generateName"] = generate
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def _gizmo(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"}}
    return {**body, "spec": spec} if spec else body


# -- generateName -------------------------------------------------------------------------------


async def test_a_created_generate_name_is_its_creators_field(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("made-", x="1"), params={"fieldManager": "maker"}, record=_shown)
        await _apply(t, t.cm("b"), {**_cm("applied-"), "metadata": {
            "name": "b", "generateName": "applied-"}}, "applier")  # fmt: skip

    await conform(scenario)


async def test_an_applied_generate_name_is_the_appliers_until_dropped(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1"), "one")
        await _apply(t, t.cm("a"), _cm("gen-", x="1"), "one")
        await _apply(t, t.cm("a"), _cm("gen-", x="1"), "one")  # unchanged
        await _apply(t, t.cm("a"), _cm(x="1"), "one")  # dropped: removed
        await t.get(t.cm("a"), record=_shown)

    await conform(scenario)


async def test_a_generate_name_two_appliers_share_stays_with_the_other(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm("gen-", x="1"), "one")
        await _apply(t, t.cm("a"), _cm("gen-"), "two")
        await _apply(t, t.cm("a"), _cm(x="1"), "one")
        await _apply(t, t.cm("a"), _cm("other-"), "two")
        await _apply(t, t.cm("a"), _cm(), "two")

    await conform(scenario)


async def test_a_generate_name_an_update_set_stays_after_an_apply(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm("gen-", x="1"), "one")
        await _patch(t, t.cm("a"), {"metadata": {"generateName": "patched-"}}, "editor")
        await _apply(t, t.cm("a"), _cm(x="1"), "one")
        await _apply(t, t.cm("a"), _cm("gen-", x="1"), "one")  # a conflict with the editor
        await t.put(t.cm("a"), _cm(x="2"), params={"fieldManager": "putter"}, record=_shown)
        await t.put(t.cm("a"), _cm("put-", x="2"), params={"fieldManager": "putter"},
                    record=_shown)  # fmt: skip

    await conform(scenario)


# -- dangling fields ----------------------------------------------------------------------------


async def test_a_spec_left_with_an_updaters_empty_list_goes_whole(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(low=1), "one")  # its defaults are no one's
        await _patch(t, t.gizmos("g"), {"spec": {"labels": []}}, "editor")
        await _apply(t, t.gizmos("g"), _gizmo(), "one")
        await t.get(t.gizmos("g"), record=_shown)

    await conform(scenario)


async def test_a_spec_with_an_updaters_item_keeps_it(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(low=1), "one")
        await _patch(t, t.gizmos("g"), {"spec": {"labels": ["x"]}}, "editor")
        await _apply(t, t.gizmos("g"), _gizmo(), "one")

    await conform(scenario)


async def test_a_spec_left_with_an_updaters_scalar_keeps_it(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(low=1), "one")
        await _patch(t, t.gizmos("g"), {"spec": {"labels": [], "plain": "p"}}, "editor")
        await _apply(t, t.gizmos("g"), _gizmo(), "one")

    await conform(scenario)


async def test_an_appliers_own_empty_list_does_not_hold_its_spec(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(low=1, labels=[]), "one")
        await _apply(t, t.gizmos("g"), _gizmo(labels=[]), "one")
        await _apply(t, t.gizmos("g"), _gizmo(high=2), "two")
        await _patch(t, t.gizmos("g"), {"spec": {"labels": []}}, "editor")
        await _apply(t, t.gizmos("g"), _gizmo(labels=[]), "two")

    await conform(scenario)


async def test_a_list_emptied_of_the_appliers_items_is_null(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(low=1, labels=["a"]), "one")
        await _patch(t, t.gizmos("g"), {"spec": {"labels": ["a"]}}, "editor")
        await _apply(t, t.gizmos("g"), _gizmo(low=1), "one")
        await _apply(t, t.gizmos("g"), _gizmo(), "one")

    await conform(scenario)
