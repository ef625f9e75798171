"""Sampling profiles of operator runs: py-spy attached to a process, and where its samples went.

``python -m bench.compare ... --profile DIR`` attaches ``py-spy record`` (installed by ``nox -s
bench``) to every anyop operator it starts and writes one file of folded stacks per run into
``DIR`` (``<framework>-<n>.folded``; py-spy's ``raw`` format: one ``frame;frame;... count`` line
per distinct stack). A profiled run's CPU and time include py-spy's sampling: use the profile for
shares, the unprofiled runs for numbers.

``python -m bench.profiles FILE... [--under FUNCTION] [--self] [--top 40]`` prints the functions
by their share of the samples: of all samples, or of those whose stack passes through
``FUNCTION`` (e.g. ``Reconciler.__call__``, or ``apply_patch``). Inclusive by default (a function
counts in every sample it is on the stack of, once); ``--self`` counts only the innermost frame.
Samples of threads waiting in ``Condition.wait`` or of an event loop waiting in ``select`` are
left out: they are idle, not busy.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["IDLE_FRAMES", "attach", "frame_name", "py_spy", "samples", "shares"]

IDLE_FRAMES = re.compile(
    r"(^|\.)(select|poll) \(selectors\.py\)$"  # asyncio's loop waiting for its sockets
    r"|\.get_events \(_io_epoll\.py\)$"  # Trio's
    r"|^Condition\.wait \(threading\.py\)$"  # a worker thread with nothing to do
)
"""Innermost frames (as :func:`frame_name` names them) of waits, not work."""

_LOCATION = re.compile(r" \((?:[^()]*/)?([^/():]+):\d+\)$")


def py_spy() -> str:
    """The py-spy program: next to this Python (the bench venv's), else on the ``PATH``.

    Raises:
        RuntimeError: There is none (``nox -s bench`` installs it).
    """
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("--profile needs py-spy: run the benchmarks with `nox -s bench`.")
    return found


def attach(pid: int, path: Path, *, rate: int = 1000) -> subprocess.Popen[bytes]:
    """Start ``py-spy record`` on a running process; it writes ``path`` once the process exits.

    Raises:
        RuntimeError: py-spy is not installed (see :func:`py_spy`).
    """
    argv = [py_spy(), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
            "--output", str(path), "--nonblocking"]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def frame_name(frame: str) -> str:
    """A frame named by its function and file only, whichever of its lines the sample was on:
    ``Reconciler._cycle (anyop/engine/cycle/reconciler.py:202)`` as ``Reconciler._cycle
    (reconciler.py)``.
    """
    return _LOCATION.sub(r" (\1)", frame)


def samples(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """The stacks of folded lines (outermost frame first) and their sample counts; idle ones and
    lines that are not ``stack count`` are skipped."""
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [frame_name(frame) for frame in stack.split(";")]
        if not IDLE_FRAMES.search(frames[-1]):
            yield frames, int(count)


def shares(
    stacks: Iterable[tuple[list[str], int]], *, under: str | None = None, inclusive: bool = True
) -> tuple[int, list[tuple[float, str]]]:
    """The samples counted, and each function's share of them, largest first.

    Args:
        stacks: Stacks and counts, as :func:`samples` gives them.
        under: Count only samples whose stack has a function whose name starts with this, and
            only the frames from its outermost call inwards.
        inclusive: A function counts in every sample it is on the stack of (once per sample);
            else only in those where it is the innermost frame.
    """
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for frames, count in stacks:
        if under is not None:
            start = next((i for i, frame in enumerate(frames) if frame.startswith(under)), None)
            if start is None:
                continue
            frames = frames[start:]
        total += count
        for name in set(frames) if inclusive else frames[-1:]:
            counts[name] += count
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return total, [(count / total, name) for name, count in ranked] if total else []


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="Folded stacks (py-spy's raw format).")
    parser.add_argument("--under", help="Only the samples through this function.")
    parser.add_argument("--self", action="store_true", help="Innermost frames only.")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    if missing := [str(path) for path in args.files if not path.is_file()]:
        parser.error(f"no such file: {', '.join(missing)}")

    def stacks() -> Iterator[tuple[list[str], int]]:
        for path in args.files:
            with path.open() as lines:
                yield from samples(lines)

    total, ranked = shares(stacks(), under=args.under, inclusive=not args.self)
    print(f"{total} busy samples" + (f" through {args.under}" if args.under else ""))
    for share, name in ranked[: args.top]:
        print(f"{share * 100:5.1f} %  {name}")


if __name__ == "__main__":
    main()
