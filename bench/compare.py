"""anyop beside Kopf on one local control plane, same operator code, alternating repetitions.

``python -m bench.compare [--objects 1000] [--repeats 3] [--scenarios ...] [--frameworks ...]``
(or ``nox -s bench -- compare ...``; ``--smoke`` is the suite's quick mode: 20 objects, once).

Frameworks: ``anyop-asyncio``, ``anyop-trio``, ``kopf`` (Kopf from PyPI in its own venv, see
``bench/kopf_env.py``; both frameworks run ``--standalone``) and, for ``bulk``, the floors
``raw`` and ``raw-aiohttp`` (``bench/raw_floor.py``: a list-watch-patch loop doing the necessary
writes on plain httpx, or on aiohttp, the client Kopf uses; aiohttp is installed by ``nox -s
bench``), ``raw-list`` / ``raw-aiohttp-list``, the same without the watch, and ``raw-state`` /
``raw-aiohttp-state``, the same keeping the least state Kopf's semantics need (the handled spec,
written with the result and checked on every event). All run
``bench/operators/kopf_code.py``, which is Kopf code (``import anyop as kopf`` under anyop). Each
run gets a fresh namespace and the operator is scoped to it (a bare kube-apiserver never removes
deleted namespaces). Scenarios:

- ``bulk`` / ``bulk-delete``: N objects exist, then the operator starts; seconds until every one
  has ``status.create_fn`` (seen on a watch), operator CPU seconds and peak RSS at that moment,
  the CPU seconds kube-apiserver and etcd spent meanwhile (both share the machine's cores with
  the operator), and per object the API requests, PATCHes and response bytes (from the API
  server's own ``apiserver_request_total`` and ``apiserver_response_sizes``); ``bulk-delete``
  adds a delete handler (a finalizer on every object).
- ``latency`` / ``latency-backlog``: one handled object; ``spec.sent`` is patched every 0.5 s
  with the wall time, and the update handler prints when it starts: p50 and p99 in ms. With a
  backlog, N new objects are being created meanwhile.
- ``background``: N objects exist, then the operator starts with an async daemon and a timer
  per object: seconds until every daemon runs, CPU seconds and RSS then, seconds from SIGTERM to
  the process's exit.
- ``restart``: N objects handled by a first run; a second run with a resume handler: seconds
  until all resumed, its CPU seconds and peak RSS.
- ``import``: seconds and max RSS of ``python -c 'import anyop'`` (or ``import kopf``).
- ``idle``: the fixed cost that ``bulk``'s ``cpu_s`` includes: CPU seconds and RSS of an operator
  serving an empty namespace, 3 s after its start (the floors: at their exit, with nothing to do).
  ``bulk``'s CPU per object beyond it is ``(bulk cpu_s - idle cpu_s) / N``.

Every repetition runs every framework, in a rotating order; reported are medians and the ratios
to Kopf, and the medians are kept in ``bench/results/compare.json`` (``--no-record``: not kept;
``python -m bench.charts`` draws them). Numbers are printed as a Markdown table for
``docs/benchmarks.md``. ``--profile DIR`` attaches py-spy to every anyop run (read the profiles
with ``python -m bench.profiles``).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
from prometheus_client.parser import text_string_to_metric_families

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench import profiles, results
from bench.bulk_create import proc_stats
from bench.daemons import create_objects
from bench.kopf_env import KOPF_VERSION, kopf_command
from bench.namespaces import scratch_namespace

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = ROOT / "bench" / "operators" / "kopf_code.py"
FRAMEWORKS = (
    "anyop-asyncio", "anyop-trio", "kopf", "raw", "raw-aiohttp", "raw-list", "raw-aiohttp-list",
    "raw-state", "raw-aiohttp-state",
)  # fmt: skip
SCENARIOS = (
    "bulk", "bulk-delete", "latency", "latency-backlog", "background", "restart", "import", "idle"
)  # fmt: skip
Result = dict[str, float]
Runs = dict[str, dict[str, list[float]]]


ANYOP_SOURCE: Path | None = None
"""The ``src`` folder anyop's runs import it from (``bench.ab`` sets it); ``None``: this one."""

PROFILE_DIR: Path | None = None
"""Where ``--profile`` writes a py-spy profile of every anyop run (``bench/profiles.py``)."""

