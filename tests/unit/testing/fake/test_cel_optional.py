"""CEL's optional selection rewritten into calls that cel-python parses, and evaluated."""

from __future__ import annotations

import pytest

from anyop.testing.fake import cel_rules
from anyop.testing.fake.cel_optional import desugared


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("self.?a.?b.orValue(1) > 0", 'self.optSelect__("a").optSelect__("b").orValue(1) > 0'),
        # every plain selection or index after an optional one is optional, up to a call
        ("self.?a.b[0].orValue(2) == x.y",
         'self.optSelect__("a").optSelect__("b").optIndex__(0).orValue(2) == x.y'),
        ("m[?'k' + s].hasValue()", "m.optIndex__('k' + s).hasValue()"),
        ("self.?a in l.x", 'self.optSelect__("a") in l.x'),
        ("[self.?a.orValue(1), 2][0]", '[self.optSelect__("a").orValue(1), 2][0]'),
        # literals stay as they are, raw ones too
        ('self.a == "x.?y" || self.b == r"\\" || self.?c.hasValue()',
         'self.a == "x.?y" || self.b == r"\\" || self.optSelect__("c").hasValue()'),
        ("self.a == '''.?a\\''' ''' && self.b[?0] != 1",
         "self.a == '''.?a\\''' ''' && self.b.optIndex__(0) != 1"),
        # a list or map literal's optional entries are not rewritten
        ("[?self.a] == []", "[?self.a] == []"),
    ],
)  # fmt: skip
def test_optional_selections_become_calls(rule: str, expected: str) -> None:
    assert desugared(rule) == expected


_TAGS = {"type": "array", "items": {"type": "string"}}
SCHEMA = {"type": "object", "properties": {"a": {"type": "object", "properties": {
    "b": {"type": "integer"}, "tags": _TAGS}}}}  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "value", "holds"),
    [
        ("self.?a.?b.orValue(5) == 5", {}, True),
        ("self.?a.?b.orValue(5) == 5", {"a": {"b": 2}}, False),
        ("self.?a.b.hasValue()", {"a": {}}, False),
        ("self.?a.tags[1].orValue('') == 'y'", {"a": {"tags": ["x", "y"]}}, True),
        ("self.a.tags[?3].hasValue()", {"a": {"tags": ["x"]}}, False),
        ("self.?a.?b.value() > 0", {}, False),  # optional.none() dereference
    ],
)
def test_optional_selections_evaluate_as_cel_go_does(rule: str, value: object, holds: bool) -> None:
    activation = cel_rules._activation(value, cel_rules._UNSET, SCHEMA)
    assert cel_rules._holds(rule, activation)[0] is holds
