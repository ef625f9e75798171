"""Conformance: CEL's optional types in CRD validation rules, as cel-go's type checker gives
them when the CRD is written (``self.?a`` is an ``optional_type(int)``, ``orValue`` takes and
gives its value's type, ``oldSelf`` of an ``optionalOldSelf`` rule is an optional of
``self``'s type) and as rules evaluate them (the ``optMap`` and ``optFlatMap`` macros, a list's
``first()`` and ``last()``, ``optional.unwrap``).

The checks are dry-run creates of a CRD whose rules sit at ``spec`` (or, with
``optionalOldSelf``, at ``spec.a``), recorded as the refusal's causes or the kind written; the
evaluations make objects of a CRD of their own.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target
from tests.conformance.test_cel_library import _cases, own_crd
from tests.conformance.test_crd_cel_limits import CRDS, _crd, _shown

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
FIELDS: Body = {
    "a": {"type": "integer"},
    "s": {"type": "string", "maxLength": 20},
    "l": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
    "m": {"type": "object", "maxProperties": 10,
          "additionalProperties": {"type": "string", "maxLength": 20}},
    "o": {"type": "object", "properties": {"x": {"type": "integer"}}},
}  # fmt: skip

CHECKED = [
    # refused: an optional's value type meets another type
    "self.?a.orValue(0) == 'x'",
    "self.?a.orValue('') > 1",
    "self.?a == 1",
    "optional.of(self.a).orValue('x') == 'x'",
    "self.?a.or(self.?s).hasValue()",
    "optional.ofNonZeroValue(self.s).value() + 1 == 2",
    "self.?a.value() + 'x' == 'y'",
    "self.?m.k.orValue('') == 1",
    "self.?l[0].orValue('') == ''",
    "self.?a.orValue(0)",
    "self.?a.optMap(v, v + 'x').hasValue()",
    "self.?l.orValue([]).exists(x, x == 'a')",
    # refused: a selection or an index the type has not
    "self.?o.x.orValue(0) > 0 && self.?o.?nope.hasValue()",
    "self.?s.?x.hasValue()",
    "self.l[?'k'].hasValue()",
    # written
    "self.?a.hasValue() && self.?s.value().size() > 1",
    "self.?l[?0].orValue(0) > 1 && self.?m[?'k'].orValue('') != 'x'",
    "optional.none().orValue(1) == 1",
    "self.?a.optMap(v, v + 1).orValue(0) > 0",
    "self.?l.optFlatMap(x, x[?0]).orValue(0) >= 0",
    "self.l.first().orValue(0) >= 0 && self.l.last().hasValue()",
    "self.?o.orValue(self.o).x > 0",
    "[?self.?a, ?optional.of(1)].all(x, x > 0)",
    "optional.unwrap([self.?a, optional.none()]).size() < 2",
    "[self.?s].unwrapOpt().size() < 2",
    # refused: an estimated cost without bounds (a call's result is of no known size)
    "[self.?s].unwrapOpt().all(x, x != 'no')",
    "self.?s.orValue('').matches('^a')",
    "self.?m.optFlatMap(m, m.?k).optMap(k, k + '!').orValue('') != 'no!'",
]
"""Rules at ``spec``, refused or written as cel-go's type checker finds them."""

OLD_SELF = [
    "!oldSelf.hasValue() || self >= oldSelf.value()",
    "self >= oldSelf.orValue(0)",
    "oldSelf.optMap(o, self - o).orValue(0) < 10",
    "self == oldSelf",
    "oldSelf.orValue('') == ''",
    "oldSelf.hasValue() && oldSelf > 1",
]
"""Rules at ``spec.a`` with ``optionalOldSelf``: ``oldSelf`` is an ``optional_type(int)``."""


def _checked(rule: str, *, old: bool = False) -> Body:
    if not old:
        return {"type": "object", "properties": {"spec": {
            "type": "object", "properties": FIELDS,
            "x-kubernetes-validations": [{"rule": rule}]}}}  # fmt: skip
    own = {**FIELDS["a"], "x-kubernetes-validations": [{"rule": rule, "optionalOldSelf": True}]}
    return {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {**FIELDS, "a": own}}}}  # fmt: skip


@pytest.mark.parametrize("rule", CHECKED)
async def test_a_rule_s_optional_types_are_checked_when_the_crd_is_written(
    conform: Conform, rule: str
) -> None:
    async def scenario(t: Target) -> None:
        crd = _crd(f"{t.namespace}.example.com", _checked(rule))
        await t.post(CRDS, crd, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


@pytest.mark.parametrize("rule", OLD_SELF)
async def test_old_self_of_an_optional_old_self_rule_is_an_optional(
    conform: Conform, rule: str
) -> None:
    async def scenario(t: Target) -> None:
        crd = _crd(f"{t.namespace}.example.com", _checked(rule, old=True))
        await t.post(CRDS, crd, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


EVALUATED: dict[str, Body] = {
    "n": {"type": "object", "properties": {
        "a": {"type": "integer"},
        "l": {"type": "array", "maxItems": 4, "items": {"type": "integer"}},
        "m": {"type": "object", "maxProperties": 4,
              "additionalProperties": {"type": "string", "maxLength": 8}},
    }, "x-kubernetes-validations": [
        {"rule": "self.?a.optMap(v, v * 2).orValue(0) < 10", "message": "a doubled"},
        {"rule": "self.?l.optFlatMap(x, x[?1]).orValue(0) != 5", "message": "second"},
        {"rule": "self.?m.optFlatMap(m, m.?k).optMap(k, k == 'no').orValue(false) == false",
         "message": "k"},
        {"rule": "self.?l.orValue([]).first().orValue(0) <= self.?l.orValue([]).last()"
                 ".orValue(0)", "message": "sorted ends"},
        {"rule": "optional.unwrap([self.?a, self.?l[?0]]).size() < 2", "message": "a and l"},
        {"rule": "[self.?m.?j, self.?m.?k].unwrapOpt().size() < 2", "message": "j and k"},
    ]},
}  # fmt: skip
EVALUATED_CASES: list[tuple[str, str, list[Any]]] = [
    ("optMap, optFlatMap, first, last, optional.unwrap and unwrapOpt", "n",
     [{}, {"a": 4}, {"a": 5}, {"l": [1, 5]}, {"l": [1, 6]}, {"l": [4, 2]}, {"l": [3]},
      {"a": 3}, {"m": {"k": "no"}}, {"m": {"k": "ok"}}, {"m": {"j": "a", "k": "b"}},
      {"m": {"j": "a"}}, {"l": []}]),
]  # fmt: skip


async def test_optional_macros_and_functions_evaluate_as_cel_go_s(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        async with own_crd(t, EVALUATED) as path:
            await _cases(t, path, EVALUATED_CASES)

    await conform(scenario)
