"""The sharding model's schedules (``tests/shard_model.py``) with real processes on the real
control plane: each replica is `anyop run --shards auto` (its identity the schedule's name, so
that a restart under the same identity takes its old Lease over); a leave is SIGTERM, a kill
SIGKILL, a stall SIGSTOP and SIGCONT after its seconds; objects are created as scheduled. The
API faults and conflicts of the model are not played here (the API server is the real one).

The create handler notes its begin and its end (or its cancellation) in a ledger. Every object
is handled to its end exactly once, and no two replicas run one object's handler at once (a
handler cancelled after a stall is counted as stopped when its process was stopped: it ran
nothing in between; a killed one's as stopped at the kill, or at its stall's start if the kill
came while its process was stopped). A handler whose process was stopped in the middle of its
step and that ends right after the thaw is counted apart (and printed): its step finished
before the fence's cancellation reached it, which no Lease can prevent.

The replicas run on the two backends in turn (the first one named on asyncio, the second on
Trio, ...; a restart keeps its replica's backend): one schedule covers both. One seed, rotating
every minute; ``ANYOP_SHARD_E2E_SEEDS=<first>-<last>`` plays those instead.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench.shard_cold_start import backend_of
from tests.shard_model import SETTINGS, Event, schedule

from anyop.sharding import GROUP_LABEL
from anyop.testing.controlplane import LocalControlPlane

GROUP = "model-shards"
KEX = "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"

OPERATOR = """
import json, os, random, time
import anyio
import anyop

LEDGER = os.environ["ANYOP_TEST_LEDGER"]

def note(what, name):
    with open(LEDGER, "a") as ledger:
        ledger.write(json.dumps({"pid": os.getpid(), "what": what, "name": name,
                                 "t": time.time()}) + "\\n")

@anyop.on.create("kopfexamples")
async def create_fn(name, **_):
    note("begin", name)
    ended = False
    try:
        await anyio.sleep(random.uniform(0.01, 1.5))
        ended = True
    finally:
        note("end" if ended else "cancel", name)
"""


def chosen_seeds() -> range:
    """``ANYOP_SHARD_E2E_SEEDS`` or this minute's seed."""
    chosen = os.environ.get("ANYOP_SHARD_E2E_SEEDS", "")
    if chosen:
        first, _, last = chosen.partition("-")
        return range(int(first), int(last or first) + 1)
    seed = 500_000 + int(time.time()) // 60 % 100_000
    return range(seed, seed + 1)


