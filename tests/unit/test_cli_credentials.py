"""`anyop run` says which credentials it uses, and when the API server cannot be reached, its
last word names the server, the kubeconfig and the context."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from anyop.engine.operator.login import credentials_in_use
from anyop.kube.connection import ConnectionInfo

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "01-minimal" / "example.py"


def closed_port() -> int:
    """A loopback port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kubeconfig(path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "far", "cluster": {"server": server}}],
        "users": [{"name": "me", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "far-away", "context": {"cluster": "far", "user": "me"}}],
        "current-context": "far-away",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_dead_api_server_is_named_with_the_kubeconfig_and_context(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{closed_port()}"
    config = kubeconfig(tmp_path / "far.yaml", server)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ANYOP_"))}
    env |= {"KUBECONFIG": str(config), "ANYOP_NETWORKING__ERROR_BACKOFFS": "[0.01, 0.01]"}
    command = [sys.executable, "-m", "anyop", "run", str(EXAMPLE), "-n", "x", "--standalone"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    where = f"the kubeconfig {config}, context 'far-away'"
    assert result.returncode == 1
    assert f"Using the credentials of {where} for {server}." in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("anyop: The request failed: ")
    assert last.endswith(f"(the API server {server} of {where})")
    assert "t0ken" not in result.stderr


def test_the_credentials_in_use_are_the_highest_priority_ones() -> None:
    found = {
        "login_with_kubeconfig": ConnectionInfo(
            "https://a:6443", priority=10, source="the kubeconfig /k, context 'c'"
        ),
        "mine": ConnectionInfo("https://b:6443", priority=30),
    }
    assert credentials_in_use(found) == (
        "Using the credentials of the login handler 'mine' for https://b:6443 (1 more in reserve)."
    )
    del found["mine"]
    assert credentials_in_use(found) == (
        "Using the credentials of the kubeconfig /k, context 'c' for https://a:6443."
    )
