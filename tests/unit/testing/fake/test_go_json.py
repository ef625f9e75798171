"""The fake's JSON decoding refuses what Go's refuses, with Go's words."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake import go_json
from anyop.testing.fake.request_bodies import applied_document


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"n": NaN}', "invalid character 'N' looking for beginning of value"),
        ('{"n": Infinity}', "invalid character 'I' looking for beginning of value"),
        ('{"n": -Infinity}', "invalid character 'I' in numeric literal"),
        ('{"n": 1', "unexpected end of JSON input"),
    ],
)
def test_python_json_that_go_refuses_is_refused_with_gos_message(text: str, message: str) -> None:
    with pytest.raises(go_json.GoJSONError, match=f"^{message}$"):
        go_json.loads(text.encode())


def test_finite_numbers_decode_as_python_does() -> None:
    assert go_json.loads(b'{"a": [1, -2.5e3]}') == {"a": [1, -2500.0]}


def test_an_applied_configuration_reads_the_words_as_yaml_strings() -> None:
    assert applied_document(b'{"data": {"x": NaN, "y": -Infinity}}') == {
        "data": {"x": "NaN", "y": "-Infinity"}
    }


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (2.0, 2),
        (-0.0, 0),
        (1e3, 1000),
        (1.5, 1.5),
        (1e-7, 1e-7),
        (1e21, 1e21),  # Go writes it with an exponent: a float again
        (2**63 - 1, 2**63 - 1),
        (2**63, 2**63),  # a float64, written in full below 10^21: read back as an integer
        (123456789012345678901234567890, 1.2345678901234568e29),
        (True, True),
    ],
)
def test_unstructured_numbers_are_what_kube_apiserver_gives_back(given: Any, kept: Any) -> None:
    found = go_json.unstructured_numbers({"a": [given]})["a"][0]
    assert found == kept
    assert type(found) is type(kept)


def test_unstructured_numbers_keep_the_object_when_nothing_changes() -> None:
    document = {"a": [1, "x", {"b": 1.5}], "c": None}
    assert go_json.unstructured_numbers(document) is document
    changed = go_json.unstructured_numbers({"a": [1, {"b": 2.0}], "c": {"d": 1}})
    assert changed == {"a": [1, {"b": 2}], "c": {"d": 1}}


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (2.0, "2"),
        (2.5, "2.5"),
        (1e6, "1e+06"),
        (1e-5, "1e-05"),
        ({"b": [1, True], "a": None}, "map[a:<nil> b:[1 true]]"),
        ("x", "x"),
    ],
)
def test_values_print_as_gos_percent_v(value: object, printed: str) -> None:
    assert go_json.go_printed(value) == printed


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("abc", '"abc"'),
        ("café 😀", '"café 😀"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("x\ny\tz", '"x\\ny\\tz"'),
        ("\x00\x7f", '"\\x00\\x7f"'),
        ("\u2028", '"\\u2028"'),
    ],
)
def test_strings_quote_as_gos_percent_q(text: str, quoted: str) -> None:
    assert go_json.go_quoted(text) == quoted


def test_a_lone_surrogate_escape_decodes_as_the_replacement_character() -> None:
    text = b'{"a":"x\\ud800y","\\udc00":["\\ud83d\\ude00","\\ud800\\ud800"]}'
    assert go_json.loads(text) == {"a": "x\ufffdy", "\ufffd": ["\U0001f600", "\ufffd\ufffd"]}
    assert applied_document(text) == go_json.loads(text)
    plain = {"a": "\\ud800 as text"}
    assert go_json.surrogates_replaced(b'{"a":"\\\\ud800 as text"}', plain) == plain
