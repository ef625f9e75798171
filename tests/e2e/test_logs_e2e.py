"""`anyop run -d --log-format json`: every line is JSON, and no secret ever reaches the logs."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

CANARY = "canary-7f3a9c-do-not-log"

OPERATOR = textwrap.dedent(f"""
    import dataclasses
    import anyop

    CANARY = {CANARY!r}
    calls = []

    @anyop.on.login()
    async def login_fn(**kwargs):
        calls.append(1)
        info = await anyop.login_with_kubeconfig(**kwargs)
        if len(calls) == 1:  # a token the server rejects first: a 401, then a re-login
            return dataclasses.replace(
                info, token=CANARY, certificate_path=None, private_key_path=None,
                certificate_data=None, private_key_data=None,
            )
        return info

    @anyop.on.create("v1", "secrets")
    def secret_fn(body, patch, logger, **_):
        logger.debug("The secret has %d keys.", len(body["data"]))
        patch.metadata.annotations["checked"] = "yes"
        return {{"keys": len(body["data"])}}
""")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_debug_json_logs_parse_line_by_line_and_never_show_a_secret(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, tmp_path: Path, backend: str
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    source = tmp_path / "secrets_operator.py"
    source.write_text(OPERATOR)
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    cmd = [sys.executable, "-m", "anyop", "run", str(source), "-n", ns, "--backend", backend,
           "--log-format", "json", "--debug"]  # fmt: skip
    operator = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    encoded = base64.b64encode(CANARY.encode()).decode()
    try:
        secret = {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", "namespace": ns},
            "data": {"password": encoded}, "stringData": {"token": CANARY},
        }  # fmt: skip
        kubectl(plane, "apply", "-f", "-", stdin=json.dumps(secret))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = json.loads(kubectl(plane, "get", "secret", "s1", "-n", ns, "-o", "json"))
            if found["metadata"].get("annotations", {}).get("checked") == "yes":
                break
            time.sleep(0.2)
        else:
            pytest.fail("the operator did not handle the secret")
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output[-3000:]
    lines = output.splitlines()
    records = [json.loads(line) for line in lines]  # raises on any line that is not JSON
    messages = [record["message"] for record in records]
    assert "Handler 'secret_fn' succeeded." in messages
    assert "Re-authentication has been initiated." in messages
    assert any(r.get("object", {}).get("name") == "s1" for r in records)
    for secret_text in (CANARY, encoded, base64.b64encode(CANARY.encode()).decode()[:16]):
        assert secret_text not in output
