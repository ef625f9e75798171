"""Sharding: N replicas (`anyop run --shards auto`) share the objects; throughput and RSS.

``python -m bench.sharding [--objects 10000] [--replicas 1 2 3] [--backends asyncio trio]
[--server-shards on off] [--kill-after SECONDS] [--logs DIR] [--no-record]``

For each number of replicas: the replicas start in an empty namespace (peering in its
AnyopPeering) and settle (every member's Lease acknowledges the same view); ``anyop freeze``
pauses them; the objects are created (4 threads); ``anyop resume`` lets the replicas go, and the
bench waits until every object has been handled (each replica's handler notes the names it
handled in a file, counted every second), takes the figures, and then checks that every object
has ``status.create_fn`` (listed a page at a time). So the replicas
start on the whole backlog at once, each from a listing, as after a rollout. It reports the
seconds from the resume to the last object handled, objects handled per second, and per replica
its CPU seconds and RSS (VmRSS now, VmHWM peak, from ``/proc``), and the API server's CPU
seconds over the backlog and its RSS. ``--server-shards on`` runs kube-apiserver with its
``ShardedListAndWatch`` gate (the replicas ask it for their own objects only); ``off`` without
(every replica receives every object and drops the others'). The operator is
``bench/operators/create_returns_status.py``. The replicas and the API server share this
machine's CPUs. The results are kept in ``bench/results/sharding.json`` (see
``bench/results.py``).

It also reports how many objects were handled more than once (``twice``: by the replicas that
lived to the end; ``twice_killed``: one of the runs by the killed replica). ``--kill-after S``
kills one replica (SIGKILL) S seconds after the resume and reports ``takeover_s``: the seconds
until the others' Leases acknowledge a new view of the members, the one without it (due after
the Lease's duration, 15 s)."""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from anyop.sharding import ACK_ANNOTATION, GROUP_LABEL
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench import results
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = ROOT / "bench" / "operators" / "create_returns_status.py"
GROUP = "bench-shards"
POLL = 5.0
"""Seconds between two listings that check every object's result at the end of a run."""


def proc(pid: int) -> dict[str, float]:
    """CPU seconds, current and peak RSS (MiB) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    mib = {key: int(status[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}
    return {"cpu_s": cpu, "rss_mib": mib["VmRSS"], "peak_mib": mib["VmHWM"]}


def views(client: httpx.Client, namespace: str) -> dict[str, str | None]:
    """The digest of the view each member acknowledges, by its Lease's holder identity."""
    url = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    items = client.get(url, params={"labelSelector": f"{GROUP_LABEL}={GROUP}"}).json()["items"]
    return {
        str(item["spec"].get("holderIdentity")): (
            (item["metadata"].get("annotations") or {}).get(ACK_ANNOTATION)
        )
        for item in items
    }


def settled(client: httpx.Client, namespace: str, members: int) -> bool:
    acks = views(client, namespace)
    distinct = set(acks.values())
    return len(acks) == members and len(distinct) == 1 and None not in distinct


def taken_over(acks: dict[str, str | None], dead: int, before: str | None) -> bool:
    """Whether every member but the one of process ``dead`` acknowledges one new view."""
    alive = {ack for identity, ack in acks.items() if not identity.endswith(f"-{dead}")}
    return len(alive) == 1 and None not in alive and before not in alive


def create(client: httpx.Client, namespace: str, names: list[str]) -> None:
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    for name in names:
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                "metadata": {"name": name}, "spec": {"field": name}}  # fmt: skip
        client.post(url, json=body).raise_for_status()


def handled_runs(directory: Path) -> int:
    """How many handler runs the replicas noted (a line of a fixed length each)."""
    return sum(path.stat().st_size for path in directory.glob("*.log")) // len(name_of(0))


def handled_names(directory: Path) -> dict[int, list[str]]:
    """The names each replica's handler ran for, by its process id."""
    return {int(path.stem): path.read_text().split() for path in directory.glob("*.log")}


def name_of(index: int) -> str:
    return f"kex-{index:06d}"


def handled_by(client: httpx.Client, namespace: str) -> int:
    """How many objects have their status, listed a page at a time."""
    url = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    count, token = 0, ""
    while True:
        params = {"limit": "5000", **({"continue": token} if token else {})}
        page = busy_get(client, url, params)
        count += sum(1 for item in page["items"] if "create_fn" in (item.get("status") or {}))
        token = page["metadata"].get("continue") or ""
        if not token:
            return count


def busy_get(client: httpx.Client, url: str, params: dict[str, str]) -> Any:
    """A GET retried while the API server is too busy to answer it (its watch cache behind
    etcd answers a page's continue token with 504 "Too large resource version")."""
    for _ in range(60):
        response = client.get(url, params=params)
        if response.status_code not in (429, 504):
            return response.raise_for_status().json()
        time.sleep(1)
    return response.raise_for_status().json()


