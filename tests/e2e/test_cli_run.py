"""`anyop run` runs an example operator against the real API server, on both backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.kex import apply_kex, wait_for_status

from anyop.testing.controlplane import LocalControlPlane

EXAMPLE = Path(__file__).parents[2] / "examples" / "01-minimal" / "example.py"


def start_operator(
    plane: LocalControlPlane,
    source: str,
    namespace: str,
    backend: str,
    *more: str,
    kubeconfig: Path | None = None,
) -> subprocess.Popen[str]:
    """`anyop run SOURCE [MORE...] -n NAMESPACE` in a child process, its output as plain text.

    It uses the admin's kubeconfig unless another one is given.
    """
    env = {**os.environ, "KUBECONFIG": str(kubeconfig or plane.kubeconfig)}
    cmd = [sys.executable, "-m", "anyop", "run", source, *more, "-n", namespace,
           "--backend", backend, "--log-format", "plain"]  # fmt: skip
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_minimal_example_handles_an_object_and_exits_0_on_sigterm(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
) -> None:
    operator = start_operator(anyop_controlplane, str(EXAMPLE), anyop_namespace, backend)
    try:
        apply_kex(anyop_controlplane, anyop_namespace, "kex-1", field="value")
        status = wait_for_status(anyop_controlplane, anyop_namespace, "kex-1")
        assert status["create_fn"] == {"message": "hello world"}
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    assert f"[{anyop_namespace}/kex-1] Handler 'create_fn' succeeded." in output
    assert f"[{anyop_namespace}/kex-1] Creation is processed: 1 succeeded; 0 failed." in output


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "info"])
def test_the_in_progress_line_with_the_body_is_logged_only_with_debug(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    debug: bool,
) -> None:
    more = ["--debug"] if debug else []
    operator = start_operator(anyop_controlplane, str(EXAMPLE), anyop_namespace, "asyncio", *more)
    try:
        apply_kex(anyop_controlplane, anyop_namespace, "kex-1", field="value")
        wait_for_status(anyop_controlplane, anyop_namespace, "kex-1")
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert f"[{anyop_namespace}/kex-1] Creation is processed: 1 succeeded; 0 failed." in output
    in_progress = f"[{anyop_namespace}/kex-1] Creation is in progress: {{'apiVersion': "
    assert (in_progress in output) is debug, output


def test_namespace_and_all_namespaces_together_are_a_usage_error() -> None:
    cmd = [sys.executable, "-m", "anyop", "run", str(EXAMPLE), "-n", "x", "-A"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "not both" in result.stderr


def test_a_missing_operator_file_is_a_clear_error(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "anyop", "run", str(tmp_path / "nope.py"), "-A"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "The operator file does not exist" in result.stderr


ACTIVITIES = """
import anyop

@anyop.on.startup()
def startup_fn(retry, settings, logger, **_):
    if retry < 2:
        raise anyop.TemporaryError("not yet", delay=0.1)
    logger.info("STARTUP DONE")

@anyop.on.cleanup()
async def cleanup_fn(logger, **_):
    logger.info("CLEANUP DONE")

@anyop.on.create("kopfexamples")
def create_fn(logger, **_):
    logger.info("CREATE RAN")
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_startup_runs_before_handlers_and_cleanup_runs_once_at_exit(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "activities_operator.py"
    source.write_text(ACTIVITIES)
    apply_kex(anyop_controlplane, anyop_namespace, "kex-a")
    operator = start_operator(anyop_controlplane, str(source), anyop_namespace, backend)
    try:
        wait_for_status(anyop_controlplane, anyop_namespace, "kex-a", key="anyop")
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=60)
    assert operator.returncode == 0, output
    lines = output.splitlines()
    assert lines.count("Activity 'startup_fn' failed temporarily: not yet") == 2
    assert lines.index("STARTUP DONE") < lines.index(f"[{anyop_namespace}/kex-a] CREATE RAN")
    assert lines.count("CLEANUP DONE") == 1
    assert lines.index("CLEANUP DONE") > lines.index(f"[{anyop_namespace}/kex-a] CREATE RAN")
