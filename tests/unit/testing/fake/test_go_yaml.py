"""YAML read as kube-apiserver reads it (go-yaml's YAML 1.1, then JSON)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake import go_yaml


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("y", True),
        ("off", False),
        ("2001-12-14", "2001-12-14"),
        ("2001-12-14T21:59:43.10-05:00", "2001-12-14T21:59:43.10-05:00"),
        ("010", 8),
        ("1_000", 1000),
        ("0x1F", 31),
        ("0o17", 15),
        ("0b101", 5),
        ("-0b101", -5),
        ("1:20", "1:20"),
        ("1e3", 1000.0),
        (".5e1", 5.0),
        ("-.5", -0.5),
        ("1.", 1.0),
        ("12345678901234567890123", 1.2345678901234568e22),
        ("!!binary aGVsbG8=", "hello"),
        ("{1: a, 1.5: b, true: c}", {"1": "a", "1.5": "b", "true": "c"}),
    ],
)
def test_a_scalar_reads_as_go_yaml_reads_it(text: str, value: Any) -> None:
    found = go_yaml.load(f"v: {text}")["v"]
    assert found == value
    assert type(found) is type(value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".inf", "json: unsupported value: +Inf"),
        ("-.Inf", "json: unsupported value: -Inf"),
        (".NaN", "json: unsupported value: NaN"),
        ("{~: a}", 'unsupported map key of type: %!s(<nil>), key: <nil>, value: "a"'),
        ("{? [1, x]: a}", 'yaml: invalid map key: []interface {}{1, "x"}'),
        ("[*a]", "yaml: unknown anchor 'a' referenced"),
    ],
)
def test_what_json_cannot_hold_is_refused_with_kube_apiservers_words(
    text: str, message: str
) -> None:
    with pytest.raises(go_yaml.GoYAMLError) as caught:
        go_yaml.load(f"v: {text}")
    assert str(caught.value) == message