def anyop(plane: LocalControlPlane, *args: str) -> None:
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    subprocess.run([sys.executable, "-m", "anyop", *args], env=env, check=True, timeout=60)


def run(
    plane: LocalControlPlane,
    count: int,
    replicas: int,
    backend: str,
    kill_after: float | None,
    *,
    last: bool = False,
    logs: Path | None = None,
) -> dict[str, Any]:
    """One run; ``last``: the control plane's last, whose objects are left to its end; ``logs``:
    where each replica's log goes (at the INFO level), instead of its warnings to the bench's."""
    namespace = f"shards-{replicas}-{backend}-{int(time.time())}"
    scratch = scratch_namespace(plane, namespace, keep=last)
    with scratch, tempfile.TemporaryDirectory() as noted:
        peering = (
            '{"apiVersion": "anyop.dev/v1", "kind": "AnyopPeering", "metadata": {"name": "x"}}'
        )
        kubectl(plane, "apply", "-n", namespace, "-f", "-", stdin=peering)
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig),
               "ANYOP_SHARDING__RETRY_PERIOD": "1", "ANYOP_BENCH_HANDLED": noted}  # fmt: skip
        cmd = [sys.executable, "-m", "anyop", "run", str(OPERATOR), "-n", namespace, "--backend",
               backend, "--shards", "auto", "--lease-name", GROUP, "-P", "x"]  # fmt: skip
        if logs is None:
            processes = [subprocess.Popen([*cmd, "-q"], env=env) for _ in range(replicas)]
        else:
            logs.mkdir(parents=True, exist_ok=True)
            processes = []
            for i in range(replicas):
                with (logs / f"{namespace}-{i}.log").open("wb") as log:
                    processes.append(subprocess.Popen(cmd, env=env, stderr=log))
        killed: subprocess.Popen[bytes] | None = None
        takeover: float | None = None
        ctx = plane.ssl_context()
        try:
            with httpx.Client(base_url=plane.server, verify=ctx, timeout=60) as client:
                deadline = time.monotonic() + 120
                while not settled(client, namespace, replicas):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the replicas did not settle within 120 s")
                    time.sleep(0.2)
                view = next(iter(views(client, namespace).values()))
                anyop(plane, "freeze", "-P", "x", "-n", namespace, "-t", "3600", "-q")
                names = [name_of(i) for i in range(count)]
                with concurrent.futures.ThreadPoolExecutor(4) as pool:
                    chunks = [names[i::4] for i in range(4)]
                    clients = [httpx.Client(base_url=plane.server, verify=ctx) for _ in range(4)]
                    list(pool.map(create, clients, [namespace] * 4, chunks))
                    for one in clients:
                        one.close()
                before = [proc(process.pid)["cpu_s"] for process in processes]
                server_before = proc(server_pid(plane))["cpu_s"]
                started = time.monotonic()
                anyop(plane, "resume", "-P", "x", "-n", namespace, "-q")
                while not all_handled(Path(noted), count):
                    for process in processes:
                        if process is not killed and process.poll() is not None:
                            raise RuntimeError(f"a replica exited with {process.returncode}")
                    now = time.monotonic() - started
                    if kill_after is not None and killed is None and now >= kill_after:
                        killed, kill_at = processes[0], now
                        killed.kill()
                    waiting = killed is not None and takeover is None
                    if waiting and taken_over(views(client, namespace), killed.pid, view):
                        takeover = time.monotonic() - started - kill_at
                    time.sleep(0.25 if waiting else 1.0)
                seconds = time.monotonic() - started  # their results land within milliseconds
                time.sleep(2)
                alive = [
                    (p, cpu) for p, cpu in zip(processes, before, strict=True) if p is not killed
                ]
                stats = [proc(process.pid) for process, _ in alive]
                for stat, (_, cpu) in zip(stats, alive, strict=True):
                    stat["cpu_s"] -= cpu  # the backlog's, not the start's or the settling's
                server = proc(server_pid(plane))
                server["cpu_s"] -= server_before
                while handled_by(client, namespace) < count:  # every result written: proof
                    time.sleep(POLL)
                twice, twice_killed = handled_more_than_once(Path(noted), killed)  # runs since
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=60)
    return {
        "replicas": replicas,
        "seconds": seconds,
        "per_s": count / seconds,
        "stats": stats,
        "server": server,
        "twice": twice,
        **(
            {}
            if killed is None
            else {
                "kill_after": kill_after,
                "takeover_s": takeover,
                "twice_killed": twice_killed,
            }
        ),
    }


