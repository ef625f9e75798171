"""Peering between `anyop run` processes: priorities, pausing, resuming, freeze and resume.

A test of one operator runs on both backends; a test of two runs them on different backends (in
each role once), so that a run covers both and each backend pauses for the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator

from anyop.peering import user_at_host
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])

OPERATOR = """
import os
import anyop

@anyop.on.create("kopfexamples")
def create_fn(**_):
    return {"pid": os.getpid()}

@anyop.daemon("kopfexamples", id="watcher")
async def watcher(stopped, name, logger, **_):
    logger.info(f"DAEMON STARTED {name}")
    await stopped.wait()
    logger.info(f"DAEMON STOPPED {name}: {stopped.reason!r}")
"""


@pytest.fixture
def source(tmp_path: Path) -> str:
    path = tmp_path / "peered_operator.py"
    path.write_text(OPERATOR)
    return str(path)


@pytest.fixture
def peering(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, peering_crds: None
) -> Iterator[str]:
    """The `default` AnyopPeering of the test's namespace."""
    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=json.dumps(body))
    return "default"


def peers(plane: LocalControlPlane, namespace: str, kind: str = "anyoppeering") -> dict[str, Any]:
    body = json.loads(kubectl(plane, "get", "-n", namespace, kind, "default", "-o", "json"))
    return dict(body.get("status") or {})


def handled_by(plane: LocalControlPlane, namespace: str, name: str) -> int:
    return int(wait_for_status(plane, namespace, name)["create_fn"]["pid"])


def assert_unhandled(plane: LocalControlPlane, namespace: str, name: str, seconds: float) -> None:
    time.sleep(seconds)
    body = json.loads(kubectl(plane, "get", "-n", namespace, "kex", name, "-o", "json"))
    assert "create_fn" not in (body.get("status") or {}), body