QUIET = ["-q"]
"""Options of ``run`` for both frameworks: ``-q`` (warnings only, so no Events are posted) or none
(``--verbose-logs``: the defaults, INFO logs on stderr and an Event per handler message)."""


def command(framework: str, namespace: str) -> list[str]:
    """The command line of a framework serving one namespace."""
    if framework == "kopf":
        return [*kopf_command(), "run", "--standalone", *QUIET, "-n", namespace, str(OPERATOR)]
    if framework.startswith("raw"):
        client = "aiohttp" if framework.startswith("raw-aiohttp") else "httpx"
        only = ["--list-only"] if framework.endswith("-list") else []
        state = ["--state"] if framework.endswith("-state") else []
        return [sys.executable, "-m", "bench.raw_floor", namespace, "--client", client, *only,
                *state]  # fmt: skip
    backend = framework.split("-", 1)[1]  # standalone as Kopf is: no peering lookup at start
    return [sys.executable, "-m", "anyop", "run", str(OPERATOR), "-n", namespace,
            "--backend", backend, "--standalone", *QUIET]  # fmt: skip


class Process:
    """An operator child process; its stderr lines are kept as they come, with their times."""

    def __init__(self, plane: LocalControlPlane, framework: str, namespace: str, **env: str):
        path = str(ROOT) if ANYOP_SOURCE is None else f"{ANYOP_SOURCE}{os.pathsep}{ROOT}"
        full_env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "BENCH_FRAMEWORK": framework,
                    "PYTHONPATH": path, **env}  # fmt: skip
        argv = command(framework, namespace)  # may install Kopf first: not part of the timing
        self.started = time.monotonic()
        self.popen = subprocess.Popen(
            argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._spy: subprocess.Popen[bytes] | None = None
        if PROFILE_DIR is not None and framework.startswith("anyop"):
            runs = len(list(PROFILE_DIR.glob(f"{framework}-*.folded")))
            output = PROFILE_DIR / f"{framework}-{runs + 1}.folded"
            try:
                self._spy = profiles.attach(self.popen.pid, output)
            except BaseException:
                self.stop()  # no operator left running behind a failed start
                raise

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self.lines.append((time.monotonic(), line))

    def wait_for_line(self, text: str, timeout: float = 1800) -> float:
        """Seconds since the start until a line containing ``text`` came."""
        limit = time.monotonic() + timeout
        while time.monotonic() < limit:
            for when, line in list(self.lines):
                if text in line:
                    return when - self.started
            self.check()
            time.sleep(0.02)
        raise RuntimeError(f"no {text!r} line in time")

    def check(self) -> None:
        if self.popen.poll() not in (None, 0):
            tail = "".join(line for _, line in self.lines[-30:])
            raise RuntimeError(f"{self.popen.args} failed:\n{tail}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._reader.join(timeout=10)
        if self.popen.stderr is not None:
            self.popen.stderr.close()
        if self._spy is not None:  # it writes its file once the process is gone
            self._spy.wait(timeout=60)


class Handled:
    """Watches a namespace from a resourceVersion and counts objects with ``status.create_fn``."""

    def __init__(self, plane: LocalControlPlane, namespace: str, since: str) -> None:
        self.names: set[str] = set()
        self._plane, self._url, self._since = plane, kex_url(namespace), since
        self._stop = False
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        version = self._since
        with httpx.Client(base_url=self._plane.server, verify=self._plane.ssl_context(),
                          timeout=httpx.Timeout(60, read=None)) as client:  # fmt: skip
            while not self._stop:
                # Short watches: a closed counter's thread ends within seconds.
                params = {"watch": "1", "resourceVersion": version, "timeoutSeconds": "2",
                          "allowWatchBookmarks": "true"}  # fmt: skip
                try:
                    with client.stream("GET", self._url, params=params) as response:
                        for line in response.iter_lines():
                            obj = json.loads(line)["object"]
                            version = obj["metadata"]["resourceVersion"]
                            if "create_fn" in (obj.get("status") or {}):
                                self.names.add(obj["metadata"]["name"])
                except httpx.HTTPError:
                    time.sleep(0.1)  # reconnect from the last version (or stop)

    def wait(self, count: int, process: Process | None = None, timeout: float = 1800) -> float:
        """Block until ``count`` objects are handled; the monotonic time then."""
        limit = time.monotonic() + timeout
        while len(self.names) < count:
            if process is not None:
                process.check()
            if time.monotonic() > limit:
                raise RuntimeError(f"only {len(self.names)} of {count} handled in time")
            time.sleep(0.01)
        return time.monotonic()

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=30)


def kex_url(namespace: str) -> str:
    return f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"


def api_counts(client: httpx.Client) -> dict[str, float]:
    """The API server's own counts for kopfexamples: requests by verb, response bytes; and the
    Events posted (``events``)."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            resource = sample.labels.get("resource")
            posted = sample.labels.get("verb") == "POST"
            if resource == "events" and posted and sample.name == "apiserver_request_total":
                counts["events"] = counts.get("events", 0) + sample.value
            if resource != "kopfexamples":
                continue
            if sample.name == "apiserver_request_total":
                verb = sample.labels["verb"]
                counts[verb] = counts.get(verb, 0) + sample.value
                counts["requests"] = counts.get("requests", 0) + sample.value
            elif sample.name == "apiserver_response_sizes_sum":
                counts["bytes"] = counts.get("bytes", 0) + sample.value
    return counts


@contextmanager
def namespace_with(plane: LocalControlPlane, prefix: str, count: int) -> Iterator[tuple[str, str]]:
    """A fresh namespace with ``count`` objects; yields it and the resourceVersion after them."""
    with scratch_namespace(plane, f"{prefix}-{time.time_ns() % 10**10}") as namespace:
        anyio.run(create_objects, plane, namespace, count)
        with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as client:
            version = client.get(kex_url(namespace), params={"limit": "1"}).json()["metadata"]
        yield namespace, version["resourceVersion"]


def server_cpu(plane: LocalControlPlane) -> float:
    """CPU seconds that kube-apiserver and etcd have used so far."""
    return sum(proc_stats(process.pid)[0] for process in (plane.apiserver, plane.etcd)
               if process is not None and process.pid is not None)  # fmt: skip


def floor_stats(process: Process) -> tuple[float, float]:
    """A floor's CPU seconds and peak RSS, from the ``RAW`` line it prints as it exits."""
    process.wait_for_line("RAW ")
    line = next(line for _, line in process.lines if line.startswith("RAW "))
    cpu, rss = map(float, line.split()[1:])
    return cpu, rss


def bulk(plane: LocalControlPlane, framework: str, count: int, delete: bool = False) -> Result:
    with (
        namespace_with(plane, f"bulk-{framework}", count) as (namespace, since),
        httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as api,
    ):
        handled = Handled(plane, namespace, since)
        before = api_counts(api)
        server_before = server_cpu(plane)
        process = Process(plane, framework, namespace, **({"BENCH_DELETE": "1"} if delete else {}))
        try:
            seconds = handled.wait(count, process) - process.started
            server = server_cpu(plane) - server_before
            if framework.startswith("raw"):
                cpu, rss = floor_stats(process)
            else:
                cpu, rss = proc_stats(process.popen.pid)
            time.sleep(1)  # the echoes of the last writes
            after = api_counts(api)
        finally:
            process.stop()
            handled.close()
    delta = {key: after.get(key, 0) - before.get(key, 0) for key in after}
    return {
        "seconds": seconds, "cpu_s": cpu, "server_cpu_s": server, "rss_mib": rss,
        "requests_per_object": (delta.get("requests", 0) - 1) / count,  # minus our own watch
        "patches_per_object": delta.get("PATCH", 0) / count,
        "kib_per_object": delta.get("bytes", 0) / 1024 / count,
        "events_per_object": delta.get("events", 0) / count,
    }  # fmt: skip


def latency(plane: LocalControlPlane, framework: str, count: int, backlog: bool = False) -> Result:
    samples = 5 if count <= 20 else 20
    with (
        namespace_with(plane, f"lat-{framework}", 1) as (namespace, since),
        httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as api,
    ):
        handled = Handled(plane, namespace, since)
        process = Process(plane, framework, namespace, BENCH_LATENCY="1")
        creator = None
        try:
            handled.wait(1, process)
            if backlog:

                def more() -> None:
                    anyio.run(lambda: create_objects(plane, namespace, count, prefix="backlog"))

                creator = threading.Thread(target=more, daemon=True)
                creator.start()
                time.sleep(1)
            name = next(iter(handled.names))
            sent = []
            for _ in range(samples):
                sent.append(repr(time.time()))
                body = {"spec": {"sent": sent[-1]}}
                headers = {"Content-Type": "application/merge-patch+json"}
                api.patch(f"{kex_url(namespace)}/{name}", json=body, headers=headers)
                time.sleep(0.5)
            deadline = time.monotonic() + 60
            while not any(f"LATENCY {sent[-1]} " in line for _, line in process.lines):
                process.check()
                if time.monotonic() > deadline:
                    raise RuntimeError("the update handler did not see the last patch")
                time.sleep(0.05)
        finally:
            process.stop()
            handled.close()
            if creator is not None:
                creator.join()
    seen = [tuple(map(float, line.split()[1:3])) for _, line in process.lines
            if line.startswith("LATENCY")]  # fmt: skip
    values = sorted(delays([float(value) for value in sent], seen))
    return {"p50_ms": statistics.median(values), "p99_ms": percentile(values, 0.99)}


def delays(sent: list[float], seen: list[tuple[float, ...]]) -> list[float]:
    """Milliseconds from each patch until a handler started with it or a newer one.

    A framework that falls behind hands the handler the newest body only (both do), so a patch
    may never get a handler call of its own: its latency runs until the call that covers it.
    """
    return [min(now for value, now in seen if value >= patched) * 1000 - patched * 1000
            for patched in sent]  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def background(plane: LocalControlPlane, framework: str, count: int) -> Result:
    with namespace_with(plane, f"bg-{framework}", count) as (namespace, _):
        process = Process(plane, framework, namespace, BENCH_BACKGROUND=str(count))
        try:
            seconds = process.wait_for_line("ALL DAEMONS")
            time.sleep(1)  # the finalizers' echoes
            cpu, _ = proc_stats(process.popen.pid)
            rss = rss_mib(process.popen.pid)
            stopping = time.monotonic()
            process.popen.terminate()
            process.popen.wait(timeout=120)
            stopped = time.monotonic() - stopping
        finally:
            process.stop()
    return {"seconds": seconds, "cpu_s": cpu, "rss_mib": rss, "stop_s": stopped}


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) / 1024