class Cluster:
    """The replicas' processes and the objects, as the schedule plays out."""

    def __init__(self, plane: LocalControlPlane, namespace: str, work: Path, seed: int) -> None:
        self.plane, self.namespace, self.work = plane, namespace, work
        self.backends: dict[str, str] = {}  # replica: its backend, in turn as they first start
        self.seed = seed
        self.source = work / "model_operator.py"
        self.source.write_text(OPERATOR)
        self.ledger = work / f"ledger-{namespace}.jsonl"
        self.ledger.touch()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.every: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.stopped: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
        self.killed: dict[int, float] = {}
        self.frozen: dict[int, float] = {}  # pid: when its (last) stall ends, monotonic
        self.objects = 0
        self.names: dict[int, str] = {}  # pid: the replica it was
        self.t0 = time.time()  # when the schedule began to play
        self.api = httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30)

    def start(self, name: str) -> None:
        env = {
            **os.environ,
            "KUBECONFIG": str(self.plane.kubeconfig),
            "ANYOP_TEST_LEDGER": str(self.ledger),
            "ANYOP_SHARDING__IDENTITY": name,
            "ANYOP_SHARDING__LEASE_DURATION": str(SETTINGS.lease_duration),
            "ANYOP_SHARDING__RENEW_DEADLINE": str(SETTINGS.renew_deadline),
            "ANYOP_SHARDING__RETRY_PERIOD": str(SETTINGS.retry_period),
        }
        cmd = [sys.executable, "-m", "anyop", "run", str(self.source), "--shards", "auto",
               "--lease-name", GROUP, "--lease-namespace", self.namespace, "-n", self.namespace,
               "--backend", self.backend_of(name), "--standalone",
               "--log-format", "full"]  # fmt: skip
        log = self.work / f"{name}-{time.monotonic_ns()}.log"
        with log.open("w") as out:
            process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.names[process.pid] = name
        old = self.processes.get(name)
        if old is not None and old.poll() is None:
            self.kill(name)  # a leftover of a leave still on its way: the pod is replaced
        self.processes[name] = process
        self.every.append((process, log))

    def backend_of(self, name: str) -> str:
        """The backend of replica ``name``: asyncio and Trio in turn, as replicas first start."""
        return self.backends.setdefault(name, backend_of("mixed", len(self.backends)))

    def leave(self, name: str) -> None:
        process = self.processes.get(name)
        if process is not None and process.poll() is None:
            self.thaw(name, process.pid, due=False)  # a stalled one gets the signal at its thaw
            process.send_signal(signal.SIGTERM)

    def kill(self, name: str) -> None:
        process = self.processes.get(name)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            self.killed[process.pid] = time.time()

    def stall(self, name: str, seconds: float, until: float | None = None) -> float | None:
        """SIGSTOP until ``until`` (monotonic; ``seconds`` from now if not given); a process
        stopped already stays stopped until the later of its thaws."""
        process = self.processes.get(name)
        if process is None or process.poll() is not None:
            return None
        until = time.monotonic() + seconds if until is None else until
        if self.frozen.get(process.pid, 0.0) > time.monotonic():  # stopped already: for longer
            self.frozen[process.pid] = max(self.frozen[process.pid], until)
            return seconds
        self.frozen[process.pid] = until
        process.send_signal(signal.SIGSTOP)
        self.stopped[process.pid].append((time.time(), float("inf")))
        return seconds

    def thaw(self, name: str, pid: int, *, due: bool = True) -> None:
        """Continue the process (``due``: its stall's time is up; a later stall may hold it)."""
        if due and self.frozen.get(pid, 0.0) > time.monotonic() + 0.001:
            return
        self.frozen.pop(pid, None)
        thawed = time.time()  # before the signal: the process may note something at once
        process = self.processes.get(name)
        if process is not None and process.pid == pid and process.poll() is None:
            process.send_signal(signal.SIGCONT)
        spans = self.stopped[pid]
        if spans and spans[-1][1] == float("inf"):
            spans[-1] = (spans[-1][0], thawed)

    def create(self, count: int) -> None:
        path = KEX.format(namespace=self.namespace)
        for _ in range(count):
            body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                    "metadata": {"name": f"kex-{self.seed}-{self.objects:04d}"}}  # fmt: skip
            self.api.post(path, json=body).raise_for_status()
            self.objects += 1

    def entries(self) -> list[dict[str, Any]]:
        text = self.ledger.read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def clean(self) -> None:
        """Delete the objects and the Leases: the next seed starts from nothing."""
        self.api.delete(KEX.format(namespace=self.namespace))
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        self.api.delete(path, params={"labelSelector": f"{GROUP_LABEL}={GROUP}"})

    def stop_all(self) -> None:
        for process, _ in self.every:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
        for process, _ in self.every:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def play(cluster: Cluster, events: tuple[Event, ...]) -> None:
    """The schedule in real time (thaws are due events of their own)."""
    started = time.monotonic()
    cluster.t0 = time.time()
    due: list[tuple[float, int, str, Any]] = [
        (e.at, index, e.kind, e) for index, e in enumerate(events)
    ]
    while due:
        due.sort(key=lambda item: (item[0], item[1]))
        at, index, kind, payload = due.pop(0)
        time.sleep(max(0.0, started + at - time.monotonic()))
        if kind == "thaw":
            cluster.thaw(*payload)
        elif kind == "create":
            cluster.create(int(payload.value))
        elif kind == "start":
            cluster.start(payload.who)
        elif kind == "leave":
            cluster.leave(payload.who)
        elif kind == "kill":
            cluster.kill(payload.who)
        elif kind == "stall":
            process = cluster.processes.get(payload.who)
            until = started + at + payload.value
            if cluster.stall(payload.who, payload.value, until) is not None and process:
                due.append((at + payload.value, index, "thaw", (payload.who, process.pid)))


def spans(
    entries: list[dict[str, Any]], cluster: Cluster
) -> dict[str, list[tuple[float, float, int]]]:
    """Per object, when each run of its handler ran: from its begin to its end; a cancelled one
    to the stop of its process if it was cancelled right after a thaw; a killed one's to the
    kill, or to its process's stop if the kill came during a stall; one still open (a graceful
    exit cancelled it unnoted) to its process's exit."""
    runs: dict[str, list[tuple[float, float, int]]] = collections.defaultdict(list)
    open_: dict[tuple[str, int], float] = {}
    for entry in entries:
        key = (entry["name"], entry["pid"])
        if entry["what"] == "begin":
            open_[key] = entry["t"]
        elif key in open_:
            began, ended = open_.pop(key), entry["t"]
            if entry["what"] in ("cancel", "end"):  # an end right after a thaw: see above
                for stop, cont in cluster.stopped.get(entry["pid"], []):
                    if began < cont <= ended <= cont + 2.0:
                        ended = max(began, stop)
            runs[entry["name"]].append((began, ended, entry["pid"]))
    for (name, pid), began in open_.items():
        ended = cluster.killed.get(pid, time.time())
        for stop, cont in cluster.stopped.get(pid, []):
            if stop <= ended <= cont:  # killed while stopped: it ran nothing after the stop
                ended = max(began, stop)
        runs[name].append((began, ended, pid))
    return runs


