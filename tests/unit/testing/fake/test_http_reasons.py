"""The loopback server's status lines have the phrases of Go's net/http, as kube-apiserver's."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from anyop.testing.fake.http_reasons import reason_phrase


def _go_status_texts() -> dict[int, str]:
    """``http.StatusText`` of every code, read from the Go toolchain's net/http/status.go."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        pytest.skip("no Go toolchain to read net/http's status texts from")
    root = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, check=True)
    source = (Path(root.stdout.strip()) / "src" / "net" / "http" / "status.go").read_text()
    codes = {
        name: int(code) for name, code in re.findall(r"^\s*(Status\w+)\s*=\s*(\d+)", source, re.M)
    }
    return {
        codes[name]: text
        for name, text in re.findall(r'case (Status\w+):\s*return "([^"]*)"', source)
    }


def test_every_reason_phrase_is_the_one_go_sends() -> None:
    texts = _go_status_texts()
    assert len(texts) > 50
    assert {code: reason_phrase(code) for code in texts} == texts


def test_a_code_without_a_phrase_has_an_empty_one() -> None:
    assert reason_phrase(599) == ""