def restart(plane: LocalControlPlane, framework: str, count: int) -> Result:
    with namespace_with(plane, f"restart-{framework}", count) as (namespace, since):
        handled = Handled(plane, namespace, since)
        first = Process(plane, framework, namespace)
        try:
            handled.wait(count, first)
        finally:
            first.stop()
            handled.close()
        second = Process(plane, framework, namespace, BENCH_RESUME=str(count))
        try:
            seconds = second.wait_for_line("ALL RESUMED")
            cpu, rss = proc_stats(second.popen.pid)
        finally:
            second.stop()
    return {"seconds": seconds, "cpu_s": cpu, "rss_mib": rss}


IDLE_SECONDS = 3.0
"""How long an operator serves an empty namespace before ``idle`` reads its CPU (it is ready and
idle well before; the floors exit at once instead, with nothing to do)."""


def idle(plane: LocalControlPlane, framework: str, _: int) -> Result:
    """The fixed cost: CPU seconds and RSS of starting to serve an empty namespace."""
    with namespace_with(plane, f"idle-{framework}", 0) as (namespace, _since):
        process = Process(plane, framework, namespace)
        try:
            if framework.startswith("raw"):
                cpu, rss = floor_stats(process)
            else:
                time.sleep(IDLE_SECONDS)
                process.check()
                cpu, rss = proc_stats(process.popen.pid)
        finally:
            process.stop()
    return {"cpu_s": cpu, "rss_mib": rss}


