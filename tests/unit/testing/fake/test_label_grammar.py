"""Label selectors read as apimachinery's parser reads them (tests/conformance/test_lists.py
compares the messages with kube-apiserver's)."""

from __future__ import annotations

import pytest

from anyop.testing.fake.label_grammar import Requirement, SelectorSyntaxError, parse_requirements


def test_every_form_parses_into_requirements_sorted_by_key() -> None:
    parsed = parse_requirements("z notin (),x in (foo,,baz), !w ,v==1,u>3,t")
    assert parsed == [
        Requirement("t", "exists"),
        Requirement("u", "gt", ("3",)),
        Requirement("v", "==", ("1",)),
        Requirement("w", "!"),
        Requirement("x", "in", ("", "baz", "foo")),
        Requirement("z", "notin", ("",)),
    ]


def test_keywords_are_values_inside_a_value_set() -> None:
    assert parse_requirements("k in (in,notin)") == [Requirement("k", "in", ("in", "notin"))]


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a,", "found '', expected: identifier after ','"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
                "operators, the value must be an integer"),
    ],
)  # fmt: skip
def test_a_malformed_selector_gets_the_parsers_message(selector: str, message: str) -> None:
    with pytest.raises(SelectorSyntaxError) as caught:
        parse_requirements(selector)
    assert str(caught.value) == message
