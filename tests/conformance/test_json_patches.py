"""Conformance: JSON patches as kube-apiserver applies them (its JSON patch library: looser than
RFC 6902 in indexes and paths, and its own ``test``), one operation at a time on an object."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, Target

pytestmark = pytest.mark.anyio

OPERATIONS: list[dict[str, Any]] = [
    {"op": "add", "path": "/spec/l/-", "value": 9},
    {"op": "add", "path": "/spec/l/01", "value": 9},
    {"op": "add", "path": "/spec/l/3", "value": 9},
    {"op": "add", "path": "/spec/l/4", "value": 9},
    {"op": "add", "path": "/spec/l/-1", "value": 1},
    {"op": "add", "path": "/spec/l/-5", "value": 1},
    {"op": "add", "path": "/spec/l/1e0", "value": 1},
    {"op": "add", "path": "/spec/a~1b", "value": 1},
    {"op": "add", "path": "/spec/m~0n", "value": 1},
    {"op": "add", "path": "/spec/nope/deeper", "value": 1},
    {"op": "add", "path": "", "value": {}},
    {"op": "add", "path": "spec/x", "value": 1},
    {"op": "add", "path": "/spec/x"},
    {"op": "add", "path": "/spec/x", "value": 1, "extra": True},
    {"op": "remove", "path": "/spec/l/-"},
    {"op": "remove", "path": "/spec/l/5"},
    {"op": "remove", "path": "/spec/l/-1"},
    {"op": "remove", "path": "/spec/nope"},
    {"op": "replace", "path": "/spec/a~1b", "value": 1},
    {"op": "replace", "path": "/spec/nope", "value": 1},
    {"op": "test", "path": "/spec/l/0", "value": 1.0},
    {"op": "test", "path": "/spec/l/0", "value": "1"},
    {"op": "test", "path": "/spec/x", "value": None},
    {"op": "test", "path": "/spec/nope", "value": None},
    {"op": "test", "path": "/spec/o", "value": {"k": "v", "more": 1}},
    {"op": "test", "path": "/spec/o", "value": {}},
    {"op": "test", "path": "/spec/l", "value": [1, 2]},
    {"op": "move", "from": "/spec/l", "path": "/spec/l/0"},
    {"op": "move", "from": "/spec/nope", "path": "/spec/y"},
    {"op": "copy", "from": "/spec/l/0", "path": "/spec/l/-"},
    {"op": "copy", "from": "/spec/nope", "path": "/spec/y"},
    {"path": "/spec/x", "value": 1},
    {"op": "ADD", "path": "/spec/x", "value": 1},
]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[json.dumps(o) for o in OPERATIONS])
async def test_an_operation_applies_as_kube_apiservers_json_patch(
    conform: Conform, operation: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        name = "g-" + t.namespace
        spec = {"l": [1, 2, 3], "a/b": 0, "x": None, "o": {"k": "v"}}
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name},
                "spec": spec}  # fmt: skip
        await t.post(t.gadgets(), body)
        await t.patch(t.gadgets(name), [operation], ct=JSON_PATCH)
        await t.delete(t.gadgets(name))

    await conform(scenario)
