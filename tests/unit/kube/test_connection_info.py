"""ConnectionInfo: headers, TLS switches, expiry, proxies, and a repr that keeps secrets."""

from __future__ import annotations

import base64
import dataclasses
import ssl
from datetime import UTC, datetime, timedelta, timezone

import pytest

from anyop.errors import ConfigError
from anyop.kube.config import ConnectionInfo, proxy_for

SERVER = "https://api.example.com:6443"


def test_repr_never_shows_the_token_password_or_private_key() -> None:
    info = ConnectionInfo(
        SERVER,
        token="tok-SECRET",
        password="pw-SECRET",
        private_key_data=b"-----BEGIN PRIVATE KEY-----key-SECRET",
        certificate_data=b"cert",
        username="admin",
    )
    shown = repr(info)
    assert "SECRET" not in shown
    assert "token=<hidden>" in shown
    assert "username='admin'" in shown
    assert "certificate_data=<4 bytes>" in shown
    assert str(info) == shown


def test_repr_hides_a_password_in_the_proxy_url() -> None:
    shown = repr(ConnectionInfo(SERVER, proxy_url="http://me:pw-SECRET@proxy:3128"))
    assert "pw-SECRET" not in shown
    assert "http://me:<hidden>@proxy:3128" in shown


def test_only_the_server_is_positional() -> None:
    with pytest.raises(TypeError):
        ConnectionInfo(SERVER, "/ca.crt")  # type: ignore[call-arg]


def test_token_is_sent_with_its_scheme_bearer_by_default() -> None:
    assert ConnectionInfo(SERVER, token="t").as_http_headers() == {"Authorization": "Bearer t"}
    info = ConnectionInfo(SERVER, token="t", scheme="Digest")
    assert info.as_http_headers() == {"Authorization": "Digest t"}


def test_token_wins_over_basic_auth() -> None:
    info = ConnectionInfo(SERVER, token="t", username="u", password="p")
    assert info.as_http_headers() == {"Authorization": "Bearer t"}


def test_basic_auth_encodes_username_and_password() -> None:
    header = ConnectionInfo(SERVER, username="u", password="p:w").as_http_headers()
    assert base64.b64decode(header["Authorization"].removeprefix("Basic ")) == b"u:p:w"


def test_no_credentials_means_no_headers() -> None:
    assert ConnectionInfo(SERVER).as_http_headers() == {}


def test_default_ssl_context_verifies_the_server() -> None:
    context = ConnectionInfo(SERVER).as_ssl_context()
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)


def test_insecure_ssl_context_verifies_nothing() -> None:
    context = ConnectionInfo(SERVER, insecure=True).as_ssl_context()
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)


def test_unloadable_ca_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"ConnectionInfo\.ca_path"):
        ConnectionInfo(SERVER, ca_path="/nonexistent/ca.crt").as_ssl_context()
    with pytest.raises(ConfigError, match=r"ConnectionInfo\.ca_data"):
        ConnectionInfo(SERVER, ca_data=b"-----BEGIN CERTIFICATE-----\nnope\n").as_ssl_context()


def test_private_key_without_certificate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="private key is set without a certificate"):
        ConnectionInfo(SERVER, private_key_data=b"key").as_ssl_context()


def test_credentials_without_expiration_never_expire() -> None:
    assert not ConnectionInfo(SERVER).is_expired(datetime(9999, 1, 1, tzinfo=UTC))


def test_naive_expiration_is_taken_as_utc() -> None:
    info = ConnectionInfo(SERVER, expiration=datetime(2030, 1, 1, 12, 0))
    plus_two = timezone(timedelta(hours=2))
    assert not info.is_expired(datetime(2030, 1, 1, 13, 59, tzinfo=plus_two))
    assert info.is_expired(datetime(2030, 1, 1, 14, 0, tzinfo=plus_two))
    assert info.is_expired(datetime(2030, 1, 1, 12, 0))


def test_expiration_is_judged_against_the_current_time_by_default() -> None:
    past = ConnectionInfo(SERVER, expiration=datetime.now(UTC) - timedelta(seconds=1))
    future = dataclasses.replace(past, expiration=datetime.now(UTC) + timedelta(hours=1))
    assert past.is_expired()
    assert not future.is_expired()
    assert 3500 < future.seconds_to_expiry() <= 3600


def test_proxy_url_wins_over_the_environment() -> None:
    info = ConnectionInfo(SERVER, proxy_url="http://mine:1", trust_env=True)
    assert info.effective_proxy_url({"HTTPS_PROXY": "http://env:2"}) == "http://mine:1"


def test_environment_proxy_applies_only_when_trusted() -> None:
    environ = {"HTTPS_PROXY": "http://env:2"}
    assert ConnectionInfo(SERVER).effective_proxy_url(environ) is None
    info = ConnectionInfo(SERVER, trust_env=True)
    assert info.effective_proxy_url(environ) == "http://env:2"


@pytest.mark.parametrize(
    ("server", "environ", "expected"),
    [
        ("https://api.example.com", {"HTTPS_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://api.example.com", {"https_proxy": "p:3128"}, "http://p:3128"),
        ("https://api.example.com", {"HTTP_PROXY": "http://p:3128"}, None),
        ("http://api.example.com", {"HTTP_PROXY": "http://p:3128"}, "http://p:3128"),
        ("https://api.example.com", {"ALL_PROXY": "socks5://s:1080"}, "socks5://s:1080"),
        ("https://api.example.com", {}, None),
    ],
)
def test_proxy_comes_from_the_variable_for_the_scheme(
    server: str, environ: dict[str, str], expected: str | None
) -> None:
    assert proxy_for(server, environ) == expected


@pytest.mark.parametrize(
    ("server", "no_proxy", "bypassed"),
    [
        ("https://api.example.com", "*", True),
        ("https://api.example.com", "example.com", True),
        ("https://example.com", "example.com", True),
        ("https://notexample.com", "example.com", False),
        ("https://api.example.com", ".example.com", True),
        ("https://example.com", ".example.com", False),
        ("https://api.example.com", "*.example.com", True),
        ("https://API.Example.COM", "other.org, example.com", True),
        ("https://10.1.2.3:6443", "10.0.0.0/8", True),
        ("https://11.1.2.3:6443", "10.0.0.0/8", False),
        ("https://10.1.2.3:6443", "10.1.2.3", True),
        ("https://[fd00::1]:6443", "fd00::/8", True),
        ("https://[fd00::1]:6443", "[fd00::1]:6443", True),
        ("https://[fd00::1]:6443", "10.0.0.0/8", False),
        ("https://api.example.com:6443", "example.com:6443", True),
        ("https://api.example.com:6443", "example.com:443", False),
        ("https://api.example.com", "example.com:443", True),
        ("https://10.1.2.3", "example.com", False),
    ],
)
def test_no_proxy_exceptions(server: str, no_proxy: str, bypassed: bool) -> None:
    environ = {"HTTPS_PROXY": "http://p:3128", "NO_PROXY": no_proxy}
    assert (proxy_for(server, environ) is None) == bypassed


def test_server_with_a_bad_port_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid URL"):
        proxy_for("https://host:notaport", {"HTTPS_PROXY": "http://p"})
