"""Operator shutdown with daemons: SIGTERM to `anyop run`, and nothing left after serve()."""

from __future__ import annotations

import json
import signal
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.live import LiveOperator
from tests.e2e.test_daemons_e2e import until
from tests.e2e.test_engine_e2e import create, running

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

OPERATOR = textwrap.dedent(
    """
    import gc
    import time
    import anyio
    import anyop

    @anyop.on.cleanup()
    def report_collector(logger, **_):
        logger.info(f"collector enabled while exiting: {gc.isenabled()}")

    @anyop.daemon("kopfexamples", id="async_daemon", cancellation_timeout=1.0,
                  when=lambda name, **_: int(name.split("-")[1]) % 2 == 0)
    async def async_daemon(name, logger, **_):
        logger.info(f"started {name}")
        try:
            await anyio.sleep(3600)
        finally:
            logger.info(f"exiting {name}")

    @anyop.daemon("kopfexamples", id="sync_daemon",
                  when=lambda name, **_: int(name.split("-")[1]) % 2 == 1)
    def sync_daemon(name, logger, stopped, **_):
        logger.info(f"started {name}")
        while not stopped:
            stopped.wait(0.5)
        logger.info(f"exiting {name} {stopped.reason!r}")

    @anyop.on.create("kopfexamples", id="hung_handler", when=lambda name, **_: name == "kex-1")
    def hung_handler(**_):
        time.sleep(3600)  # a sync handler that never returns must not keep the process alive

    @anyop.daemon("kopfexamples", id="deaf_daemon", cancellation_timeout=0.5,
                  when=lambda name, **_: name == "kex-0")
    def deaf_daemon(name, logger, **_):
        logger.info(f"started deaf {name}")
        time.sleep(3600)  # never checks its flag: abandoned at exit; the process still ends
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigterm_stops_fifty_daemons_and_exits_0(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "daemons_operator.py"
    source.write_text(OPERATOR)
    kex = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": {"field": "x"}}
    items = [{**kex, "metadata": {"name": f"kex-{i}"}} for i in range(50)]
    document = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=document)
    operator = LiveOperator(anyop_controlplane, str(source), anyop_namespace, backend)
    try:
        operator.wait_for("started kex-", times=50, timeout=60)
        # The sync deaf daemon starts in a thread: it may come after the fifty async ones.
        operator.wait_for("started deaf kex-0", timeout=60)
    finally:
        t0 = time.monotonic()
        output = operator.stop()
        elapsed = time.monotonic() - t0
    lines = operator.lines
    assert operator.process.returncode == 0, output[-3000:]
    assert elapsed < 5.0 + 2.0, f"{elapsed:.1f} s to exit"  # the reaping limit, plus start-up
    assert sum("exiting kex-" in line for line in lines) == 50, output[-3000:]
    assert sum("OPERATOR_EXITING" in line for line in lines) == 25
    assert "Daemon 'deaf_daemon' did not exit in time. Leaving it orphaned." in output
    assert "collector enabled while exiting: False" in output


@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_no_task_and_no_non_daemon_thread_of_anyop_outlives_serve(
    api: httpx.AsyncClient, anyop_namespace: str, recwarn: pytest.WarningsRecorder
) -> None:
    registry = OperatorRegistry()
    started = threading.Event()
    release = threading.Event()

    @anyop.daemon("kopfexamples", registry=registry, cancellation_timeout=0.2, id="deaf")
    def deaf(**_: Any) -> None:
        started.set()
        release.wait(60)

    @anyop.daemon("kopfexamples", registry=registry, id="polite")
    async def polite(stopped: anyop.DaemonStopped, **_: Any) -> None:
        await stopped.wait()

    @anyop.timer("kopfexamples", registry=registry, interval=0.1, id="tick")
    def tick(**_: Any) -> None:
        pass

    before = {task.id for task in anyio.get_running_tasks()}
    try:
        async with running(registry, anyop_namespace):
            await create(api, anyop_namespace, "leftovers")
            await until(started.is_set)
        after = {task.id for task in anyio.get_running_tasks()}
        assert after <= before
        leftovers = [t for t in threading.enumerate() if t.name.startswith("anyop")]
        assert all(thread.daemon for thread in leftovers)
        assert any(w.category is ResourceWarning for w in recwarn.list)
    finally:
        release.set()


STUBBORN = textwrap.dedent(
    """
    import anyio
    import anyop

    @anyop.daemon("kopfexamples", id="stubborn")
    async def stubborn(name, logger, **_):
        logger.info(f"started {name}")
        await anyio.sleep(3600)  # ignores its flag, and has no cancellation timeout
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_second_signal_exits_at_once(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "stubborn_operator.py"
    source.write_text(STUBBORN)
    kex = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex-s"}}
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=json.dumps(kex))
    operator = LiveOperator(anyop_controlplane, str(source), anyop_namespace, backend)
    try:
        operator.wait_for("started kex-s", timeout=60)
        operator.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the daemon holds the first, graceful stop (it would be reaped at 5 s)
        assert operator.process.poll() is None
        t0 = time.monotonic()
        operator.stop()
        elapsed = time.monotonic() - t0
    finally:
        output = operator.stop(signal.SIGKILL)
    assert elapsed < 2.0, output[-2000:]
    assert "Signal SIGTERM received. Operator is stopping." in output
    assert "Signal SIGTERM received again: stopping at once." in output


DEAF = textwrap.dedent(
    """
    import time
    import anyop

    @anyop.daemon("kopfexamples", id="deaf")
    def deaf(name, logger, **_):
        logger.info(f"started {name}")
        time.sleep(3600)  # a sync daemon ignoring its flag and no timeout: waited for forever
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_ultimate_exiting_timeout_kills_a_process_whose_graceful_exit_hangs(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "deaf_operator.py"
    source.write_text(DEAF)
    monkeypatch.setenv("ANYOP_PROCESS__ULTIMATE_EXITING_TIMEOUT", "1.5")
    kex = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "kex-d"}}
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=json.dumps(kex))
    operator = LiveOperator(anyop_controlplane, str(source), anyop_namespace, backend)
    try:
        operator.wait_for("started kex-d", timeout=60)
        t0 = time.monotonic()
        operator.stop()
        elapsed = time.monotonic() - t0
    finally:
        output = operator.stop(signal.SIGKILL)
    assert operator.process.returncode == -signal.SIGKILL, output[-2000:]
    assert 1.4 < elapsed < 10, output[-2000:]
    assert "(process.ultimate_exiting_timeout). Killing the process." in output
