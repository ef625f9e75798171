"""Leader election: of two `anyop run --leader-election` replicas, exactly one handles objects.

The two replicas run on different backends: a run covers both, and either may lead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator
from tests.e2e.test_cli_run import start_operator

from anyop.testing.controlplane import LocalControlPlane

LEASE = "kex-leader"

LEDGER_OPERATOR = """
import json, os, time
import anyio
import anyop

LEDGER = os.environ["ANYOP_TEST_LEDGER"]

def note(what, name):
    with open(LEDGER, "a") as ledger:
        ledger.write(json.dumps({"pid": os.getpid(), "what": what, "name": name,
                                 "t": time.time()}) + "\\n")

@anyop.on.create("kopfexamples")
async def create_fn(name, **_):
    note("start", name)
    await anyio.sleep(0.3)
    note("end", name)
    return {"pid": os.getpid()}
"""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The operator source and its ledger file; short Lease timings (3 s / 2 s / 0.5 s)."""
    path = tmp_path / "ledger.jsonl"
    path.touch()
    monkeypatch.setenv("ANYOP_TEST_LEDGER", str(path))
    monkeypatch.setenv("ANYOP_LEADERSHIP__LEASE_DURATION", "3")
    monkeypatch.setenv("ANYOP_LEADERSHIP__RENEW_DEADLINE", "2")
    monkeypatch.setenv("ANYOP_LEADERSHIP__RETRY_PERIOD", "0.5")
    (tmp_path / "ledger_operator.py").write_text(LEDGER_OPERATOR)
    return path


@pytest.fixture
def http(anyop_controlplane: LocalControlPlane) -> Iterator[httpx.Client]:
    """A sync admin client (quicker than kubectl when polling)."""
    ctx = anyop_controlplane.ssl_context()
    with httpx.Client(base_url=anyop_controlplane.server, verify=ctx, timeout=10) as client:
        yield client


def holder(http: httpx.Client, namespace: str) -> str | None:
    """The Lease's holder, or None if there is no Lease or nobody holds it."""
    response = http.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE}")
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()["spec"].get("holderIdentity") or None


def identity_of(operator: subprocess.Popen[str]) -> str:
    return f"{socket.gethostname()}-{operator.pid}"


