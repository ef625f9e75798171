"""Kubeconfig files and the in-cluster service account become ConnectionInfo objects."""

from __future__ import annotations

import base64
import datetime
import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from anyop.errors import ConfigError
from anyop.kube.config import (
    ConnectionInfo,
    KubeConfig,
    kubeconfig_paths,
    load_incluster,
    load_kubeconfig,
)

NO_POD = Path("/nonexistent/anyop/serviceaccount")


@pytest.fixture(scope="module")
def pem_pair() -> tuple[bytes, bytes]:
    """A real self-signed certificate and its private key, both PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "anyop-test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def kubeconfig(
    clusters: Mapping[str, Mapping[str, Any]],
    users: Mapping[str, Mapping[str, Any]],
    contexts: Mapping[str, Mapping[str, Any]],
    *,
    current: str | None = None,
) -> dict[str, Any]:
    """Build a kubeconfig document from name -> body mappings."""
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": dict(body)} for name, body in clusters.items()],
        "users": [{"name": name, "user": dict(body)} for name, body in users.items()],
        "contexts": [{"name": name, "context": dict(body)} for name, body in contexts.items()],
    }
    if current is not None:
        document["current-context"] = current
    return document


def write(path: Path, document: Mapping[str, Any]) -> Path:
    """Write a kubeconfig document as YAML, creating folders as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(document)))
    return path


def simple(user: Mapping[str, Any], **cluster: Any) -> dict[str, Any]:
    """One cluster, one user, one current context named ``main``."""
    return kubeconfig(
        {"c": {"server": "https://c.example:6443", **cluster}},
        {"u": user},
        {"main": {"cluster": "c", "user": "u"}},
        current="main",
    )


def load_simple(tmp_path: Path, user: Mapping[str, Any], **cluster: Any) -> ConnectionInfo:
    """Write a one-context kubeconfig and resolve it into a ConnectionInfo."""
    path = write(tmp_path / "config", simple(user, **cluster))
    return load_kubeconfig([path], serviceaccount_root=NO_POD).resolve()


def b64(data: bytes) -> str:
    """Base64 as kubeconfig ``*-data`` fields hold it."""
    return base64.b64encode(data).decode()


# Choosing and merging


def test_current_context_selects_cluster_user_and_namespace(tmp_path: Path) -> None:
    document = kubeconfig(
        {"c1": {"server": "https://one:6443"}, "c2": {"server": "https://two:6443"}},
        {"u1": {"token": "t1"}, "u2": {"token": "t2"}},
        {
            "first": {"cluster": "c1", "user": "u1"},
            "second": {"cluster": "c2", "user": "u2", "namespace": "apps"},
        },
        current="second",
    )
    config = load_kubeconfig([write(tmp_path / "config", document)], serviceaccount_root=NO_POD)
    info = config.resolve()
    assert (config.context, info.server, info.token) == ("second", "https://two:6443", "t2")
    assert info.default_namespace == "apps"


def test_context_override_wins_over_current_context(tmp_path: Path) -> None:
    document = kubeconfig(
        {"c1": {"server": "https://one"}, "c2": {"server": "https://two"}},
        {"u": {"token": "t"}},
        {"first": {"cluster": "c1", "user": "u"}, "second": {"cluster": "c2", "user": "u"}},
        current="first",
    )
    path = write(tmp_path / "config", document)
    config = load_kubeconfig([path], context="second", serviceaccount_root=NO_POD)
    assert config.resolve().server == "https://two"


def test_unknown_context_override_lists_the_available_contexts(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"token": "t"}))
    with pytest.raises(ConfigError, match=r"'nope' does not exist \(available: main\)"):
        load_kubeconfig([path], context="nope", serviceaccount_root=NO_POD)


def test_files_in_kubeconfig_variable_merge_with_the_first_name_winning(tmp_path: Path) -> None:
    first = kubeconfig(
        {"shared": {"server": "https://first"}},
        {},
        {"ctx": {"cluster": "shared", "user": "only-in-second"}},
    )
    second = kubeconfig(
        {"shared": {"server": "https://second"}},
        {"only-in-second": {"token": "from-second"}},
        {},
        current="ctx",
    )
    paths = [write(tmp_path / "a", first), write(tmp_path / "b", second)]
    environ = {"KUBECONFIG": os.pathsep.join(str(path) for path in paths)}
    info = load_kubeconfig(environ=environ, serviceaccount_root=NO_POD).resolve()
    assert (info.server, info.token) == ("https://first", "from-second")


