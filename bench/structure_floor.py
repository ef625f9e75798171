"""The memory floor of the task structure: what AnyIO itself needs for a daemon and a timer per
object, with no bodies, handlers or API calls.

``python -m bench.structure_floor [--objects 1000] [--backend asyncio|trio]``

After ``import anyop``, it builds per object what anyop builds: a host task with its own task group,
the daemon run in a cancel scope waiting on an event, and the sleeping timer as an entry in anyop's
own timers' :class:`~anyop.engine.schedule.Schedule` (no task between its runs). It prints
the RSS above the import, in all and per object. The side-by-side ``background`` scenario cannot
cost less than this plus the import.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

import anyio

import anyop  # noqa: F401 (measured above the same import as an operator)
from anyop.engine.schedule import Schedule


def rss_mib() -> float:
    """This process's resident memory now."""
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) / 1024


async def structure(count: int) -> tuple[float, float]:
    """MiB of RSS before, and what ``count`` objects' tasks, groups, scopes and events take."""
    gc.collect()
    before = rss_mib()
    stops = [anyio.Event() for _ in range(count)]

    async def daemon(stop: anyio.Event) -> None:
        with anyio.CancelScope():
            await stop.wait()

    async def host(stop: anyio.Event) -> None:
        async with anyio.create_task_group():
            await daemon(stop)

    async with anyio.create_task_group() as root:
        timers: Schedule[anyio.Event] = Schedule(root, lambda _: None, name="timers")
        for stop in stops:
            root.start_soon(host, stop)
            timers.add(stop, anyio.current_time() + 60)
        await anyio.sleep(1)
        gc.collect()
        used = rss_mib() - before
        root.cancel_scope.cancel()
    return before, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    before, used = anyio.run(structure, args.objects, backend=args.backend)
    per_object = used * 1024 / args.objects
    print(f"{args.backend}: {before:.1f} MiB with anyop imported; {args.objects} objects: "
          f"{used:.1f} MiB more, {per_object:.1f} KiB per object")  # fmt: skip


if __name__ == "__main__":
    main()
