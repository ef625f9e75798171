"""Credential plugins run as real child processes, on both Trio and asyncio."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from anyop.errors import ConfigError
from anyop.kube import execplugins
from anyop.kube.config import load_kubeconfig
from anyop.kube.execplugins import ExecSpec, exec_info, parse_exec_credential, run_exec_plugin

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"
NO_POD = Path("/nonexistent/anyop/serviceaccount")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="plugins are shebang scripts")


def plugin(folder: Path, name: str, body: str) -> Path:
    """Write an executable Python script; it sees ``info_path``, where it may dump its request."""
    path = folder / name
    header = (
        f"#!{sys.executable}\nimport json, os, sys, time\ninfo_path = {str(folder / 'seen')!r}\n"
    )
    path.write_text(header + body)
    path.chmod(0o755)
    return path


def credential(api_version: str, **status: Any) -> str:
    """The JSON text of an ExecCredential response."""
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})


def printing(answer: str) -> str:
    """A plugin body that records its request and environment, then prints ``answer``."""
    return (
        "seen = {'info': json.loads(os.environ['KUBERNETES_EXEC_INFO']),"
        " 'color': os.environ.get('PLUGIN_COLOR'), 'argv': sys.argv[1:]}\n"
        "open(info_path, 'w').write(json.dumps(seen))\n"
        f"print({answer!r})\n"
    )


def write_kubeconfig(folder: Path, exec_stanza: dict[str, Any]) -> Path:
    """A kubeconfig whose only user authenticates with ``exec_stanza``."""
    document = {
        "clusters": [
            {"name": "c", "cluster": {"server": "https://c:6443", "proxy-url": "http://p"}}
        ],
        "users": [{"name": "u", "user": {"exec": exec_stanza}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = folder / "config"
    path.write_text(yaml.safe_dump(document))
    return path


def seen(folder: Path) -> dict[str, Any]:
    """What the last plugin run recorded about its request."""
    result: dict[str, Any] = json.loads((folder / "seen").read_text())
    return result


@pytest.mark.anyio
async def test_v1_plugin_token_reaches_the_connection_info(tmp_path: Path) -> None:
    script = plugin(tmp_path, "token.py", printing(credential(V1, token="from-plugin")))
    stanza = {
        "apiVersion": V1,
        "command": str(script),
        "args": ["--flag", "value"],
        "env": [{"name": "PLUGIN_COLOR", "value": "blue"}],
        "interactiveMode": "Never",
    }
    config = load_kubeconfig([write_kubeconfig(tmp_path, stanza)], serviceaccount_root=NO_POD)
    info = await config.connection_info()
    assert info.as_http_headers() == {"Authorization": "Bearer from-plugin"}
    assert info.expiration is None
    request = seen(tmp_path)
    assert request["info"] == {
        "apiVersion": V1,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    assert (request["color"], request["argv"]) == ("blue", ["--flag", "value"])


@pytest.mark.anyio
async def test_v1beta1_plugin_certificate_and_expiration_are_used(tmp_path: Path) -> None:
    answer = credential(
        V1BETA1,
        clientCertificateData="CERT PEM",
        clientKeyData="KEY PEM",
        expirationTimestamp="2030-01-02T03:04:05Z",
    )
    script = plugin(tmp_path, "cert.py", printing(answer))
    stanza = {"apiVersion": V1BETA1, "command": str(script), "provideClusterInfo": True}
    config = load_kubeconfig([write_kubeconfig(tmp_path, stanza)], serviceaccount_root=NO_POD)
    info = await config.connection_info()
    assert (info.certificate_data, info.private_key_data) == (b"CERT PEM", b"KEY PEM")
    assert info.expiration == datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    cluster = seen(tmp_path)["info"]["spec"]["cluster"]
    assert cluster == {"server": "https://c:6443", "proxy-url": "http://p"}


@pytest.mark.anyio
async def test_relative_command_path_is_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    plugin(tmp_path / "bin", "token.py", printing(credential(V1, token="relative")))
    stanza = {"apiVersion": V1, "command": "bin/token.py"}
    config = load_kubeconfig([write_kubeconfig(tmp_path, stanza)], serviceaccount_root=NO_POD)
    assert (await config.connection_info()).token == "relative"


@pytest.mark.anyio
async def test_failing_plugin_shows_its_stderr_and_install_hint(tmp_path: Path) -> None:
    body = "sys.stderr.write('token expired, please log in\\n')\nsys.exit(1)\n"
    command = str(plugin(tmp_path, "fail.py", body))
    hint = "Install it with: brew install x"
    spec = ExecSpec(command, "kc: users[0].user.exec", install_hint=hint)
    with pytest.raises(ConfigError) as caught:
        await run_exec_plugin(spec)
    message = str(caught.value)
    assert message.startswith("kc: users[0].user.exec: ")
    assert "exited with status 1: token expired, please log in" in message
    assert message.endswith("Install it with: brew install x")


@pytest.mark.anyio
async def test_plugin_printing_garbage_is_a_config_error(tmp_path: Path) -> None:
    spec = ExecSpec(str(plugin(tmp_path, "junk.py", "print('hello, world')\n")), "kc: exec")
    with pytest.raises(ConfigError, match="is not JSON"):
        await run_exec_plugin(spec)


@pytest.mark.anyio
async def test_missing_command_shows_the_install_hint(tmp_path: Path) -> None:
    spec = ExecSpec(str(tmp_path / "absent"), "kc: exec", install_hint="get the plugin")
    with pytest.raises(ConfigError, match=r"cannot run .*\nget the plugin"):
        await run_exec_plugin(spec)


@pytest.mark.anyio
async def test_plugin_that_hangs_is_stopped_at_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execplugins, "EXEC_TIME_LIMIT", 0.2)
    # A real subprocess sleeps in real time; the 0.2 s limit stops it (the 30 s are never waited).
    spec = ExecSpec(str(plugin(tmp_path, "slow.py", "time.sleep(30)\n")), "kc: exec")
    with pytest.raises(ConfigError, match=r"ran over 0\.2 s"):
        await run_exec_plugin(spec)


def test_response_with_another_api_version_is_rejected() -> None:
    spec = ExecSpec("plugin", "kc: exec", api_version=V1)
    with pytest.raises(ConfigError, match=r"has apiVersion .*v1beta1' and kind 'ExecCredential'"):
        parse_exec_credential(spec, credential(V1BETA1, token="t").encode())


def test_response_of_another_kind_is_rejected() -> None:
    answer = json.dumps({"apiVersion": V1, "kind": "Secret", "status": {"token": "t"}})
    with pytest.raises(ConfigError, match="kind 'Secret'"):
        parse_exec_credential(ExecSpec("plugin", "kc: exec"), answer.encode())


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        ({}, "neither a token nor a client certificate"),
        ({"clientCertificateData": "C"}, "only one of clientCertificateData"),
        ({"token": 5}, "status.token is not a string"),
        ({"token": "t", "expirationTimestamp": "soon"}, "not RFC 3339"),
    ],
)
def test_incomplete_status_is_rejected(status: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_exec_credential(ExecSpec("plugin", "kc: exec"), credential(V1, **status).encode())


def test_parse_errors_never_quote_the_output() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_exec_credential(ExecSpec("plugin", "kc: exec"), b'{"token": "leaky-secret"')
    assert "leaky-secret" not in str(caught.value)


def test_cluster_info_is_sent_only_when_asked_for() -> None:
    cluster = {"server": "https://c"}
    assert "cluster" not in json.loads(exec_info(ExecSpec("p", "w"), cluster))["spec"]
    spec = ExecSpec("p", "w", provide_cluster_info=True)
    assert json.loads(exec_info(spec, cluster))["spec"]["cluster"] == cluster


@pytest.mark.parametrize(
    ("stanza", "problem"),
    [
        (
            {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"},
            "apiVersion must",
        ),
        ({"command": "x"}, "apiVersion must"),
        ({"apiVersion": V1}, r"exec\.command is missing"),
        ({"apiVersion": V1, "command": "x", "interactiveMode": "Always"}, "no terminal"),
        ({"apiVersion": V1, "command": "x", "args": "--one"}, "args must be a list of strings"),
        ({"apiVersion": V1, "command": "x", "env": [{"name": "A"}]}, r"env\[0\]\.value must be"),
    ],
)
def test_invalid_exec_stanza_names_the_field(
    tmp_path: Path, stanza: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_kubeconfig([write_kubeconfig(tmp_path, stanza)], serviceaccount_root=NO_POD)
