"""The benchmarks' operator, written for Kopf; anyop runs it too (``import anyop as kopf``).

``BENCH_FRAMEWORK=kopf`` imports Kopf itself (in Kopf's own venv). Options, from the environment:

- ``BENCH_DELETE=1``: also a delete handler (so every object gets a finalizer);
- ``BENCH_LATENCY=1``: an update handler that prints ``LATENCY <sent> <now>`` when it starts,
  where ``<sent>`` is the wall-clock time the harness wrote into ``spec.sent``;
- ``BENCH_RESUME=<N>``: a resume handler that prints ``ALL RESUMED`` once N objects resumed;
- ``BENCH_BACKGROUND=<N>``: no create handler; an async daemon (printing ``ALL DAEMONS`` once N
  run) and a 60-second timer per object.
"""

import os
import sys
import time
from typing import Any

if os.environ.get("BENCH_FRAMEWORK") == "kopf":
    import kopf
else:
    import anyop as kopf


if not os.environ.get("BENCH_BACKGROUND"):

    @kopf.on.create("kopfexamples")
    async def create_fn(name: str, **_: Any) -> dict[str, str]:
        return {"message": f"hello {name}"}


if os.environ.get("BENCH_DELETE"):

    @kopf.on.delete("kopfexamples")
    async def delete_fn(**_: Any) -> None:
        pass


if os.environ.get("BENCH_LATENCY"):

    @kopf.on.update("kopfexamples", field="spec.sent")
    async def update_fn(new: Any, **_: Any) -> None:
        print(f"LATENCY {new} {time.time()}", file=sys.stderr, flush=True)


if expected := int(os.environ.get("BENCH_RESUME", "0")):
    resumed = set()

    @kopf.on.resume("kopfexamples")
    async def resume_fn(name: str, **_: Any) -> None:
        resumed.add(name)
        if len(resumed) == expected:
            print("ALL RESUMED", file=sys.stderr, flush=True)


if daemons := int(os.environ.get("BENCH_BACKGROUND", "0")):
    running = set()

    @kopf.daemon("kopfexamples")
    async def idle_daemon(name: str, stopped: Any, **_: Any) -> None:
        running.add(name)
        if len(running) == daemons:
            print("ALL DAEMONS", file=sys.stderr, flush=True)
        await stopped.wait()

    @kopf.timer("kopfexamples", interval=60)
    async def idle_timer(**_: Any) -> None:
        pass