def explain(name: str, entries: list[dict[str, Any]], cluster: Cluster) -> str:
    """What the ledger says of one object, and what the test did to the processes that ran it,
    in seconds since the schedule began (to read beside the replicas' logs in ``tmp_path``)."""
    pids = {e["pid"] for e in entries if e["name"] == name}
    lines = [f"{e['t'] - cluster.t0:9.3f} {cluster.names.get(e['pid'], '?')} pid {e['pid']}: "
             f"{e['what']}" for e in entries if e["name"] == name]  # fmt: skip
    for pid in sorted(pids):
        who = f"{cluster.names.get(pid, '?')} pid {pid}"
        lines += [f"{stop - cluster.t0:9.3f} {who}: stopped until {cont - cluster.t0:.3f}"
                  for stop, cont in cluster.stopped.get(pid, [])]  # fmt: skip
        if pid in cluster.killed:
            lines.append(f"{cluster.killed[pid] - cluster.t0:9.3f} {who}: killed")
    return "\n".join(sorted(lines))


def resumed_after_a_stall(entries: list[dict[str, Any]], cluster: Cluster) -> set[int]:
    """The ends (by ``id``) of handlers that were running when their process was stopped and
    ended within 2 s of its thaw: a step already running finishes before the fence's
    cancellation reaches it (AnyIO on asyncio delivers it at the next wait). No Lease-based
    fence can stop that without the API server's help (see docs/sharding.md)."""
    began: dict[tuple[str, int], float] = {}
    found: set[int] = set()
    for entry in entries:
        key = (entry["name"], entry["pid"])
        if entry["what"] == "begin":
            began[key] = entry["t"]
        elif entry["what"] == "end" and key in began:
            start = began.pop(key)
            for stop, cont in cluster.stopped.get(entry["pid"], []):
                if start < stop and cont <= entry["t"] <= cont + 2.0:
                    found.add(id(entry))
    return found


def test_model_schedules_with_real_replicas_handle_every_object_once(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    for seed in chosen_seeds():
        plan = schedule(seed)
        print(f"[shard model e2e] seed {seed}")
        work = tmp_path / str(seed)
        work.mkdir()
        cluster = Cluster(anyop_controlplane, anyop_namespace, work, seed)
        try:
            play(cluster, plan.events)
            deadline = time.monotonic() + 120
            while True:
                ended = {e["name"] for e in cluster.entries() if e["what"] == "end"}
                if len(ended) >= cluster.objects:
                    break
                assert time.monotonic() < deadline, f"seed {seed}: {len(ended)} ended\n" + (
                    plan.describe()
                )
                time.sleep(0.5)
            time.sleep(2 * SETTINGS.lease_duration)  # late duplicates would show by then
        finally:
            cluster.stop_all()
            cluster.clean()
            cluster.api.close()
        found = cluster.entries()
        resumed = resumed_after_a_stall(found, cluster)
        print(f"[shard model e2e] seed {seed} ({cluster.backends}): {len(resumed)} handlers "
              f"finished their step right after a thaw")  # fmt: skip
        ends = collections.Counter(
            e["name"] for e in found if e["what"] == "end" and id(e) not in resumed
        )
        twice = {name: count for name, count in ends.items() if count > 1}
        stories = "\n".join(explain(name, found, cluster) for name in twice)
        assert not twice, f"seed {seed}: handled twice: {twice}\n{stories}\n{plan.describe()}"
        handled = {e["name"] for e in found if e["what"] == "end"}  # a thawed step's end counts
        assert len(handled) == cluster.objects, f"seed {seed}\n{plan.describe()}"
        for name, runs in spans(found, cluster).items():
            runs.sort()
            for (_, end, pid), (start, _, other) in itertools.pairwise(runs):
                if end > start:
                    where = f"seed {seed}: {name} ran on {pid} and {other} at once"
                    story = explain(name, found, cluster)
                    pytest.fail(f"{where}\n{story}\nlogs in {work}\n{plan.describe()}")
