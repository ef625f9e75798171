"""The API server's ``Warning`` headers: parsed as RFC 7234 has them, logged once per text."""

from __future__ import annotations

import logging

import pytest

from anyop.kube.server_warnings import ServerWarnings, parse_warning_header


@pytest.mark.parametrize(
    ("value", "texts"),
    [
        ('299 - "unknown field \\"spec\\""', ['unknown field "spec"']),
        ('299 - "a", 299 - "b"', ["a", "b"]),
        ('299 - "dated" "Mon, 30 Nov 2026 14:00:00 GMT", 299 - "next"', ["dated", "next"]),
        ('199 agent "not a 299"', []),
        ('199 agent "skipped", 299 - "kept"', ["kept"]),
        ('  299 kube-apiserver "spaced"  ', ["spaced"]),
        ('299 - "first", broken', ["first"]),
        ('299 - "unclosed', []),
        ('29 - "short code"', []),
        ('299  "no agent"', []),
        ('299 - "a" trailing', []),
        ('299 - "ends with a backslash\\\\"', ["ends with a backslash\\"]),
        ("", []),
    ],
)
def test_warning_headers_are_parsed_as_client_go_parses_them(value: str, texts: list[str]) -> None:
    assert parse_warning_header(value) == texts


def test_each_text_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    warnings = ServerWarnings()
    with caplog.at_level(logging.WARNING, logger="anyop.kube"):
        warnings.observe("POST", "/api/v1/namespaces/ns/configmaps", ['299 - "a", 299 - "b"'])
        warnings.observe("PATCH", "/api/v1/namespaces/ns/configmaps/x", ['299 - "a"'])
    assert [record.getMessage() for record in caplog.records] == [
        "The API server warns (POST /api/v1/namespaces/ns/configmaps): a",
        "The API server warns (POST /api/v1/namespaces/ns/configmaps): b",
    ]


def test_the_remembered_texts_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    warnings = ServerWarnings(limit=2)
    with caplog.at_level(logging.WARNING, logger="anyop.kube"):
        for text in ("a", "b", "c", "a", "c"):
            warnings.observe("GET", "/x", [f'299 - "{text}"'])
    assert [record.getMessage()[-1] for record in caplog.records] == ["a", "b", "c", "a"]
