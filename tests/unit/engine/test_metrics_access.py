"""Who may read the metrics: the pure decisions (tokens, the cache, verdicts, the endpoint)."""

from __future__ import annotations

import pytest

from anyop.engine.operator.metrics_access import (
    MAX_TOKEN_LENGTH,
    ReviewCache,
    Verdict,
    bearer_token,
    token_key,
)
from anyop.engine.operator.metrics_server import metrics_address
from anyop.errors import ConfigError
from anyop.kube.reviews import (
    ReviewedUser,
    access_review_body,
    parse_access_review,
    parse_token_review,
    token_review_body,
)

# Bearer tokens


def test_the_bearer_token_of_one_authorization_header_is_read() -> None:
    assert bearer_token([(b"authorization", b"Bearer abc.def-ghi")]) == "abc.def-ghi"


def test_the_scheme_is_case_insensitive_and_spaces_around_are_ignored() -> None:
    assert bearer_token([(b"Authorization", b"  bearer   tok  ")]) == "tok"


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"authorization", b"")],
        [(b"authorization", b"Bearer")],
        [(b"authorization", b"Bearer ")],
        [(b"authorization", b"Basic dXNlcjpwYXNz")],
        [(b"authorization", b"Bearer two words")],
        [(b"authorization", b"Bearer t\xc3\xa9st")],
        [(b"authorization", b"Bearer tab\tinside")],
        [(b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")],
        [(b"authorization", b"Bearer " + b"x" * (MAX_TOKEN_LENGTH + 1))],
    ],
    ids=[
        "none",
        "empty",
        "scheme-only",
        "scheme-and-space",
        "basic",
        "two-words",
        "non-ascii",
        "control-char",
        "two-headers",
        "too-long",
    ],
)
def test_a_missing_or_malformed_token_is_no_token(headers: list[tuple[bytes, bytes]]) -> None:
    assert bearer_token(headers) is None


def test_the_cache_key_is_a_hash_that_does_not_contain_the_token() -> None:
    key = token_key("secret-token-value")
    assert len(key) == 64
    assert "secret" not in key
    assert key == token_key("secret-token-value") != token_key("secret-token-valuf")


# The cache


def test_an_allowed_verdict_is_kept_for_its_ttl_only() -> None:
    cache = ReviewCache(allow_ttl=60, deny_ttl=10)
    cache.put("k", Verdict.ALLOWED, now=100)
    assert cache.get("k", now=159.9) is Verdict.ALLOWED
    assert cache.get("k", now=160) is None
    assert len(cache) == 0


@pytest.mark.parametrize("verdict", [Verdict.UNAUTHENTICATED, Verdict.FORBIDDEN])
def test_refusals_are_kept_for_the_shorter_deny_ttl(verdict: Verdict) -> None:
    cache = ReviewCache(allow_ttl=60, deny_ttl=10)
    cache.put("k", verdict, now=0)
    assert cache.get("k", now=9) is verdict
    assert cache.get("k", now=10) is None


@pytest.mark.parametrize("verdict", [Verdict.FAILED, Verdict.UNAVAILABLE])
def test_failures_are_never_kept(verdict: Verdict) -> None:
    cache = ReviewCache(allow_ttl=60, deny_ttl=10)
    cache.put("k", verdict, now=0)
    assert cache.get("k", now=0) is None


def test_a_zero_ttl_keeps_nothing() -> None:
    cache = ReviewCache(allow_ttl=0, deny_ttl=0)
    cache.put("k", Verdict.ALLOWED, now=0)
    cache.put("j", Verdict.FORBIDDEN, now=0)
    assert len(cache) == 0


def test_the_least_recently_used_verdict_goes_first_when_full() -> None:
    cache = ReviewCache(allow_ttl=60, deny_ttl=10, size=2)
    cache.put("a", Verdict.ALLOWED, now=0)
    cache.put("b", Verdict.ALLOWED, now=0)
    assert cache.get("a", now=1) is Verdict.ALLOWED  # "b" is now the least recently used
    cache.put("c", Verdict.FORBIDDEN, now=1)
    assert cache.get("b", now=1) is None
    assert cache.get("a", now=1) is Verdict.ALLOWED
    assert cache.get("c", now=1) is Verdict.FORBIDDEN


# Verdicts and their answers


