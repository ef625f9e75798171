"""Active-active sharding (`anyop run --shards auto`) on the real control plane.

Replicas of one operator share 1,500 objects (``ANYOP_TEST_SHARD_OBJECTS`` sets more): each
object is created-handled exactly once, each replica handles 25-42 % of them; a fourth replica
takes about a quarter; a replica killed with SIGKILL has its objects taken over within its Lease
duration plus 5 s; and the daemon that every object has never runs on two replicas at once.

Both backends in one run: each test's replicas alternate between them (asyncio, Trio, asyncio,
...), as a fleet does while it moves from one to the other, so that either one hands objects
over to the other.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.shard_cold_start import backend_of

from anyop.sharding import GROUP_LABEL
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.e2e

OBJECTS = int(os.environ.get("ANYOP_TEST_SHARD_OBJECTS", "1500"))
GROUP = "kex-shards"
LEASE_DURATION = 4
LOADED_MACHINE = 6
"""Seconds a takeover may take beyond its promise while other test runs load the machine."""
KEX = "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"

SHARDED_OPERATOR = """
import json, os, time
import anyop

LEDGER = os.environ["ANYOP_TEST_LEDGER"]

def note(what, name):
    with open(LEDGER, "a") as ledger:
        ledger.write(json.dumps({"pid": os.getpid(), "what": what, "name": name,
                                 "t": time.time()}) + "\\n")

@anyop.on.create("kopfexamples")
async def create_fn(name, **_):
    note("create", name)

@anyop.index("kopfexamples")
def everything(name, **_):
    return name

@anyop.on.probe(id="indexed")
def indexed(everything, **_):
    return len(everything.get(None, []))

@anyop.daemon("kopfexamples", cancellation_backoff=5)
async def keeper(name, stopped, **_):
    note("start", name)
    try:
        await stopped.wait()
    finally:
        note("stop", name)
"""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The operator source and its ledger; short Lease timings (4 s / 3 s / 0.5 s)."""
    path = tmp_path / "ledger.jsonl"
    path.touch()
    monkeypatch.setenv("ANYOP_TEST_LEDGER", str(path))
    monkeypatch.setenv("ANYOP_SHARDING__LEASE_DURATION", str(LEASE_DURATION))
    monkeypatch.setenv("ANYOP_SHARDING__RENEW_DEADLINE", "3")
    monkeypatch.setenv("ANYOP_SHARDING__RETRY_PERIOD", "0.5")
    (tmp_path / "sharded_operator.py").write_text(SHARDED_OPERATOR)
    return path


@pytest.fixture
def http(anyop_controlplane: LocalControlPlane) -> Iterator[httpx.Client]:
    """A sync admin client."""
    ctx = anyop_controlplane.ssl_context()
    with httpx.Client(base_url=anyop_controlplane.server, verify=ctx, timeout=30) as client:
        yield client


class Replica:
    """`anyop run --shards auto` in a child process, its output in a file (never a full pipe)."""

    def __init__(
        self, plane: LocalControlPlane, source: Path, namespace: str, backend: str, *more: str
    ):
        self.log = source.parent / f"replica-{time.monotonic_ns()}.log"
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
        cmd = [sys.executable, "-m", "anyop", "run", str(source), "--shards", "auto",
               "--lease-name", GROUP, "--lease-namespace", namespace, "-n", namespace,
               "--backend", backend, "--log-format", "plain", *more]  # fmt: skip
        with self.log.open("w") as out:
            self.process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.pid = self.process.pid

    def wait_for(self, text: str, timeout: float = 30) -> None:
        """Wait until the replica has logged ``text``."""
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text():
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no {text!r} in {self.log.read_text()[-3000:]}"
            time.sleep(0.1)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=90)
        return self.log.read_text()


