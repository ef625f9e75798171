"""Sharding's cold start: replicas started at the same moment over a backlog handle each object
once.

``python -m bench.shard_cold_start [--objects 2000] [--replicas 3] [--runs 20]
[--backends asyncio trio mixed]``

Each run: a fresh namespace gets the backlog (4 threads) while no operator runs; then the
replicas (`anyop run --shards auto`, the default Lease timings) start in one go, as a Deployment
does on a rollout or after a cluster restart. The create handler appends "<name> <pid>" to a
ledger. Once every object is in the ledger and the group has settled (every member's Lease
acknowledges the same view), the bench waits two retry periods more for late duplicates and
stops the replicas. It reports per run the objects handled twice (must be 0), the replicas'
shares, the seconds from the start to the first object handled, and the seconds from each
replica's "Joining" to its "Serving" log line (its time to first service). The replicas and the
API server share this machine's CPUs. ``mixed`` starts the replicas on the two backends in turn
(asyncio, Trio, asyncio, ...), as a fleet is while it moves from one to the other.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from anyop.sharding import ACK_ANNOTATION, GROUP_LABEL
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
GROUP = "cold-shards"
KEX = "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"

OPERATOR = """
import os
import anyop

LEDGER = os.environ["ANYOP_BENCH_LEDGER"]

@anyop.on.create("kopfexamples")
async def create_fn(name, **_):
    with open(LEDGER, "a") as ledger:
        ledger.write(f"{name} {os.getpid()}\\n")
"""

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+)\]")


@dataclasses.dataclass
class Outcome:
    """One run's result.

    Attributes:
        objects: The backlog.
        handled: Distinct objects in the ledger.
        twice: Objects handled more than once.
        across: Of those, the ones handled by more than one replica (the others were handled
            again by the same replica: a handler cut off by its fence before its outcome was
            written, when a renewal did not land in time, runs again).
        lapses: "not renewed within" warnings in the replicas' logs.
        shares: Objects handled per replica (pid).
        first: Seconds from the start of the replicas to the first object handled.
        to_serve: Per replica, seconds from its "Joining" to its first "Serving" log line.
        alone: Replicas that served as the group's only member first (their start-up ended
            before the others joined: it may handle the whole backlog meanwhile).
        late: Replicas whose first "Serving" came after every object was handled (the others'
            start-up ended so much sooner that nothing was left for them).
        notes: The replicas' sharding log lines, when an object was handled twice.
    """

    objects: int
    handled: int
    twice: int
    across: int
    lapses: int
    shares: list[int]
    first: float
    to_serve: list[float]
    alone: int = 0
    late: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Every object handled, none twice."""
        return self.handled == self.objects and self.twice == 0


def settled(client: httpx.Client, namespace: str, members: int) -> bool:
    """Whether ``members`` Leases exist and all acknowledge the same view."""
    url = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    items = client.get(url, params={"labelSelector": f"{GROUP_LABEL}={GROUP}"}).json()["items"]
    acks = {(i["metadata"].get("annotations") or {}).get(ACK_ANNOTATION) for i in items}
    return len(items) == members and len(acks) == 1 and None not in acks


def create(client: httpx.Client, namespace: str, names: list[str]) -> None:
    """Create these objects."""
    url = KEX.format(namespace=namespace)
    for name in names:
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                "metadata": {"name": name}, "spec": {"field": name}}  # fmt: skip
        client.post(url, json=body).raise_for_status()


def backlog(plane: LocalControlPlane, namespace: str, count: int) -> None:
    """The objects, created in 4 threads."""
    names = [f"kex-{i:05d}" for i in range(count)]
    ctx = plane.ssl_context()
    clients = [httpx.Client(base_url=plane.server, verify=ctx, timeout=60) for _ in range(4)]
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(create, clients, [namespace] * 4, [names[i::4] for i in range(4)]))
    finally:
        for client in clients:
            client.close()


def ledger_lines(path: Path) -> list[tuple[str, str]]:
    """(name, pid) per handled creation."""
    return [tuple(line.split()[:2]) for line in path.read_text().splitlines() if line.strip()]  # type: ignore[misc]


def _stamp(line: str) -> float | None:
    found = STAMP.match(line)
    if found is None:
        return None
    text = found.group(1).replace(",", ".")
    return datetime.datetime.fromisoformat(text).timestamp()


def serving_since(log: str) -> float:
    """The time of the first "Serving" log line (``nan`` if missing)."""
    for line in log.splitlines():
        if "Serving " in line and "objects now as" in line:
            return _stamp(line) or float("nan")
    return float("nan")


def time_to_serve(log: str) -> float:
    """Seconds from the "Joining" log line to the first "Serving" one (``nan`` if missing)."""
    joined = serving = None
    for line in log.splitlines():
        if joined is None and "Joining the shard group" in line:
            joined = _stamp(line)
        elif serving is None and "Serving " in line and "objects now as" in line:
            serving = _stamp(line)
    return serving - joined if joined is not None and serving is not None else float("nan")


def backend_of(backend: str, replica: int) -> str:
    """The backend of replica number ``replica``: ``backend``, or for ``mixed`` each in turn."""
    return ("asyncio", "trio")[replica % 2] if backend == "mixed" else backend


