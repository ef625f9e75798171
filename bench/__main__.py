"""`python -m bench`: run every benchmark of anyop (see bench/README.md)."""

from __future__ import annotations

import runpy

BENCHMARKS = ["bench.http_transport", "bench.client_requests", "bench.compare", "bench.daemons"]

if __name__ == "__main__":
    for name in BENCHMARKS:
        print(f"\n### {name}\n", flush=True)
        runpy.run_module(name, run_name="__main__")
