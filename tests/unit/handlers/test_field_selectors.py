"""Handlers' field selectors: parsed when declared, checked on every object, sent to the server."""

from __future__ import annotations

from typing import Any

import pytest

import anyop
from anyop.handlers.field_selectors import parse_field_selector, shared_field_selector
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError
from anyop.kube.resources import Resource

POD = {"metadata": {"name": "p1", "namespace": "ns"}, "spec": {"hostNetwork": True},
       "status": {"phase": "Running"}}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("status.phase=Running", True),
        ("status.phase==Running", True),
        ("status.phase!=Running", False),
        ("status.phase=Running,metadata.name=p2", False),
        ("metadata.name=p1, metadata.namespace=ns", True),
        ("spec.hostNetwork=true", True),
        ("spec.nodeName=", True),  # an absent field reads as ""
        ("spec.nodeName!=", False),
    ],
)
def test_a_field_selector_selects_as_the_api_server_would(text: str, selected: bool) -> None:
    selector = parse_field_selector(text)
    assert selector is not None
    assert selector.matches(POD) is selected


def test_only_the_terms_that_every_handler_has_are_sent_to_the_server() -> None:
    one = parse_field_selector("status.phase=Running,metadata.name=p1")
    two = parse_field_selector("metadata.name=p1,spec.nodeName!=n1")
    assert str(shared_field_selector([one, two])) == "metadata.name=p1"
    assert shared_field_selector([one, None]) is None
    assert shared_field_selector([]) is None


def test_handlers_with_a_field_selector_make_the_watchs_selector() -> None:
    registry = OperatorRegistry()
    kopf_pods = Resource("", "v1", "pods", kind="Pod", namespaced=True)
    fn = lambda **_: None  # noqa: E731
    anyop.on.create("pods", registry=registry, field_selector="status.phase=Running")(fn)
    anyop.on.event("pods", registry=registry, id="ev", field_selector="status.phase=Running")(fn)
    assert str(registry.field_selector(kopf_pods)) == "status.phase=Running"
    assert registry.selects_on_server(kopf_pods)
    anyop.daemon("pods", registry=registry, id="all")(fn)
    assert registry.field_selector(kopf_pods) is None


@pytest.mark.parametrize(("value", "error"), [
    (123, DeclarationTypeError), ("status.phase", DeclarationValueError),
    ("=x", DeclarationValueError), ("a=b,,c=d", DeclarationValueError),
])  # fmt: skip
def test_a_malformed_field_selector_is_refused_at_declaration(value: Any, error: type) -> None:
    with pytest.raises(error, match="field_selector="):
        anyop.on.create("pods", registry=OperatorRegistry(), field_selector=value)(lambda **_: None)