def anyop_cli(plane: LocalControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    cmd = [sys.executable, "-m", "anyop", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_a_lower_priority_operator_pauses_for_a_higher_one_and_resumes_when_it_exits(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    source: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    ghost = {
        "status": {"ghost": {"priority": 999, "lifetime": 5, "lastseen": "2020-01-01T00:00:00"}}
    }
    kubectl(
        plane, "patch", "-n", ns, "anyoppeering", peering, "--type=merge", "-p", json.dumps(ghost)
    )
    low = LiveOperator(plane, source, ns, "asyncio", "--priority", "10")
    high: LiveOperator | None = None
    try:
        apply_kex(plane, ns, "kex-1")
        assert handled_by(plane, ns, "kex-1") == low.pid
        assert "ghost" not in peers(plane, ns)  # a dead peer is removed by a live one
        low.wait_for(f"[{ns}/kex-1] DAEMON STARTED kex-1")

        high = LiveOperator(plane, source, ns, "trio", "--dev")  # priority 666
        low.wait_for("Pausing operations in favour of [")
        low.wait_for(f"[{ns}/kex-1] DAEMON STOPPED kex-1: <DaemonStoppingReason.OPERATOR_PAUSING")
        assert {record["priority"] for record in peers(plane, ns).values()} == {10, 666}
        apply_kex(plane, ns, "kex-2")
        assert handled_by(plane, ns, "kex-2") == high.pid

        high_output = high.stop()
        low.wait_for("Resuming operations after the pause.")
        low.wait_for(f"[{ns}/kex-1] DAEMON STARTED kex-1", times=2)  # a fresh listing
        apply_kex(plane, ns, "kex-3")
        assert handled_by(plane, ns, "kex-3") == low.pid
        assert [record["priority"] for record in peers(plane, ns).values()] == [10]
    finally:
        low_output = low.stop()
        if high is not None:
            high.stop()
    assert low.process.returncode == 0, low_output
    assert "Handler 'create_fn'" not in "".join(
        line for line in high_output.splitlines(keepends=True) if "kex-1" in line
    )
    assert peers(plane, ns) == {}  # both removed their records on exit


SLOW_OPERATOR = """
import time
import anyio
import anyop

@anyop.on.create("kopfexamples")
async def create_fn(name, logger, **_):
    logger.info(f"BEGIN {name} {time.time():.6f}")
    try:
        await anyio.sleep(2)
    finally:
        logger.info(f"END {name} {time.time():.6f}")
"""


def intervals(output: str) -> list[tuple[float, float]]:
    """(begin, end) of every handler run that an operator logged (unfinished: to infinity)."""
    begun: dict[str, float] = {}
    runs: list[tuple[float, float]] = []
    for line in output.splitlines():
        for mark in ("BEGIN ", "END "):
            if f"] {mark}" in line:
                name, stamp = line.split(f"] {mark}", 1)[1].split()[:2]
                if mark == "BEGIN ":
                    begun[name] = float(stamp)
                else:
                    runs.append((begun.pop(name), float(stamp)))
    return runs + [(start, float("inf")) for start in begun.values()]


def test_a_higher_priority_newcomer_serves_only_once_the_lower_one_has_stopped(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    tmp_path: Path,
) -> None:
    """The lower one is busy with a backlog of slow handlers when the newcomer starts: their
    handler runs must not overlap (before each record said whether its operator serves, they
    did until the lower one saw the newcomer's record)."""
    plane, ns = anyop_controlplane, anyop_namespace
    source = tmp_path / "slow_operator.py"
    source.write_text(SLOW_OPERATOR)
    body = "\n---\n".join(
        json.dumps({"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                    "metadata": {"name": f"kex-{i}", "namespace": ns}})
        for i in range(20)
    )  # fmt: skip
    kubectl(plane, "apply", "-f", "-", stdin=body)
    low = LiveOperator(plane, str(source), ns, "trio", "--priority", "10")
    high: LiveOperator | None = None
    try:
        low.wait_for("] BEGIN kex-", timeout=60)
        high = LiveOperator(plane, str(source), ns, "asyncio", "--priority", "20")
        high.wait_for("Waiting for lower-priority peers to pause:", timeout=60)
        low.wait_for("Pausing operations in favour of [")
        for i in range(20, 25):
            apply_kex(plane, ns, f"kex-{i}")
        high.wait_for("] END kex-", timeout=60)
    finally:
        low_output = low.stop()
        high_output = high.stop() if high is not None else ""
    lows, highs = intervals(low_output), intervals(high_output)
    assert lows
    assert highs
    overlaps = [(a, b) for a in lows for b in highs if a[0] < b[1] and b[0] < a[1]]
    assert overlaps == [], (overlaps, low_output[-3000:], high_output[-3000:])


def test_operators_of_the_same_priority_warn_and_all_pause(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    source: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    first = LiveOperator(plane, source, ns, "asyncio")
    apply_kex(plane, ns, "kex-1")
    assert handled_by(plane, ns, "kex-1") == first.pid
    second = LiveOperator(plane, source, ns, "trio")
    try:
        for operator in (first, second):
            operator.wait_for("Possibly conflicting operators with the same priority: [")
            operator.wait_for("Pausing all operators, including self: [")
        apply_kex(plane, ns, "kex-2")
        assert_unhandled(plane, ns, "kex-2", 2.0)
        second.stop()
        first.wait_for("Resuming operations after the pause.")
        assert handled_by(plane, ns, "kex-2") == first.pid
    finally:
        first.stop()
        second.stop()


@BACKENDS
def test_freeze_pauses_the_operators_until_resume(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    source: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = LiveOperator(plane, source, ns, backend)
    try:
        apply_kex(plane, ns, "kex-1")
        handled_by(plane, ns, "kex-1")
        frozen = anyop_cli(plane, "freeze", "-P", peering, "-n", ns, "-t", "60", "-m", "upgrade")
        assert frozen.returncode == 0, frozen.stderr
        operator.wait_for(f"Pausing operations in favour of [{user_at_host()!r}].")
        assert peers(plane, ns)[user_at_host()]["priority"] == 100
        apply_kex(plane, ns, "kex-2")
        assert_unhandled(plane, ns, "kex-2", 2.0)
        resumed = anyop_cli(plane, "resume", "-P", peering, "-n", ns)
        assert resumed.returncode == 0, resumed.stderr
        operator.wait_for("Resuming operations after the pause.")
        handled_by(plane, ns, "kex-2")
    finally:
        operator.stop()


@BACKENDS
def test_a_frozen_peer_thaws_by_itself_after_its_lifetime(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    source: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = LiveOperator(plane, source, ns, backend)
    try:
        frozen = anyop_cli(plane, "freeze", "-P", peering, "-n", ns, "-t", "3", "-i", "upgrader")
        assert frozen.returncode == 0, frozen.stderr
        operator.wait_for("Pausing operations in favour of ['upgrader'].")
        operator.wait_for("Resuming operations after the pause.", timeout=10)
        apply_kex(plane, ns, "kex-1")
        handled_by(plane, ns, "kex-1")
        assert "upgrader" not in peers(plane, ns)
    finally:
        operator.stop()


@BACKENDS
def test_a_mandatory_kopf_peering_pauses_until_it_exists_and_is_then_used(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering_crds: None,
    source: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    operator = LiveOperator(plane, source, ns, backend, "--peering", "example", "-v")
    try:
        operator.wait_for(f"Peering object 'example' in {ns!r} is not found; pausing")
        apply_kex(plane, ns, "kex-1")
        assert_unhandled(plane, ns, "kex-1", 1.0)
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "example"}}
        kubectl(plane, "apply", "-n", ns, "-f", "-", stdin=json.dumps(body))
        assert handled_by(plane, ns, "kex-1") == operator.pid
        found = json.loads(kubectl(plane, "get", "-n", ns, "kopfpeering", "example", "-o", "json"))
        [record] = found["status"].values()
        assert record["priority"] == 0
        assert record["lifetime"] == 60
        assert record["lastseen"]
    finally:
        operator.stop()


def test_an_absent_default_peering_falls_back_to_standalone(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering_crds: None,
    source: str,
) -> None:
    operator = LiveOperator(anyop_controlplane, source, anyop_namespace, "asyncio")
    try:
        apply_kex(anyop_controlplane, anyop_namespace, "kex-1")
        assert handled_by(anyop_controlplane, anyop_namespace, "kex-1") == operator.pid
    finally:
        output = operator.stop()
    assert "Default peering object is not found, falling back to the standalone mode." in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["freeze", "-P", "default", "-t", "5", "-n", "x", "-A"], "not both"),
        (["freeze", "-P", "default", "-n", "x"], "'--lifetime'"),
        (["resume", "-n", "x"], "'--peering'"),
        (["freeze", "-P", "default", "-t", "5", "--dev", "-p", "5"], "Either --dev or --priority"),
        (
            ["run", "x.py", "--standalone", "--peering", "p", "-A"],
            "Either --standalone or --peering",
        ),
    ],
)
def test_conflicting_or_missing_peering_options_are_usage_errors(
    args: list[str], message: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "anyop", *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_freezing_a_missing_peering_is_a_clear_error(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, peering_crds: None
) -> None:
    result = anyop_cli(anyop_controlplane, "freeze", "-P", "nope", "-n", anyop_namespace, "-t", "5")
    assert result.returncode == 1
    assert f"Peering object 'nope' in {anyop_namespace!r} is not found." in result.stderr


@BACKENDS
def test_a_standalone_operator_ignores_a_frozen_peering(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    source: str,
    backend: str,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    frozen = anyop_cli(plane, "freeze", "-P", peering, "-n", ns, "-t", "60", "-i", "upgrader")
    assert frozen.returncode == 0, frozen.stderr
    operator = LiveOperator(plane, source, ns, backend, "--standalone")
    try:
        apply_kex(plane, ns, "kex-1")
        assert handled_by(plane, ns, "kex-1") == operator.pid
    finally:
        output = operator.stop()
    assert "Pausing" not in output
    assert list(peers(plane, ns)) == ["upgrader"]  # it never wrote a record of its own


def test_options_come_from_anyop_environment_variables() -> None:
    env = {**os.environ, "ANYOP_PEERING": "example", "ANYOP_STANDALONE": "1"}
    cmd = [sys.executable, "-m", "anyop", "run", "x.py", "-A"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Either --standalone or --peering" in result.stderr
