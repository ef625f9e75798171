"""A stop at any moment of `anyop run` ends it promptly, even before it serves anything.

SIGTERM during the startup handlers, during the login, and while the discovery retries an
unreachable API server: the operator says it received the signal, cancels its start-up, runs no
handler, and exits with 0 within a few seconds (not after the retries, nor by the signal's
default action, exit 143).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_examples_more_e2e import Output

from anyop.testing.controlplane import LocalControlPlane, free_port

APP = """
import os
from typing import Any

import anyio

import anyop

STAGE = os.environ.get("STOP_STAGE", "")

if STAGE == "startup":

    @anyop.on.startup()
    async def slow_start(logger: anyop.Logger, **_: Any) -> None:
        logger.info("The startup handler waits.")
        await anyio.sleep(3600)

if STAGE == "login":

    @anyop.on.login()
    async def slow_login(logger: anyop.Logger, **_: Any) -> None:
        logger.info("The login handler waits.")
        await anyio.sleep(3600)


@anyop.on.create("kopfexamples")
def create_fn(**_: Any) -> None:
    pass
"""

PROMPT = 5.0  # seconds from the signal to the exit; the retries alone would take 15 s or more


def unreachable_kubeconfig(plane: LocalControlPlane, path: Path) -> Path:
    """The admin's kubeconfig, pointing at a port where nothing listens."""
    config = yaml.safe_load(Path(plane.kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("stage", "waiting"),
    [
        ("startup", "The startup handler waits."),
        ("login", "The login handler waits."),
        ("discovery", "Request attempt #2/9 failed; will retry"),
    ],
)
def test_a_sigterm_before_the_operator_serves_stops_it_at_once(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
    stage: str,
    waiting: str,
) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    monkeypatch.setenv("STOP_STAGE", stage)
    kubeconfig = None
    if stage == "discovery":
        kubeconfig = unreachable_kubeconfig(anyop_controlplane, tmp_path / "kubeconfig")
    process = start_operator(
        anyop_controlplane, str(app), anyop_namespace, backend, kubeconfig=kubeconfig
    )
    output = Output(process)
    try:
        output.wait_for(waiting)
    finally:
        signalled = time.monotonic()
        text = output.stop()  # SIGTERM, and the output until the exit
    elapsed = time.monotonic() - signalled
    assert process.returncode == 0, text
    assert elapsed < PROMPT, text
    assert "Signal SIGTERM received. Operator is stopping." in text
    assert "Stop is requested while starting. Cancelling the start-up." in text
    assert "Traceback" not in text