def leases(http: httpx.Client, namespace: str) -> list[dict[str, Any]]:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    response = http.get(path, params={"labelSelector": f"{GROUP_LABEL}={GROUP}"})
    response.raise_for_status()
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def wait_settled(http: httpx.Client, namespace: str, members: int, timeout: float = 60) -> None:
    """Wait until ``members`` Leases exist and all acknowledge the same view."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = leases(http, namespace)
        acks = {(i["metadata"].get("annotations") or {}).get("anyop.dev/shard-view") for i in found}
        if len(found) == members and len(acks) == 1 and None not in acks:
            time.sleep(1.5)  # the members activate the view at their next step
            return
        time.sleep(0.2)
    raise AssertionError(f"the group did not settle with {members} members: {found}")


def filtered_events(http: httpx.Client) -> float:
    """How many events of KopfExamples the API server has kept from watches by their shard
    selectors (kube-apiserver's ``apiserver_watch_filtered_events_total`` counter)."""
    text = http.get("/metrics").raise_for_status().text
    wanted = 'apiserver_watch_filtered_events_total{group="kopf.dev",resource="kopfexamples"}'
    found = [line.split()[-1] for line in text.splitlines() if line.startswith(wanted)]
    return float(found[0]) if found else 0.0


def create_objects(http: httpx.Client, namespace: str, count: int) -> None:
    path = KEX.format(namespace=namespace)
    for index in range(count):
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                "metadata": {"name": f"kex-{index:05d}"}, "spec": {"index": index}}  # fmt: skip
        http.post(path, json=body).raise_for_status()


def entries(ledger: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]


def wait_for(ledger: Path, what: str, check: Any, timeout: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = entries(ledger)
        if check(found):
            return found
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def created(found: list[dict[str, Any]]) -> collections.Counter[str]:
    """How often each object's creation was handled."""
    return collections.Counter(e["name"] for e in found if e["what"] == "create")


def running_daemons(found: list[dict[str, Any]], dead: set[int]) -> dict[str, int]:
    """Where each object's daemon runs now: name → pid (the killed ones' daemons are not)."""
    where: dict[str, int] = {}
    for entry in found:
        if entry["what"] == "start":
            where[entry["name"]] = entry["pid"]
        elif entry["what"] == "stop" and where.get(entry["name"]) == entry["pid"]:
            del where[entry["name"]]
    return {name: pid for name, pid in where.items() if pid not in dead}


def assert_daemons_never_overlap(found: list[dict[str, Any]], killed: dict[int, float]) -> None:
    """No object's daemon ran in two replicas at once (a killed one's ran until the kill)."""
    spans: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)
    open_: dict[tuple[str, int], float] = {}
    for entry in found:
        key = (entry["name"], entry["pid"])
        if entry["what"] == "start":
            open_[key] = entry["t"]
        elif entry["what"] == "stop" and key in open_:
            spans[entry["name"]].append((open_.pop(key), entry["t"], entry["pid"]))
    for (name, pid), start in open_.items():
        spans[name].append((start, killed.get(pid, time.time()), pid))
    for name, runs in spans.items():
        runs.sort()
        for (_, end, pid), (start, _, other) in itertools.pairwise(runs):
            assert end <= start, f"{name}: the daemon ran on {pid} and {other} at once"


def strip_finalizers(http: httpx.Client, namespace: str) -> None:
    """Let the namespace go after the test (the operators are stopped by then)."""
    path = KEX.format(namespace=namespace)
    for item in http.get(path).json().get("items", []):
        if item["metadata"].get("finalizers"):
            patch = {"metadata": {"finalizers": None}}
            headers = {"Content-Type": "application/merge-patch+json"}
            http.patch(f"{path}/{item['metadata']['name']}", json=patch, headers=headers)


