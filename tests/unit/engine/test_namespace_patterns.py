"""Namespace patterns: comma-separated globs, exclusions, the decisive first glob, regexps."""

from __future__ import annotations

import re

import anyio
import pytest

from anyop.engine.serving.namespace_follower import NamespacePatterns, _handler
from anyop.kube.watch import WatchEvent

KOPF_EXAMPLE = "myapp-*,!*-pr-*,*-pr-123"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("myapp-live", True),
        ("myapp-pr-456", False),
        ("myapp-pr-123", True),
        ("otherapp-live", False),
        ("otherapp-pr-123", False),
    ],
)
def test_the_kopf_docs_example(name: str, expected: bool) -> None:
    assert NamespacePatterns([KOPF_EXAMPLE]).match(name) is expected


@pytest.mark.parametrize(("name", "expected"), [("ns-pr-123-x", False), ("ns-live", True)])
def test_a_leading_exclusion_implies_a_star(name: str, expected: bool) -> None:
    assert NamespacePatterns(["!*-pr-123-*"]).match(name) is expected


def test_any_item_may_match() -> None:
    patterns = NamespacePatterns(["a-*", "b-?"])
    assert patterns.match("a-long")
    assert patterns.match("b-1")
    assert not patterns.match("b-12")


def test_a_regexp_must_match_fully() -> None:
    patterns = NamespacePatterns([re.compile(r"team-\d+")])
    assert patterns.match("team-42")
    assert not patterns.match("team-42-x")
    assert patterns.exact_names is None


def test_exact_names_are_listed_only_without_globs() -> None:
    assert NamespacePatterns(["ns1", "ns2"]).exact_names == ["ns1", "ns2"]
    assert NamespacePatterns(["ns1", "ns-*"]).exact_names is None
    assert NamespacePatterns(["!ns1"]).exact_names is None
    assert NamespacePatterns(["ns1,ns2"]).exact_names is None


def test_exact_names_match_themselves_only() -> None:
    patterns = NamespacePatterns(["ns1"])
    assert patterns.match("ns1")
    assert not patterns.match("ns10")


@pytest.mark.anyio
async def test_the_discovery_handler_starts_keeps_terminating_and_cancels_on_deletion() -> None:
    started: list[str] = []
    scopes: dict[str, anyio.CancelScope] = {}

    async def start(name: str) -> None:
        started.append(name)
        scopes[name] = anyio.CancelScope()

    handle = _handler(NamespacePatterns(["app-*"]), scopes, start)
    await handle(WatchEvent("ADDED", {"metadata": {"name": "app-1"}}, listed=True))
    await handle(WatchEvent("ADDED", {"metadata": {"name": "other"}}))
    terminating = {"metadata": {"name": "app-1", "deletionTimestamp": "2020-01-01T00:00:00Z"}}
    await handle(WatchEvent("MODIFIED", terminating))
    assert started == ["app-1"]
    scope = scopes["app-1"]
    cancelled_while_terminating = scope.cancel_called
    await handle(WatchEvent("DELETED", {"metadata": {"name": "app-1"}}))
    assert (cancelled_while_terminating, scope.cancel_called) == (False, True)
    assert "app-1" not in scopes


def test_plain_names_are_the_literal_inclusions_only() -> None:
    patterns = NamespacePatterns(["app-1", "app-*", "!kube-*", "team,!team-x", "app-1", "b"])
    assert patterns.plain_names == ["app-1", "b"]
