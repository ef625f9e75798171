"""A DRA device selector's CEL expression compiled as kube-apiserver compiles it."""

from __future__ import annotations

import pytest

from anyop.testing.fake.dra_selectors import selector_refusal


@pytest.mark.parametrize(
    "expression",
    [
        "device.driver == 'dra.example.com'",
        "device.attributes['dra.example.com'].model == 'a' && device.allowMultipleAllocations",
        "device.capacity['dra.example.com'].memory.compareTo(quantity('1Gi')) >= 0",
        "device.attributes['dra.example.com'].ok",  # of the unknown type
    ],
)
def test_a_selector_that_compiles(expression: str) -> None:
    assert selector_refusal(expression) is None


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("device.driver", "must evaluate to bool or the unknown type, not string"),
        ("[device.driver]", "must evaluate to bool or the unknown type, not list(string)"),
        ("self.spec == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to "
         "'self' (in container '')\n | self.spec == 1\n | ^"),
        ("device.vendor == 'x'", "compilation failed: ERROR: <input>:1:7: undefined field "
         "'vendor'\n | device.vendor == 'x'\n | ......^"),
        ("", "compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' "
         "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
         "NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ],
)  # fmt: skip
def test_a_selector_refused_in_cel_go_s_words(expression: str, error: str) -> None:
    assert selector_refusal(expression) == (False, error)


@pytest.mark.parametrize(
    ("expression", "refused"),
    [
        ("device.attributes.all(d, device.attributes[d].all(k, device.capacity.all(c, c != d)))",
         False),  # 399,619
        ("device.attributes.exists(d, device.attributes.exists(e, device.attributes.exists(f, "
         "d + e + f == 'x')))", True),  # 1,318,115: the domains' names are of 63 characters
        ("device.attributes['d'].model.matches(device.attributes['d'].model)", False),
    ],
)  # fmt: skip
def test_a_selector_over_the_cost_limit_is_too_complex(expression: str, refused: bool) -> None:
    expected = (True, "too complex, exceeds cost limit") if refused else None
    assert selector_refusal(expression) == expected