def test_replicas_share_objects_hand_them_over_and_never_run_a_daemon_twice(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    ledger: Path,
    http: httpx.Client,
) -> None:
    source = ledger.parent / "sharded_operator.py"
    replicas = [
        Replica(anyop_controlplane, source, anyop_namespace, backend_of("mixed", i))
        for i in range(3)
    ]
    killed: dict[int, float] = {}
    outputs: list[str] = []
    try:
        wait_settled(http, anyop_namespace, 3)
        create_objects(http, anyop_namespace, OBJECTS)

        # Three replicas: every object created-handled once, each replica 25-42 % of them.
        found = wait_for(
            ledger,
            "every object handled with its daemon running",
            lambda f: len(running_daemons(f, set())) == OBJECTS == len(created(f)),
            timeout=240,
        )
        assert set(created(found).values()) == {1}
        shares = collections.Counter(e["pid"] for e in found if e["what"] == "create")
        assert set(shares) == {r.pid for r in replicas}
        for pid, count in shares.items():
            assert 0.25 * OBJECTS <= count <= 0.42 * OBJECTS, (pid, shares)

        # A fourth replica: about a quarter moves to it, each daemon stopped before it starts.
        fourth = Replica(anyop_controlplane, source, anyop_namespace, backend_of("mixed", 3))
        replicas.append(fourth)
        wait_settled(http, anyop_namespace, 4)
        found = wait_for(
            ledger,
            "a quarter of the daemons moved to the fourth replica",
            lambda f: (
                len(where := running_daemons(f, set())) == OBJECTS
                and sum(1 for pid in where.values() if pid == fourth.pid) > 0.18 * OBJECTS
            ),
            timeout=120,
        )
        moved = sum(1 for pid in running_daemons(found, set()).values() if pid == fourth.pid)
        assert 0.18 * OBJECTS <= moved <= 0.32 * OBJECTS, moved

        # SIGKILL one: its objects run elsewhere within its Lease duration plus 5 s.
        victim = replicas[0]
        victims_objects = {n for n, p in running_daemons(found, set()).items() if p == victim.pid}
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        killed[victim.pid] = killed_at = time.time()
        found = wait_for(
            ledger,
            "the killed replica's objects taken over",
            lambda f: len(running_daemons(f, {victim.pid})) == OBJECTS,
            timeout=LEASE_DURATION + 60,
        )
        restarts = [e["t"] for e in found if e["what"] == "start" and e["name"] in victims_objects]
        takeover = max(restarts) - killed_at
        print(f"{len(victims_objects)} objects taken over {takeover:.1f} s after SIGKILL")
        # The promise is the Lease's duration plus 5 s on a quiet machine; the suite's runs side
        # by side share its 2 cores with the 4 replicas here (12.6 s seen under a load of 16).
        assert takeover <= LEASE_DURATION + 5 + LOADED_MACHINE, takeover
    finally:
        outputs = [replica.stop() for replica in replicas]
        strip_finalizers(http, anyop_namespace)

    found = entries(ledger)
    assert set(created(found).values()) == {1}, "an object was created-handled twice"
    assert_daemons_never_overlap(found, killed)
    for replica, output in zip(replicas, outputs, strict=True):
        if replica.pid not in killed:
            assert replica.process.returncode == 0, output[-3000:]
            assert "Traceback" not in output, output[-3000:]
    assert leases(http, anyop_namespace) == [] or all(
        i["spec"]["holderIdentity"].endswith(str(victim.pid)) for i in leases(http, anyop_namespace)
    )


@pytest.fixture
def peering(anyop_controlplane: LocalControlPlane, anyop_namespace: str, peering_crds: None) -> str:
    """The `default` AnyopPeering of the test's namespace."""
    from anyop.testing.pytest_plugin import kubectl

    body = {"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "default"}}
    kubectl(anyop_controlplane, "apply", "-n", anyop_namespace, "-f", "-", stdin=json.dumps(body))
    return "default"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def metric(text: str, name: str) -> float:
    return float(next(line for line in text.splitlines() if line.startswith(name + " ")).split()[1])


def test_sharded_replicas_peer_without_conflict_freeze_together_and_report_their_share(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering: str,
    ledger: Path,
    http: httpx.Client,
) -> None:
    plane, ns, count = anyop_controlplane, anyop_namespace, 40
    source = ledger.parent / "sharded_operator.py"
    port = free_port()
    metrics_port = free_port()
    scraped = ("--metrics", f"http://127.0.0.1:{metrics_port}/metrics", "--metrics-insecure")
    probes = ("-L", f"http://127.0.0.1:{port}/h")
    first = Replica(plane, source, ns, backend_of("mixed", 0), "-P", peering, *probes, *scraped)
    second = Replica(plane, source, ns, backend_of("mixed", 1), "-P", peering)
    replicas = [first, second]
    try:
        wait_settled(http, ns, 2)
        create_objects(http, ns, count)
        found = wait_for(
            ledger,
            "every object handled",
            lambda f: len(running_daemons(f, set())) == count == len(created(f)),
            timeout=60,
        )
        mine = sum(1 for pid in running_daemons(found, set()).values() if pid == first.pid)
        metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert metric(metrics, "anyop_shard_members") == 2
        assert metric(metrics, "anyop_shard_objects") == mine
        assert 0 < mine < count
        # Indexes are complete on every replica (a handler may look up any object); probes work.
        probes = httpx.get(f"http://127.0.0.1:{port}/h").json()
        assert probes["indexed"] == count

        # `anyop freeze` pauses every replica: they let go of all objects; nothing new is handled.
        cli = [sys.executable, "-m", "anyop", "freeze", "-P", peering, "-n", ns, "-t", "60"]
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
        subprocess.run(cli, env=env, check=True, capture_output=True, timeout=60)
        for replica in replicas:
            replica.wait_for("Pausing operations in favour of")
        wait_for(ledger, "all daemons stopped", lambda f: not running_daemons(f, set()), 30)
        late = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "late"}}
        http.post(KEX.format(namespace=ns), json=late).raise_for_status()
        time.sleep(2)
        assert "late" not in created(entries(ledger))

        cli[3:] = ["resume", "-P", peering, "-n", ns]
        subprocess.run(cli, env=env, check=True, capture_output=True, timeout=60)
        wait_for(
            ledger,
            "every object handled again after the thaw",
            lambda f: len(running_daemons(f, set())) == count + 1 == len(created(f)),
            timeout=60,
        )
    finally:
        outputs = [replica.stop() for replica in replicas]
        strip_finalizers(http, ns)
    found = entries(ledger)
    assert set(created(found).values()) == {1}
    assert_daemons_never_overlap(found, {})
    for replica, output in zip(replicas, outputs, strict=True):
        assert replica.process.returncode == 0, output[-3000:]
        assert "Possibly conflicting operators" not in output, output[-3000:]