def test_current_context_comes_from_the_first_file_that_sets_it(tmp_path: Path) -> None:
    clusters = {"c": {"server": "https://c"}}
    contexts = {"one": {"cluster": "c"}, "two": {"cluster": "c"}}
    paths = [
        write(tmp_path / "a", kubeconfig(clusters, {}, contexts)),
        write(tmp_path / "b", kubeconfig({}, {}, {}, current="two")),
        write(tmp_path / "c", kubeconfig({}, {}, {}, current="one")),
    ]
    assert load_kubeconfig(paths, serviceaccount_root=NO_POD).context == "two"


def test_missing_files_in_kubeconfig_variable_are_skipped(tmp_path: Path) -> None:
    real = write(tmp_path / "real", simple({"token": "t"}))
    environ = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "missing"), "", str(real)])}
    assert load_kubeconfig(environ=environ, serviceaccount_root=NO_POD).sources == (str(real),)


def test_kubeconfig_variable_naming_only_missing_files_is_an_error(tmp_path: Path) -> None:
    environ = {"KUBECONFIG": str(tmp_path / "missing")}
    with pytest.raises(ConfigError, match="missing: no kubeconfig file exists"):
        load_kubeconfig(environ=environ, serviceaccount_root=NO_POD)


def test_default_kubeconfig_is_dot_kube_config_in_home(tmp_path: Path) -> None:
    write(tmp_path / ".kube" / "config", simple({"token": "home"}))
    assert kubeconfig_paths({"HOME": str(tmp_path)}) == ([tmp_path / ".kube" / "config"], False)
    assert (
        load_kubeconfig(environ={"HOME": str(tmp_path)}, serviceaccount_root=NO_POD).resolve().token
        == "home"
    )


def test_explicitly_given_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_kubeconfig([tmp_path / "missing"], serviceaccount_root=NO_POD)


def test_anonymous_context_without_user_sends_no_authorization(tmp_path: Path) -> None:
    document = kubeconfig({"c": {"server": "https://c"}}, {}, {"x": {"cluster": "c"}}, current="x")
    info = load_kubeconfig(
        [write(tmp_path / "config", document)], serviceaccount_root=NO_POD
    ).resolve()
    assert info.as_http_headers() == {}


# Namespaces


def test_namespace_falls_back_to_the_pod_namespace_then_default(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"token": "t"}))
    root = tmp_path / "sa"
    root.mkdir()
    (root / "namespace").write_text("operators\n")
    assert load_kubeconfig([path], serviceaccount_root=root).namespace == "operators"
    assert load_kubeconfig([path], serviceaccount_root=NO_POD).namespace == "default"


# Cluster fields


def test_relative_paths_resolve_against_the_file_that_names_them(
    tmp_path: Path, pem_pair: tuple[bytes, bytes]
) -> None:
    folder = tmp_path / "deep" / "folder"
    folder.mkdir(parents=True)
    (folder / "ca.crt").write_bytes(pem_pair[0])
    (folder / "tls.crt").write_bytes(pem_pair[0])
    (folder / "tls.key").write_bytes(pem_pair[1])
    (folder / "token").write_text("from-file\n")
    user = {"client-certificate": "tls.crt", "client-key": "tls.key", "tokenFile": "token"}
    info = load_simple(folder, user, **{"certificate-authority": "ca.crt"})
    assert info.ca_path == str(folder / "ca.crt")
    assert (info.certificate_path, info.private_key_path) == (
        str(folder / "tls.crt"),
        str(folder / "tls.key"),
    )
    assert info.token == "from-file"
    assert isinstance(info.as_ssl_context(), ssl.SSLContext)


def test_ca_data_is_decoded_and_trusted(tmp_path: Path, pem_pair: tuple[bytes, bytes]) -> None:
    info = load_simple(tmp_path, {}, **{"certificate-authority-data": b64(pem_pair[0])})
    assert (info.ca_data, info.ca_path) == (pem_pair[0], None)
    context = info.as_ssl_context()
    assert any("anyop-test" in str(ca.get("subject")) for ca in context.get_ca_certs())


def test_cluster_flags_reach_the_connection_info(tmp_path: Path) -> None:
    cluster = {
        "insecure-skip-tls-verify": True,
        "proxy-url": "http://proxy:3128",
        "tls-server-name": "kubernetes",
    }
    info = load_simple(tmp_path, {}, **cluster)
    assert (info.insecure, info.proxy_url) == (True, "http://proxy:3128")
    assert info.tls_server_name == "kubernetes"
    assert info.as_ssl_context().verify_mode == ssl.CERT_NONE


