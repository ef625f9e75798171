"""Wall time of a FakeCluster's list of many objects, at the client.

`python -m bench.fake_lists [--objects 200] [--lists 300]`: ``--objects`` ConfigMaps (ten
20-byte keys and a label each) are created in one namespace of a FakeCluster, then the
namespace's ConfigMaps are listed ``--lists`` times through the in-process transport, one list
at a time. It prints the median and the mean wall time per list (the fake's answer and httpx's
parsing of it). To compare two trees, run it from each in turn (``PYTHONPATH=<tree>/src``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx

from anyop.testing.fake import FakeCluster


async def _lists(objects: int, lists: int) -> list[float]:
    fake = FakeCluster(controllers=False)
    path = "/api/v1/namespaces/bench/configmaps"
    async with httpx.AsyncClient(base_url=fake.url, transport=fake.transport()) as api:
        (
            await api.post("/api/v1/namespaces", json={"metadata": {"name": "bench"}})
        ).raise_for_status()
        for i in range(objects):
            body = {"metadata": {"name": f"c{i}", "labels": {"app": "bench"}},
                    "data": {f"k{j}": "v" * 20 for j in range(10)}}  # fmt: skip
            (await api.post(path, json=body)).raise_for_status()
        times = []
        for _ in range(lists):
            started = time.perf_counter()
            response = await api.get(path)
            times.append(time.perf_counter() - started)
            if len(response.raise_for_status().json()["items"]) != objects:
                raise RuntimeError("the list does not hold every object")
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--lists", type=int, default=300)
    args = parser.parse_args()
    times = anyio.run(_lists, args.objects, args.lists)
    median, mean = statistics.median(times) * 1e6, statistics.fmean(times) * 1e6
    shown = f"median {median:.0f} us, mean {mean:.0f} us"
    print(f"{args.lists} lists of {args.objects} ConfigMaps: {shown}")


if __name__ == "__main__":
    main()