RECONCILING_OPERATOR = """
import json, os, time
import anyio
import anyop

LEDGER = os.environ["ANYOP_TEST_LEDGER"]

def note(what, name, t):
    with open(LEDGER, "a") as ledger:
        ledger.write(json.dumps({"pid": os.getpid(), "what": what, "name": name, "t": t}) + "\\n")

@anyop.reconcile("kopfexamples", owns=["configmaps"], labels={"shard-test": "yes"})
async def keep(name, children, api, **_):
    started = time.time()
    await anyio.sleep(0.05)
    if not children["configmaps"]:
        await api.create("configmaps", {"metadata": {"name": f"{name}-child"}, "data": {}})
    note("call", name, [started, time.time()])
"""


def test_sharded_reconcilers_call_each_object_on_one_replica_at_a_time(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    ledger: Path,
    http: httpx.Client,
) -> None:
    plane, ns, count = anyop_controlplane, anyop_namespace, 30
    source = ledger.parent / "reconciling_operator.py"
    source.write_text(RECONCILING_OPERATOR)
    replicas = [Replica(plane, source, ns, backend_of("mixed", i)) for i in range(2)]
    cms = f"/api/v1/namespaces/{ns}/configmaps"

    def children() -> list[str]:
        items = http.get(cms, params={"labelSelector": "shard-test=yes"}).json()["items"]
        return sorted(item["metadata"]["name"] for item in items)

    def called(found: list[dict[str, Any]]) -> dict[str, set[int]]:
        by_name: dict[str, set[int]] = collections.defaultdict(set)
        for entry in found:
            by_name[entry["name"]].add(entry["pid"])
        return by_name

    try:
        wait_settled(http, ns, 2)
        filtered = filtered_events(http)
        create_objects(http, ns, count)
        wait_for(ledger, "every object reconciled", lambda f: len(called(f)) == count, 60)
        assert children() == sorted(f"kex-{i:05d}-child" for i in range(count))
        # Each replica asked for its own objects only: the others' events were kept from it
        # (an ADDED of each object from one of the two, but for a replica still relisting
        # with its first selector when the first objects came).
        assert filtered_events(http) - filtered >= count // 2
        first = called(entries(ledger))
        assert all(len(pids) == 1 for pids in first.values())  # one replica per object
        assert {pid for pids in first.values() for pid in pids} == {r.pid for r in replicas}

        # A third replica: some objects move; each is reconciled there at start, once the
        # others let go of it; a child deleted by hand is put back by its new owner.
        third = Replica(plane, source, ns, backend_of("mixed", 2))
        replicas.append(third)
        wait_settled(http, ns, 3)
        moved = wait_for(
            ledger,
            "objects reconciled on the third replica",
            lambda f: any(e["pid"] == third.pid for e in f),
            30,
        )
        theirs = sorted({e["name"] for e in moved if e["pid"] == third.pid})
        http.delete(f"{cms}/{theirs[0]}-child").raise_for_status()
        wait_for(ledger, "the child put back", lambda f: f"{theirs[0]}-child" in children(), 30)
        time.sleep(1)
    finally:
        outputs = [replica.stop() for replica in replicas]
    assert children() == sorted(f"kex-{i:05d}-child" for i in range(count))  # no duplicates
    calls: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)
    for entry in entries(ledger):
        calls[entry["name"]].append((*entry["t"], entry["pid"]))
    for name, spans in calls.items():
        spans.sort()
        for (_, end, pid), (start, _, other) in itertools.pairwise(spans):
            assert pid == other or end <= start, f"{name}: reconciled on {pid} and {other} at once"
    for replica, output in zip(replicas, outputs, strict=True):
        assert replica.process.returncode == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