def run(
    plane: LocalControlPlane, *, objects: int, replicas: int, backend: str, workdir: Path
) -> Outcome:
    """One cold start; see the module's docstring."""
    namespace = f"cold-{backend}-{time.time_ns() % 10**12}"
    with scratch_namespace(plane, namespace):
        backlog(plane, namespace, objects)
        source = workdir / "cold_operator.py"
        source.write_text(OPERATOR)
        ledger = workdir / f"{namespace}.ledger"
        ledger.touch()
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "ANYOP_BENCH_LEDGER": str(ledger)}
        cmd = [sys.executable, "-m", "anyop", "run", str(source), "-n", namespace,
               "--shards", "auto", "--lease-name", GROUP, "--lease-namespace", namespace,
               "--standalone", "--log-format", "full"]  # fmt: skip
        logs = [workdir / f"{namespace}-{index}.log" for index in range(replicas)]
        outs = [log.open("w") for log in logs]
        started = time.time()
        processes = [
            subprocess.Popen([*cmd, "--backend", backend_of(backend, index)], env=env, stdout=out,
                             stderr=subprocess.STDOUT)
            for index, out in enumerate(outs)
        ]  # fmt: skip
        first = done = float("nan")
        try:
            with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as api:
                deadline = time.monotonic() + 300
                while True:
                    names = {name for name, _ in ledger_lines(ledger)}
                    if names and first != first:  # nan: not yet
                        first = time.time() - started
                    if len(names) >= objects and done != done:
                        done = time.time()  # (a moment after the last one, at most 0.2 s)
                    if len(names) >= objects and settled(api, namespace, replicas):
                        break
                    for process, log in zip(processes, logs, strict=True):
                        if process.poll() is not None:
                            raise RuntimeError(f"a replica exited: {log.read_text()[-2000:]}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"only {len(names)} of {objects} handled within 300 s")
                    time.sleep(0.2)
                time.sleep(5)  # two retry periods more: a duplicate would show by then
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=90)
            for out in outs:
                out.close()
    found = ledger_lines(ledger)
    counts = collections.Counter(name for name, _ in found)
    shares = collections.Counter(pid for _, pid in found)
    twice = sum(1 for count in counts.values() if count > 1)
    pids: dict[str, set[str]] = collections.defaultdict(set)
    for name, pid in found:
        pids[name].add(pid)
    texts = [log.read_text() for log in logs]
    notes = [
        f"replica {index}: {line}"
        for index, log in enumerate(logs)
        for line in texts[index].splitlines()
        if twice and "anyop.sharding" in line
    ]
    return Outcome(
        objects=objects,
        handled=len(counts),
        twice=twice,
        across=sum(1 for who in pids.values() if len(who) > 1),
        lapses=sum(text.count("was not renewed within") for text in texts),
        shares=sorted(shares.values(), reverse=True),
        first=first,
        to_serve=[time_to_serve(text) for text in texts],
        alone=sum(1 for text in texts if "objects now as 1 of 1 members" in text),
        late=sum(1 for text in texts if serving_since(text) > done),
        notes=notes,
    )


def prepare(plane: LocalControlPlane) -> None:
    """The KopfExample CRD."""
    kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
    wait_for_crd(plane, "kopfexamples.kopf.dev")


def describe(index: int, backend: str, outcome: Outcome) -> str:
    """One line per run."""
    serve = ", ".join(f"{s:.2f}" for s in outcome.to_serve)
    return (
        f"{backend} run {index + 1}: {outcome.handled}/{outcome.objects} handled, "
        f"{outcome.twice} twice ({outcome.across} by two replicas), {outcome.lapses} lapses, "
        f"shares {outcome.shares}, first handled after "
        f"{outcome.first:.1f} s, Joining->Serving per replica {serve} s"
        + (f", {outcome.alone} served alone first" if outcome.alone else "")
        + (f", {outcome.late} began serving with nothing left" if outcome.late else "")
    )


def main() -> None:
    """Run the cold starts and print one line per run and a summary per backend."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["asyncio", "trio"],
                        choices=["asyncio", "trio", "mixed"])  # fmt: skip
    args = parser.parse_args()
    failed = 0
    with (
        LocalControlPlane(controllers=False, nodes=False) as plane,
        tempfile.TemporaryDirectory(prefix="anyop-cold-") as tmp,
    ):
        prepare(plane)
        print(f"{args.replicas} replicas started together over {args.objects} objects", flush=True)
        for backend in args.backends:
            outcomes = []
            for index in range(args.runs):
                outcome = run(
                    plane,
                    objects=args.objects,
                    replicas=args.replicas,
                    backend=backend,
                    workdir=Path(tmp),
                )
                outcomes.append(outcome)
                print(describe(index, backend, outcome), flush=True)
                for note in outcome.notes:
                    print(f"    {note}", flush=True)
            exact = sum(outcome.exact for outcome in outcomes)
            serve = sorted(s for outcome in outcomes for s in outcome.to_serve)
            print(
                f"{backend}: {exact}/{len(outcomes)} runs handled every object exactly once; "
                f"objects handled twice in all: {sum(o.twice for o in outcomes)} "
                f"({sum(o.across for o in outcomes)} by two replicas); "
                f"lapsed renewals: {sum(o.lapses for o in outcomes)}; "
                f"Joining->Serving median {serve[len(serve) // 2]:.2f} s, max {serve[-1]:.2f} s",
                flush=True,
            )
            failed += len(outcomes) - exact
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
