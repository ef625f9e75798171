"""CEL's optional selection rewritten into calls that cel-python parses, and evaluated."""

from __future__ import annotations

import pytest

from anyop.testing.fake import cel_rules
from anyop.testing.fake.cel_check import check
from anyop.testing.fake.cel_optional import desugared, source_offset
from anyop.testing.fake.cel_signatures import UNKNOWN
from anyop.testing.fake.crd_cel_limits import compiled_cel


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
        # a list or map literal with optional entries: each ``?`` a space, a pattern of them
        ("[?self.a] == []", '[ self.a].optEntries__("[?]") == []'),
        ("[a, ?b, c]", '[a,  b, c].optEntries__("[-?-]")'),
        ("{?'k': v, 'j': w}.size()", "{ 'k': v, 'j': w}.optEntries__(\"{?-}\").size()"),
        ("[ ? self.?a , 1][0]", '[   self.optSelect__("a") , 1].optEntries__("[?-]")[0]'),
        ("[a, ?b,]", '[a,  b ].optEntries__("[-?]")'),  # a trailing comma: cel-python has none
        ("[1, [?x], {?'k': m[?1]}]", '[1, [ x].optEntries__("[?]"), '
         "{ 'k': m.optIndex__(1)}.optEntries__(\"{?}\")]"),
        ("[?{?'x': v}.?x]",
         '[ { \'x\': v}.optEntries__("{?}").optSelect__("x")].optEntries__("[?]")'),
        ("{?k: c ? a : b, 'z': (d ? 1 : 2)}",
         '{ k: c ? a : b, \'z\': (d ? 1 : 2)}.optEntries__("{?-}")'),
        ("s in [?a, b]", 's in [ a, b].optEntries__("[?-]")'),  # ``in``: no operand to index
        ("c ? [?a] : []", 'c ? [ a].optEntries__("[?]") : []'),
        ("{'a': 1}[?'a']", "{'a': 1}.optIndex__('a')"),
        # literals without optional entries, in strings, and message literals stay as they are
        ("[a, [b], {c: d}][0]", "[a, [b], {c: d}][0]"),
        ("'[?x, {?k: v}]' + \"a, ?b\" == [?'[?'][0]", "'[?x, {?k: v}]' + \"a, ?b\" == "
         '[ \'[?\'].optEntries__("[?]")[0]'),
        ("Msg{?f: v}", "Msg{?f: v}"),
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
        # optional entries of list and map literals
        ("[?self.?a.?b, 1, ?optional.none()] == [2, 1]", {"a": {"b": 2}}, True),
        ("[?self.?a.?b, 1, ?optional.none()] == [1]", {}, True),
        ("{?'b': self.?a.?b, 'x': 1} == {'b': 2, 'x': 1}", {"a": {"b": 2}}, True),
        ("{?'b': self.?a.?b, 'x': 1} == {'x': 1}", {"a": {}}, True),
        ("[[?self.?a.?b], [?optional.none()]] == [[2], []]", {"a": {"b": 2}}, True),
        ("{?'t': self.?a.?tags[?1]}.?t.orValue('') == 'y'", {"a": {"tags": ["x", "y"]}}, True),
        ("[?1].size() == 1", {}, False),  # no optional: fails (as ``[?dyn(1)]`` does in cel-go)
    ],
)
def test_optional_selections_evaluate_as_cel_go_does(rule: str, value: object, holds: bool) -> None:
    activation = cel_rules._activation(value, cel_rules._UNSET, SCHEMA)
    assert cel_rules._holds(rule, activation)[0] is holds


_ELEMENT = "cannot initialize optional list element from non-optional value"


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ("[?1].size() == 1", f"{_ELEMENT} 1"),
        ("{?'k': 'v'}.size() == 1",
         "cannot initialize optional entry 'k' from non-optional value v"),
        ("[?true].size() == 1", f"{_ELEMENT} true"),
        ("[?1.5e7].size() == 1", f"{_ELEMENT} 1.5e+07"),
    ],
)  # fmt: skip
def test_an_optional_entry_of_no_optional_fails_with_cel_go_s_error(rule: str, error: str) -> None:
    activation = cel_rules._activation({}, cel_rules._UNSET, SCHEMA)
    assert cel_rules._holds(rule, activation) == (False, error)


@pytest.mark.parametrize(
    ("rule", "errors"),
    [
        ("[?1].size() == 0", [(2, "expected type 'optional_type(int)' but found 'int'")]),
        ("{?'k': 'v'}.size() == 0",
         [(7, "expected type 'optional_type(string)' but found 'string'")]),
        ("[1, ?optional.of(2), ?self.?a].size() > 0", []),  # optionals (of unknown type here)
    ],
)  # fmt: skip
def test_an_optional_entry_of_a_known_type_is_refused_by_the_type_checker(
    rule: str, errors: list[tuple[int, str]]
) -> None:
    expr, error = compiled_cel(rule)
    assert expr is not None, error
    assert check(expr, UNKNOWN, UNKNOWN).errors == errors


@pytest.mark.parametrize(
    ("rule", "found", "expected"),
    [
        ("self.?a.orValue(0) == 'x'", "==", "== 'x'"),
        ("[?self.?a, 1].size() + self.nope > 1", "self.nope", "self.nope > 1"),
        ("self.a == 1", "==", "== 1"),  # nothing rewritten
    ],
)
def test_an_offset_of_the_desugared_text_is_found_in_the_rule(
    rule: str, found: str, expected: str
) -> None:
    offset = desugared(rule).index(found)
    assert rule[source_offset(rule, offset) :] == expected
