"""The in-process transport reads a request's query as httpx's ``URL.params`` reads it: the
first value of each parameter, blanks kept, escapes decoded."""

from __future__ import annotations

from urllib.parse import parse_qsl

import httpx
from hypothesis import given
from hypothesis import strategies as st

from anyop.testing.fake.inprocess_transport import api_request_of

# Names, values, separators and escapes: the characters that change how a query splits.
_QUERY_TEXT = st.text(alphabet="ab1=&%+2F ", max_size=24)


def _first_values(text: str) -> dict[str, str]:
    """The first value of each parameter, blanks kept: what ``parse_qs`` gives."""
    found: dict[str, str] = {}
    for key, value in parse_qsl(text, keep_blank_values=True):
        found.setdefault(key, value)
    return found


@given(_QUERY_TEXT)
def test_the_query_is_read_as_parse_qs_reads_it(text: str) -> None:
    url = httpx.URL("http://fake/api/v1/namespaces", query=text.encode("ascii"))
    request = api_request_of("GET", url, content_type="", body=b"")
    assert request.query == _first_values(url.query.decode("ascii"))


def test_a_repeated_parameter_keeps_its_first_value_and_escapes_are_decoded() -> None:
    url = httpx.URL("http://fake/api?watch=1&watch=0&labelSelector=app%3Dx&fieldSelector=a+b&x")
    request = api_request_of("GET", url, content_type="", body=b"")
    assert request.query == {"watch": "1", "labelSelector": "app=x", "fieldSelector": "a b",
                             "x": ""}  # fmt: skip