def test_cluster_without_server_is_an_error_naming_file_and_field(tmp_path: Path) -> None:
    document = kubeconfig({"c": {}}, {}, {"x": {"cluster": "c"}}, current="x")
    path = write(tmp_path / "config", document)
    with pytest.raises(ConfigError, match=rf"{path}: clusters\[0\]\.cluster\.server is missing"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


# User fields


def test_static_token_becomes_a_bearer_header(tmp_path: Path) -> None:
    info = load_simple(tmp_path, {"token": "abc"})
    assert info.as_http_headers() == {"Authorization": "Bearer abc"}


def test_token_file_is_reread_after_rotation(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token")
    config = load_kubeconfig(
        [write(tmp_path / "config", simple({"tokenFile": "token"}))], serviceaccount_root=NO_POD
    )
    assert config.resolve().token == "first-token"
    token.write_text("second-token-after-rotation")
    assert config.resolve().token == "second-token-after-rotation"


def test_token_file_replaced_by_a_new_file_is_reread(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    config = load_kubeconfig(
        [write(tmp_path / "config", simple({"tokenFile": "token"}))], serviceaccount_root=NO_POD
    )
    assert config.resolve().token == "old"
    (tmp_path / "token.new").write_text("new")
    os.replace(tmp_path / "token.new", token)
    assert config.resolve().token == "new"


def test_token_file_wins_over_a_static_token(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    assert load_simple(tmp_path, {"token": "static", "tokenFile": "token"}).token == "from-file"


def test_unreadable_token_file_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"tokenFile": "missing"}))
    config = load_kubeconfig([path], serviceaccount_root=NO_POD)
    with pytest.raises(ConfigError, match=r"users\[0\]\.user\.tokenFile: cannot read"):
        config.resolve()


def test_basic_auth_user_becomes_a_basic_header(tmp_path: Path) -> None:
    info = load_simple(tmp_path, {"username": "admin", "password": "s3cret"})
    expected = "Basic " + base64.b64encode(b"admin:s3cret").decode()
    assert info.as_http_headers() == {"Authorization": expected}


def test_client_certificate_data_loads_into_an_ssl_context(
    tmp_path: Path, pem_pair: tuple[bytes, bytes]
) -> None:
    user = {"client-certificate-data": b64(pem_pair[0]), "client-key-data": b64(pem_pair[1])}
    info = load_simple(tmp_path, user)
    assert (info.certificate_data, info.private_key_data) == pem_pair
    assert (info.certificate_path, info.private_key_path) == (None, None)
    assert isinstance(info.as_ssl_context(), ssl.SSLContext)


def test_key_data_leaves_no_files_behind(
    tmp_path: Path, pem_pair: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    info = ConnectionInfo("https://x", certificate_data=pem_pair[0], private_key_data=pem_pair[1])
    info.as_ssl_context()
    assert list(scratch.iterdir()) == []


def test_mismatched_certificate_and_key_is_a_config_error(pem_pair: tuple[bytes, bytes]) -> None:
    other_key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    info = ConnectionInfo("https://x", certificate_data=pem_pair[0], private_key_data=other_key)
    with pytest.raises(ConfigError, match="cannot load the client certificate"):
        info.as_ssl_context()


def test_invalid_base64_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"client-certificate-data": "@@not base64@@"}))
    expected = rf"{path}: users\[0\]\.user\.client-certificate-data is not valid base64"
    with pytest.raises(ConfigError, match=expected):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_auth_provider_users_are_rejected_with_advice(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"auth-provider": {"name": "gcp"}}))
    with pytest.raises(ConfigError, match="auth-provider is not supported; use an exec"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_user_repr_never_shows_secrets(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({"token": "tok-123", "password": "pw-456"}))
    shown = repr(load_kubeconfig([path], serviceaccount_root=NO_POD))
    assert "tok-123" not in shown
    assert "pw-456" not in shown


# Broken files


def test_malformed_yaml_names_the_position_but_not_the_content(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("users:\n- name: u\n  user: {token: secret-token\n")
    with pytest.raises(ConfigError, match=rf"{path}: malformed YAML at line \d+") as caught:
        load_kubeconfig([path], serviceaccount_root=NO_POD)
    assert "secret-token" not in str(caught.value)


def test_top_level_list_is_not_a_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping at the top level"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_missing_current_context_lists_the_available_contexts(tmp_path: Path) -> None:
    document = kubeconfig({"c": {"server": "https://c"}}, {}, {"x": {"cluster": "c"}})
    path = write(tmp_path / "config", document)
    with pytest.raises(ConfigError, match=r"current-context is not set \(available contexts: x\)"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_current_context_naming_no_context_is_an_error(tmp_path: Path) -> None:
    document = kubeconfig(
        {"c": {"server": "https://c"}}, {}, {"x": {"cluster": "c"}}, current="gone"
    )
    path = write(tmp_path / "config", document)
    with pytest.raises(ConfigError, match="current-context 'gone' does not exist"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


@pytest.mark.parametrize("key", ["cluster", "user"])
def test_context_referring_to_an_unknown_entry_names_the_field(tmp_path: Path, key: str) -> None:
    context = {"cluster": "c", "user": "u", key: "ghost"}
    document = kubeconfig({"c": {"server": "https://c"}}, {"u": {}}, {"x": context}, current="x")
    path = write(tmp_path / "config", document)
    expected = rf"{path}: contexts\[0\]\.context\.{key} refers to 'ghost'"
    with pytest.raises(ConfigError, match=expected):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_entry_without_a_name_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "config", {"clusters": [{"cluster": {"server": "https://c"}}]})
    with pytest.raises(ConfigError, match=r"clusters\[0\]\.name is missing"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_field_of_the_wrong_type_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "config", simple({}, **{"insecure-skip-tls-verify": "yes"}))
    with pytest.raises(ConfigError, match="insecure-skip-tls-verify must be true or false"):
        load_kubeconfig([path], serviceaccount_root=NO_POD)


def test_user_with_a_plugin_cannot_resolve_without_its_credential(tmp_path: Path) -> None:
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": "true"}
    config = load_kubeconfig(
        [write(tmp_path / "config", simple({"exec": plugin}))], serviceaccount_root=NO_POD
    )
    with pytest.raises(ConfigError, match="run the credential plugin first"):
        config.resolve()


# In-cluster


def service_account_root(tmp_path: Path, token: str = "sa-token") -> Path:
    """A fake ``/var/run/secrets/kubernetes.io/serviceaccount`` folder."""
    root = tmp_path / "serviceaccount"
    root.mkdir()
    (root / "token").write_text(token)
    (root / "ca.crt").write_text("not used here")
    (root / "namespace").write_text("operators")
    return root


POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.mark.anyio
async def test_incluster_uses_the_service_host_token_ca_and_namespace(tmp_path: Path) -> None:
    root = service_account_root(tmp_path)
    account = load_incluster(root, environ=POD_ENV)
    assert account is not None
    info = await account.connection_info()
    assert (info.server, info.token) == ("https://10.96.0.1:443", "sa-token")
    assert (info.ca_path, info.default_namespace) == (str(root / "ca.crt"), "operators")


def test_incluster_puts_ipv6_hosts_in_brackets(tmp_path: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    account = load_incluster(service_account_root(tmp_path), environ=environ)
    assert account is not None
    assert account.server == "https://[fd00::1]:6443"


def test_incluster_token_is_reread_after_rotation(tmp_path: Path) -> None:
    root = service_account_root(tmp_path, token="before")
    account = load_incluster(root, environ=POD_ENV)
    assert account is not None
    assert account.resolve().token == "before"
    (root / "token").write_text("after-the-kubelet-rotated-it")
    assert account.resolve().token == "after-the-kubelet-rotated-it"


def test_outside_a_cluster_there_is_no_service_account(tmp_path: Path) -> None:
    assert load_incluster(service_account_root(tmp_path), environ={}) is None
    assert load_incluster(tmp_path / "nothing-mounted", environ=POD_ENV) is None


def test_incluster_without_namespace_file_uses_default(tmp_path: Path) -> None:
    root = service_account_root(tmp_path)
    (root / "namespace").unlink()
    (root / "ca.crt").unlink()
    account = load_incluster(root, environ=POD_ENV)
    assert account is not None
    assert (account.namespace, account.ca_path) == ("default", None)


def test_kubeconfig_is_a_frozen_value(tmp_path: Path) -> None:
    config = load_kubeconfig(
        [write(tmp_path / "config", simple({"token": "t"}))], serviceaccount_root=NO_POD
    )
    assert isinstance(config, KubeConfig)
    with pytest.raises(AttributeError):
        config.namespace = "other"  # type: ignore[misc]
