"""A DRA device selector's CEL expression compiled as kube-apiserver compiles it."""

from __future__ import annotations

import pytest

from anyop.testing.fake.dra_selectors import selector_error


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
    assert selector_error(expression) is None


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
    assert selector_error(expression) == error
