"""A soak in real time on a local control plane: `anyop run` under a steady stream of changes.

``python -m bench.soak_real --minutes 10 --backend asyncio`` starts a control plane of its own,
runs ``anyop run`` with create, update and delete handlers, a daemon (waking every 5 s) and a
timer (every 10 s) per object, and meanwhile creates an object every second, changes a live one,
and deletes the oldest beyond 20. Every handler call is appended to a ledger file. At the end it
waits until every change is handled, stops the operator with SIGTERM, and prints (JSON): the
calls per cause (each must be 1), the causes never handled, the exit code, and the operator's
RSS sampled every 30 s with its least-squares slope per minute (the first minute warms up;
``--warmup M`` starts the slope at minute M instead: the allocator's arenas fill over the first
2,000 or so objects, see docs/reliability.md).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd

ROOT = Path(__file__).parents[1]
NAMESPACE = "soak"
URL = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"

OPERATOR = """
import os
from typing import Any

import anyop

LEDGER = os.environ["SOAK_LEDGER"]


def note(*fields: str) -> None:
    with open(LEDGER, "a") as ledger:
        ledger.write(" ".join(fields) + "\\n")


@anyop.on.create("kopfexamples", id="create_fn")
async def create_fn(name: str, spec: Any, **_: Any) -> str:
    note("create", name, spec["field"])
    return str(spec["field"])


@anyop.on.update("kopfexamples", id="update_fn")
async def update_fn(name: str, spec: Any, **_: Any) -> str:
    note("update", name, spec["field"])
    return str(spec["field"])


@anyop.on.delete("kopfexamples", id="delete_fn")
async def delete_fn(name: str, **_: Any) -> None:
    note("delete", name, "-")


@anyop.daemon("kopfexamples", id="watcher")
async def watcher(stopped: Any, **_: Any) -> None:
    while not stopped:
        await stopped.wait(5)


@anyop.timer("kopfexamples", id="ticker", interval=10)
async def ticker(**_: Any) -> None:
    pass
"""


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS")).split()[1])


def slope(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (minute, KiB) points, in KiB per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def stream_of_changes(client: httpx.Client, minutes: float, pid: int) -> dict[str, Any]:
    """Create, change and delete for that long; the causes made and the RSS samples."""
    rng, live, causes, samples = random.Random(1), [], [], []
    started = time.monotonic()
    tick = 0
    while (elapsed := time.monotonic() - started) < minutes * 60:
        name = f"kex-{tick}"
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                "metadata": {"name": name}, "spec": {"field": f"c{tick}"}}  # fmt: skip
        client.post(URL, json=body).raise_for_status()
        causes.append(("create", name, f"c{tick}"))
        live.append(name)
        if len(live) > 2:
            changed = rng.choice(live[1:-1])  # not the one deleted next: a deleted object's
            # last change may rightly never reach an update handler
            patch = {"spec": {"field": f"u{tick}"}}
            headers = {"Content-Type": "application/merge-patch+json"}
            client.patch(f"{URL}/{changed}", json=patch, headers=headers).raise_for_status()
            causes.append(("update", changed, f"u{tick}"))
        if len(live) > 20:
            gone = live.pop(0)
            client.delete(f"{URL}/{gone}").raise_for_status()
            causes.append(("delete", gone, "-"))
        if tick % 30 == 0:
            samples.append((elapsed / 60, rss_kib(pid)))
        tick += 1
        time.sleep(max(0.0, started + tick - time.monotonic()))
    return {"causes": causes, "samples": samples}


def run(
    plane: LocalControlPlane, minutes: float, backend: str, warmup: float = 1
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        source, ledger = Path(folder) / "operator.py", Path(folder) / "ledger.txt"
        source.write_text(OPERATOR)
        ledger.touch()
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "SOAK_LEDGER": str(ledger)}
        command = [sys.executable, "-m", "anyop", "run", str(source), "-n", NAMESPACE,
                   "--standalone", "--backend", backend, "--log-format", "plain"]  # fmt: skip
        log = open(Path(folder) / "operator.log", "w")  # noqa: SIM115 (closed below)
        operator = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=60) as c:
                time.sleep(5)  # the operator's start
                made = stream_of_changes(c, minutes, operator.pid)
                missing = wait_until_handled(ledger, made["causes"], deadline=120)
        finally:
            operator.send_signal(signal.SIGTERM)
            code = operator.wait(timeout=60)
            log.close()
        calls = collections.Counter(
            tuple(line.split(" ", 2)) for line in ledger.read_text().splitlines()
        )
        errors = [line for line in (Path(folder) / "operator.log").read_text().splitlines()
                  if "ERROR" in line or "Traceback" in line]  # fmt: skip
    samples = made["samples"]
    return {
        "backend": backend,
        "minutes": minutes,
        "warmup_minutes": warmup,
        "causes": len(made["causes"]),
        "handled_more_than_once": sum(1 for count in calls.values() if count > 1),
        "never_handled": missing,
        "exit_code": code,
        "error_lines": len(errors),
        "rss_kib": [kib for _, kib in samples],
        "rss_slope_kib_per_minute": round(slope([p for p in samples if p[0] >= warmup]), 1),
    }


def wait_until_handled(ledger: Path, causes: list[tuple[str, str, str]], *, deadline: float) -> int:
    """Wait until the ledger has every cause; how many it still lacks then."""
    wanted = collections.Counter(causes)
    until = time.monotonic() + deadline
    while True:
        seen = collections.Counter(
            tuple(line.split(" ", 2)) for line in ledger.read_text().splitlines()
        )
        missing = sum((wanted - seen).values())
        if not missing or time.monotonic() > until:
            return missing
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--warmup", type=float, default=1, help="minutes before the RSS slope")
    args = parser.parse_args()
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        kubectl(plane, "create", "namespace", NAMESPACE)
        print(json.dumps(run(plane, args.minutes, args.backend, args.warmup)), flush=True)


if __name__ == "__main__":
    main()
