"""Conformance: the messages of broken CEL rules (``x-kubernetes-validations``) given by a
``messageExpression``: its string trimmed; the rule's ``message`` (or ``failed rule: ...``)
where it evaluates to an empty string, to one with a line break, or fails; with the rule's
``reason`` and ``fieldPath``; on transition rules (``oldSelf``) too.

The rules are those of the Gizmo spec's ``worded`` object (see ``conftest._WORDED``).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio


def _gizmo(name: str, **worded: Any) -> dict[str, Any]:
    return {
        "apiVersion": "conformance.anyop.dev/v1",
        "kind": "Gizmo",
        "metadata": {"name": name},
        "spec": {"worded": worded},
    }


CASES: list[tuple[str, dict[str, Any]]] = [
    ("the expression's string", {"a": 12}),
    ("the expression's string, reading a field", {"a": 12, "e": "E"}),
    ("an empty string: the rule's message", {"b": "x"}),
    ("a line break: failed rule", {"c": "y"}),
    ("an expression that fails: the rule's message", {"d": "z"}),
    ("the expression's string trimmed, with the rule's reason and field path", {"f": "long"}),
    ("two rules broken, in their order", {"a": 10, "b": "x", "f": "abc"}),
    ("nothing broken", {"a": 1, "b": "w", "c": "c", "d": "d", "e": "e", "f": "ab"}),
]


@pytest.mark.parametrize("worded", [w for _, w in CASES], ids=[name for name, _ in CASES])
async def test_a_broken_rule_says_what_its_message_expression_gives(
    conform: Conform, worded: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", **worded))

    await conform(scenario)


async def test_a_message_expression_reads_the_expression_fields_it_names(
    conform: Conform,
) -> None:
    """A ``messageExpression`` that reads a field the object has: evaluated."""

    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", d="z", e="here"))

    await conform(scenario)


async def test_a_transition_rule_words_its_message_with_the_old_object(conform: Conform) -> None:
    """``oldSelf`` in a ``messageExpression`` of a transition rule, on an update (a create does
    not evaluate the rule)."""

    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _gizmo("g", g="same"))
        await t.patch(t.gizmos("g"), {"spec": {"worded": {"a": 1}}})
        await t.patch(t.gizmos("g"), {"spec": {"worded": {"g": "other"}}})
        await t.get(t.gizmos("g"))

    await conform(scenario)


async def test_a_message_expression_on_an_update_by_put(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made = await t.post(t.gizmos(), _gizmo("g", a=1))
        body = _gizmo("g", a=20, b="x")
        body["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
        await t.put(t.gizmos("g"), body)

    await conform(scenario)