def all_handled(noted: Path, count: int) -> bool:
    """Whether every object's handler ran (reading the names only once the runs are enough)."""
    if handled_runs(noted) < count:
        return False
    return len({name for runs in handled_names(noted).values() for name in runs}) >= count


def handled_more_than_once(noted: Path, killed: subprocess.Popen[bytes] | None) -> tuple[int, int]:
    """How many objects were handled more than once: by the replicas that lived, and with one
    of the runs by the killed replica (a run whose result it did not write before it died)."""
    runs = handled_names(noted)
    dead = set(runs.pop(killed.pid, [])) if killed is not None else set()
    seen: collections.Counter[str] = collections.Counter(
        name for names in runs.values() for name in names
    )
    twice = sum(1 for times in seen.values() if times > 1)
    return twice, sum(1 for name in dead if seen[name])


def server_pid(plane: LocalControlPlane) -> int:
    """The pid of the control plane's kube-apiserver."""
    assert plane.apiserver is not None
    assert plane.apiserver.pid is not None
    return plane.apiserver.pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--backends", nargs="+", default=["asyncio", "trio"])
    parser.add_argument("--server-shards", nargs="+", choices=["on", "off"], default=["on"])
    parser.add_argument("--kill-after", type=float, default=None,
                        help="Kill one replica this many seconds after the resume.")  # fmt: skip
    parser.add_argument("--logs", type=Path, default=None,
                        help="Keep each replica's log (INFO) in this folder.")  # fmt: skip
    parser.add_argument("--no-record", action="store_true",
                        help="Do not keep the results in bench/results/sharding.json.")  # fmt: skip
    args = parser.parse_args()
    if args.kill_after is not None and min(args.replicas) < 2:
        parser.error(
            "--kill-after needs at least 2 replicas: the others take the killed one's over"
        )
    measured = results.stamp()
    for gate in args.server_shards:
        flags = [f"--feature-gates=ShardedListAndWatch={'true' if gate == 'on' else 'false'}"]
        keep = None if args.no_record else measured
        # etcd's default quota (2 GiB) would end a run of a few hundred thousand objects.
        quota = ["--quota-backend-bytes=8589934592"]
        with LocalControlPlane(
            controllers=False, nodes=False, apiserver_flags=flags, etcd_flags=quota
        ) as plane:
            bench(plane, args.objects, args.replicas, args.backends, gate, keep=keep,
                  kill_after=args.kill_after, logs=args.logs)  # fmt: skip


def bench(
    plane: LocalControlPlane,
    objects: int,
    counts: list[int],
    backends: list[str],
    gate: str,
    *,
    keep: results.Record | None,
    kill_after: float | None = None,
    logs: Path | None = None,
) -> None:
    """Every backend with every number of replicas, on one control plane; each run's result is
    kept as soon as it is measured (``keep``: the stamp of :func:`bench.results.stamp`); with
    ``kill_after``, one replica of each run is killed that many seconds after the resume."""
    kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
    kubectl(plane, "apply", "-f", str(ROOT / "manifests" / "peering.yaml"))
    for crd in ("kopfexamples.kopf.dev", "anyoppeerings.anyop.dev"):
        wait_for_crd(plane, crd)
    print(
        f"sharding, a backlog of {objects} objects, created while the replicas froze; "
        f"server-side shard selectors {gate}"
    )
    last = (backends[-1], counts[-1])
    for backend in backends:
        for replicas in counts:
            at_end = (backend, replicas) == last
            r = run(plane, objects, replicas, backend, kill_after, last=at_end, logs=logs)
            per = ", ".join(
                f"{s['cpu_s']:.1f} s CPU / {s['rss_mib']:.0f} MiB (peak {s['peak_mib']:.0f})"
                for s in r["stats"]
            )
            server = r["server"]
            print(
                f"{backend}, {replicas} replica(s): all handled in {r['seconds']:.1f} s "
                f"({r['per_s']:.0f}/s); per replica: {per}; API server: "
                f"{server['cpu_s']:.1f} s CPU / {server['rss_mib']:.0f} MiB; handled more "
                f"than once: {r['twice']}"
                + (
                    ""
                    if kill_after is None
                    else f"; killed one after {kill_after:.0f} s: taken over in "
                    f"{r['takeover_s']} s, {r['twice_killed']} of its objects handled again"
                ),
                flush=True,
            )
            if keep is not None:
                found = {"objects": objects, "backend": backend, "selectors": gate, **r}
                key = ("objects", "backend", "selectors", "replicas", "kill_after")
                results.record("sharding", [found], key=key, measured=keep)


if __name__ == "__main__":
    main()
