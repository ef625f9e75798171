"""The fake's JSON decoding refuses what Go's refuses, with Go's words."""

from __future__ import annotations

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