def import_cost(_: LocalControlPlane, framework: str, __: int) -> Result:
    module, python = ("kopf", str(Path(kopf_command()[0]).with_name("python"))) \
        if framework == "kopf" else ("anyop", sys.executable)  # fmt: skip
    code = (
        "import time; t = time.perf_counter(); import " + module + "; d = time.perf_counter() - t"
        "; print(d, next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
    seconds, rss_kib = out.split()
    return {"seconds": float(seconds), "rss_mib": int(rss_kib) / 1024}


RUNNERS: dict[str, Callable[[LocalControlPlane, str, int], Result]] = {
    "bulk": bulk,
    "bulk-delete": lambda plane, fw, n: bulk(plane, fw, n, delete=True),
    "latency": latency,
    "latency-backlog": lambda plane, fw, n: latency(plane, fw, n, backlog=True),
    "background": background,
    "restart": restart,
    "import": import_cost,
    "idle": idle,
}


def applicable(scenario: str, frameworks: list[str]) -> list[str]:
    """The raw floor only does what ``bulk`` needs (and its fixed cost, ``idle``); imports exist
    only for frameworks."""
    return [fw for fw in frameworks if not fw.startswith("raw") or scenario in ("bulk", "idle")]


def compare(plane: LocalControlPlane, scenario: str, frameworks: list[str], count: int,
            repeats: int) -> Runs:  # fmt: skip
    """Run every framework ``repeats`` times, rotating the order; all values by framework."""
    runs: Runs = {fw: {} for fw in frameworks}
    for rep in range(repeats):
        order = frameworks[rep % len(frameworks) :] + frameworks[: rep % len(frameworks)]
        for framework in order:
            result = RUNNERS[scenario](plane, framework, count)
            print(f"  [{scenario} #{rep + 1}] {framework}: {format_result(result)}", flush=True)
            for key, value in result.items():
                runs[framework].setdefault(key, []).append(value)
    return runs


def format_result(result: Result) -> str:
    """``seconds=2.03, cpu_s=1.21, ...``"""
    return ", ".join(f"{key}={value:.3g}" for key, value in result.items())


def table(scenario: str, count: int, runs: Runs) -> str:
    """A Markdown table: medians per framework, and anyop's ratios to Kopf."""
    frameworks = list(runs)
    ours = [fw for fw in frameworks if fw.startswith("anyop")]
    head = ["metric", *frameworks, *(f"{fw} / kopf" for fw in ours if "kopf" in runs)]
    lines = [f"**{scenario}**, N = {count}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]  # fmt: skip
    for metric in next(iter(runs.values())):
        medians = {fw: statistics.median(runs[fw][metric]) for fw in frameworks}
        cells = [metric, *(f"{medians[fw]:.3g}" for fw in frameworks)]
        if "kopf" in runs:
            cells += [f"{medians[fw] / medians['kopf']:.2f}" if medians["kopf"] else "-"
                      for fw in ours]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_all(plane: LocalControlPlane, scenarios: list[str], frameworks: list[str], count: int,
            repeats: int) -> dict[str, Runs]:  # fmt: skip
    """Every scenario on a running control plane (with the KopfExample CRD); prints the tables."""
    print(f"anyop vs Kopf {KOPF_VERSION}; {os.cpu_count()} CPUs; load {os.getloadavg()}")
    results = {}
    for scenario in scenarios:
        results[scenario] = compare(plane, scenario, applicable(scenario, frameworks), count,
                                    repeats)  # fmt: skip
        print("\n" + table(scenario, count, results[scenario]) + "\n", flush=True)
    return results


def records(found: dict[str, Runs], count: int, repeats: int) -> list[results.Record]:
    """One record per scenario and framework: the medians of its metrics."""
    return [
        {"scenario": scenario, "objects": count, "framework": framework, "repeats": repeats,
         "values": {metric: statistics.median(values) for metric, values in metrics.items()}}
        for scenario, runs in found.items()
        for framework, metrics in runs.items()
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS), choices=FRAMEWORKS)
    parser.add_argument("--smoke", action="store_true", help="20 objects, once (the tests).")
    parser.add_argument("--no-record", action="store_true",
                        help="Do not keep the medians in bench/results/compare.json.")  # fmt: skip
    parser.add_argument(
        "--verbose-logs",
        action="store_true",
        help="Run the operators with their default logging (INFO, Events posted).",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="Attach py-spy to every anyop run; folded stacks into DIR (bench/profiles.py).",
    )
    args = parser.parse_args(argv)
    if args.verbose_logs:
        QUIET.clear()
    if args.profile is not None:
        profiles.py_spy()  # before anything starts: say at once if it is missing
        global PROFILE_DIR
        args.profile.mkdir(parents=True, exist_ok=True)
        PROFILE_DIR = args.profile
    count, repeats = (20, 1) if args.smoke else (args.objects, args.repeats)
    # Bytecode for anyop's sources, as an installed package has (Kopf's venv has it): with
    # PYTHONDONTWRITEBYTECODE set, an editable checkout would be compiled at every start.
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    measured = results.stamp()
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        found = run_all(plane, args.scenarios, args.frameworks, count, repeats)
    if not (args.smoke or args.no_record):
        results.record("compare", records(found, count, repeats),
                       key=("scenario", "objects", "framework"), measured=measured)  # fmt: skip


if __name__ == "__main__":
    main()
