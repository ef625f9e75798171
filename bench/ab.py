"""Before/after: one scenario of ``bench.compare`` for anyop from two source trees, alternating.

``python -m bench.ab SCENARIO --before DIR [--after DIR] [--objects 1000] [--repeats 4]
[--backend asyncio|trio]``

``--before`` and ``--after`` are checkouts of anyop (``git worktree add /tmp/before REV``); each
run imports anyop from the tree's ``src``, compiled first. ``--after`` is this checkout by
default. The two alternate in a rotating order on one local control plane, each run in a fresh
namespace; printed are every run, the medians, and the ratios after / before. This is how the
before/after ratios in ``CHANGELOG.md`` and ``docs/benchmarks.md`` are measured.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
from pathlib import Path

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd
from bench import compare

SCENARIOS = sorted(set(compare.SCENARIOS) - {"import"})


def run(
    plane: LocalControlPlane,
    scenario: str,
    trees: dict[str, Path],
    count: int,
    repeats: int,
    framework: str,
) -> dict[str, list[compare.Result]]:
    """Every run's results per tree, the trees alternating in a rotating order.

    The control plane must serve the KopfExample CRD.
    """
    measure = compare.RUNNERS[scenario]
    results: dict[str, list[compare.Result]] = {name: [] for name in trees}
    names = list(trees)
    for repeat in range(repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            compare.ANYOP_SOURCE = trees[name] / "src"
            try:
                result = measure(plane, framework, count)
            finally:
                compare.ANYOP_SOURCE = None
            line = f"  [{scenario} #{repeat + 1}] {name}: {compare.format_result(result)}"
            print(line, flush=True)
            results[name].append(result)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--before", type=Path, required=True, help="A checkout of anyop.")
    parser.add_argument("--after", type=Path, default=compare.ROOT, help="Default: this one.")
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    for tree in trees.values():
        if not (tree / "src" / "anyop").is_dir():
            parser.error(f"{tree}: not a checkout of anyop (no src/anyop)")
        compileall.compile_dir(str(tree / "src"), quiet=1)
    framework = f"anyop-{args.backend}"
    with LocalControlPlane(controllers=False, nodes=False) as plane:
        kubectl(plane, "apply", "-f", str(compare.ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        results = run(plane, args.scenario, trees, args.objects, args.repeats, framework)
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    for name, values in medians.items():
        print(f"{name}: {compare.format_result(values)}")
    ratios = {
        key: medians["after"][key] / medians["before"][key]
        for key in medians["before"]
        if medians["before"][key]
    }
    print("after / before: " + ", ".join(f"{key}={value:.2f}" for key, value in ratios.items()))


if __name__ == "__main__":
    main()