def test_each_verdict_is_answered_with_its_status_and_a_bare_reason() -> None:
    answers = {verdict.value: verdict.reason for verdict in Verdict}
    assert answers == {
        200: "OK",
        401: "Unauthorized",
        403: "Forbidden",
        500: "Internal Server Error",
        503: "Service Unavailable",
    }


# The reviews' bodies and answers


def test_a_token_review_carries_the_token_in_its_spec() -> None:
    assert token_review_body("tok") == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "tok"},
    }


def test_an_authenticated_token_review_gives_the_whole_user() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "system:serviceaccount:mon:prometheus",
                "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/pod-name": ["p-0"]},
            },
        }
    }
    assert parse_token_review(answer) == ReviewedUser(
        "system:serviceaccount:mon:prometheus",
        "u-1",
        ("system:serviceaccounts", "system:authenticated"),
        {"authentication.kubernetes.io/pod-name": ("p-0",)},
    )


@pytest.mark.parametrize(
    "answer",
    [
        {"status": {"authenticated": False, "error": "token expired"}},
        {"status": {"authenticated": True}},
        {"status": {"authenticated": True, "user": {"username": ""}}},
        {"status": {"authenticated": "true", "user": {"username": "x"}}},
        {"status": {}},
        {},
        None,
        "garbage",
    ],
)
def test_anything_but_an_authenticated_user_is_no_user(answer: object) -> None:
    assert parse_token_review(answer) is None


def test_an_access_review_asks_for_the_verb_on_the_non_resource_path_as_the_user() -> None:
    user = ReviewedUser("alice", "u-1", ("g",), {"k": ("v",)})
    assert access_review_body(user, path="/metrics", verb="get") == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "alice",
            "uid": "u-1",
            "groups": ["g"],
            "extra": {"k": ["v"]},
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }


@pytest.mark.parametrize(
    ("answer", "allowed"),
    [
        ({"status": {"allowed": True}}, True),
        ({"status": {"allowed": False, "denied": True}}, False),
        ({"status": {"allowed": False, "reason": "no RBAC policy matched"}}, False),
        ({"status": {"allowed": "yes"}}, False),
        ({}, False),
        (None, False),
    ],
)
def test_only_an_explicit_yes_allows(answer: object, allowed: bool) -> None:
    assert parse_access_review(answer) is allowed


# The endpoint: secure by default, plain HTTP only when asked


@pytest.mark.parametrize(
    ("endpoint", "host", "port", "path"),
    [
        ("https://0.0.0.0:8443/metrics", "0.0.0.0", 8443, "/metrics"),
        ("https://127.0.0.1:8443", "127.0.0.1", 8443, "/metrics"),
        ("0.0.0.0:8443/custom", "0.0.0.0", 8443, "/custom"),
        ("https://[::1]:8443/metrics", "::1", 8443, "/metrics"),
    ],
)
def test_https_and_scheme_less_endpoints_are_secure(
    endpoint: str, host: str, port: int, path: str
) -> None:
    address = metrics_address(endpoint, insecure=False)
    assert (address.host, address.port, address.path, address.secure) == (host, port, path, True)


def test_plain_http_is_refused_naming_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"plain HTTP.*--metrics-insecure.*metrics_insecure"):
        metrics_address("http://0.0.0.0:9090/metrics", insecure=False)


@pytest.mark.parametrize("endpoint", ["http://0.0.0.0:9090/metrics", "0.0.0.0:9090/metrics"])
def test_plain_http_is_served_when_asked_for(endpoint: str) -> None:
    address = metrics_address(endpoint, insecure=True)
    assert not address.secure
    assert address.url == "http://0.0.0.0:9090/metrics"


def test_https_with_the_insecure_flag_contradicts() -> None:
    with pytest.raises(ConfigError, match="choose one"):
        metrics_address("https://0.0.0.0:8443/metrics", insecure=True)


@pytest.mark.parametrize(
    "endpoint",
    ["https://0.0.0.0/metrics", "ftp://x:1/m", "https://x:99999/m", "https://x:1/m?q=1", "x"],
)
def test_a_malformed_endpoint_is_refused(endpoint: str) -> None:
    with pytest.raises(ConfigError, match="must be https://HOST:PORT"):
        metrics_address(endpoint, insecure=False)