def wait_for_holder(
    http: httpx.Client, namespace: str, wanted: set[str], timeout: float = 30
) -> str:
    """Poll the Lease until one of ``wanted`` holds it; return that identity."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := holder(http, namespace)) in wanted:
            assert found is not None
            return found
        time.sleep(0.05)
    raise AssertionError(f"none of {wanted} took the Lease within {timeout} s")


def replicas(
    plane: LocalControlPlane, source: Path, namespace: str, *more: str
) -> list[subprocess.Popen[str]]:
    """Two replicas, one on each backend: whichever leads, the other takes over from it."""
    options = ["--leader-election", "--lease-name", LEASE, "--lease-namespace", namespace, *more]
    return [start_operator(plane, str(source), namespace, backend, *options)
            for backend in ("asyncio", "trio")]  # fmt: skip


def runs(ledger: Path, killed: dict[int, float]) -> list[tuple[float, float, int, str]]:
    """The handler runs as (start, end, pid, name); a killed run ends when it was killed."""
    started: dict[tuple[int, str], float] = {}
    found: list[tuple[float, float, int, str]] = []
    for line in ledger.read_text().splitlines():
        entry: dict[str, Any] = json.loads(line)
        key = (entry["pid"], entry["name"])
        if entry["what"] == "start":
            started[key] = entry["t"]
        else:
            found.append((started.pop(key), entry["t"], *key))
    for (pid, name), start in started.items():
        found.append((start, killed.get(pid, time.time()), pid, name))
    return sorted(found)


def assert_never_concurrent(all_runs: list[tuple[float, float, int, str]]) -> None:
    """No two runs of different processes overlap in time."""
    for start, end, pid, name in all_runs:
        for other_start, other_end, other_pid, other in all_runs:
            if pid != other_pid:
                overlap = start < other_end and other_start < end
                assert not overlap, f"{name} (pid {pid}) overlaps {other} (pid {other_pid})"


def stop(*operators: subprocess.Popen[str]) -> list[str]:
    outputs = []
    for operator in operators:
        if operator.poll() is None:
            operator.send_signal(signal.SIGTERM)
        outputs.append(operator.communicate(timeout=60)[0])
    return outputs


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_killed_leader_is_replaced_within_lease_duration_and_runs_never_overlap(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    warm: bool,
    ledger: Path,
    http: httpx.Client,
) -> None:
    source = ledger.parent / "ledger_operator.py"
    more = ["--warm-standby", "-v"] if warm else ["-v"]
    operators = replicas(anyop_controlplane, source, anyop_namespace, *more)
    by_identity = {identity_of(operator): operator for operator in operators}
    try:
        leader_id = wait_for_holder(http, anyop_namespace, set(by_identity))
        leader = by_identity.pop(leader_id)
        [(standby_id, standby)] = by_identity.items()
        for index in range(3):
            apply_kex(anyop_controlplane, anyop_namespace, f"kex-{index}")
        for index in range(3):
            status = wait_for_status(anyop_controlplane, anyop_namespace, f"kex-{index}")
            assert status["create_fn"] == {"pid": leader.pid}

        leader.send_signal(signal.SIGKILL)
        killed_at, killed_wall = time.monotonic(), time.time()
        apply_kex(anyop_controlplane, anyop_namespace, "kex-after")
        wait_for_holder(http, anyop_namespace, {standby_id})
        takeover = time.monotonic() - killed_at
        status = wait_for_status(anyop_controlplane, anyop_namespace, "kex-after")
        assert status["create_fn"] == {"pid": standby.pid}
    finally:
        outputs = stop(*operators)
    # The standby waits out the lease duration (3 s) after it last saw the Lease renewed (at
    # most one retry period, 0.5 s, before the kill); the rest is polling and load.
    print(f"takeover after SIGKILL: {takeover:.2f} s")  # shown with -s
    assert takeover < 3 + 0.5 + 1.5, takeover
    all_runs = runs(ledger, {leader.pid: killed_wall})
    assert {pid for _, _, pid, _ in all_runs} == {leader.pid, standby.pid}
    assert_never_concurrent(all_runs)
    standby_lines = outputs[operators.index(standby)].splitlines()
    became = next(i for i, line in enumerate(standby_lines) if "Became the leader of" in line)
    watching = [i for i, line in enumerate(standby_lines) if "Watching kopfexamples" in line]
    # A warm standby watched (and listed) once, before the takeover; a cold one lists after it.
    assert len(watching) == 1, standby_lines
    assert (watching[0] < became) is warm, standby_lines


def test_a_leader_that_exits_gracefully_hands_over_at_once(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    ledger: Path,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANYOP_LEADERSHIP__LEASE_DURATION", "20")
    monkeypatch.setenv("ANYOP_LEADERSHIP__RENEW_DEADLINE", "15")
    source = ledger.parent / "ledger_operator.py"
    operators = replicas(anyop_controlplane, source, anyop_namespace)
    by_identity = {identity_of(operator): operator for operator in operators}
    try:
        leader_id = wait_for_holder(http, anyop_namespace, set(by_identity))
        leader = by_identity.pop(leader_id)
        [(standby_id, standby)] = by_identity.items()
        apply_kex(anyop_controlplane, anyop_namespace, "kex-1")
        assert wait_for_status(anyop_controlplane, anyop_namespace, "kex-1")["create_fn"] == {
            "pid": leader.pid
        }
        [leader_output] = stop(leader)
        exited_at = time.monotonic()
        wait_for_holder(http, anyop_namespace, {standby_id})
        takeover = time.monotonic() - exited_at
        apply_kex(anyop_controlplane, anyop_namespace, "kex-2")
        assert wait_for_status(anyop_controlplane, anyop_namespace, "kex-2")["create_fn"] == {
            "pid": standby.pid
        }
    finally:
        stop(*operators)
    assert leader.returncode == 0, leader_output
    assert f"Released the Lease {anyop_namespace}/{LEASE}." in leader_output
    print(f"takeover after a graceful exit: {takeover:.2f} s")  # shown with -s
    assert takeover < 3, f"{takeover} s, while the lease duration is 20 s"
    assert_never_concurrent(runs(ledger, {}))


def test_conflicting_lease_timings_are_a_clear_error(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    ledger: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANYOP_LEADERSHIP__RENEW_DEADLINE", "5")
    source = ledger.parent / "ledger_operator.py"
    options = ["--leader-election", "--lease-namespace", anyop_namespace]
    operator = start_operator(anyop_controlplane, str(source), anyop_namespace, "asyncio", *options)
    output = operator.communicate(timeout=60)[0]
    assert operator.returncode == 1, output
    assert "renew_deadline (5.0) must be below lease_duration (3)" in output
    assert not os.path.getsize(ledger)


FENCED_OPERATOR = """
import anyio
import anyop

@anyop.daemon("kopfexamples", id="worker")
async def worker(name, logger, **_):
    logger.info(f"DAEMON STARTED {name}")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        logger.info(f"DAEMON CANCELLED {name}")
        raise
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_leader_that_cannot_renew_stops_its_work_by_the_renew_deadline(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    ledger: Path,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    source = ledger.parent / "fenced_operator.py"
    source.write_text(FENCED_OPERATOR)
    options = ["--leader-election", "--lease-name", LEASE, "--lease-namespace", ns]
    operator = LiveOperator(plane, str(source), ns, backend, *options)
    try:
        operator.wait_for(f"Became the leader of {ns}/{LEASE}")
        apply_kex(plane, ns, "kex-1")
        operator.wait_for(f"[{ns}/kex-1] DAEMON STARTED kex-1")
        plane.pause_apiserver()
        paused_at = time.monotonic()
        try:
            operator.wait_for(f"[{ns}/kex-1] DAEMON CANCELLED kex-1", timeout=10)
            fenced = time.monotonic() - paused_at
            operator.wait_for(f"Lost the leadership of {ns}/{LEASE}", timeout=10)
        finally:
            plane.resume_apiserver()
        operator.wait_for(f"Became the leader of {ns}/{LEASE}", times=2)
        operator.wait_for(f"[{ns}/kex-1] DAEMON STARTED kex-1", times=2)
    finally:
        output = operator.stop()
    print(f"work stopped {fenced:.2f} s after the API server froze")  # shown with -s
    # The last renewal started before the freeze, so the work stops at most 2 s (renew_deadline)
    # after it, before any standby could take the Lease (3 s, lease_duration, after that).
    assert fenced < 3, output
