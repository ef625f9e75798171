"""An operator process that dies between a side effect and its progress write: RELIABILITY.md §5
row 31.

`anyop run` in a child process; its handler writes a ledger line (the side effect), then the
process ends at once with ``os._exit`` before anyop can record the handler as done. The next
operator runs the handler again (at-least-once), and the re-run gets the same
``idempotency_key`` kwarg (derived from the uid, the handler id, the generation and the change),
so a handler can dedupe its side effects by it. A later change gets another key.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

CRASHING_OPERATOR = textwrap.dedent(
    """
    import json, os
    import anyop

    LEDGER = {ledger!r}

    @anyop.on.create("kopfexamples", id="create_fn")
    def create_fn(idempotency_key, **_):
        key = idempotency_key
        with open(LEDGER) as f:
            seen = [json.loads(line)["key"] for line in f]
        with open(LEDGER, "a") as f:  # the side effect
            f.write(json.dumps({{"key": key, "pid": os.getpid()}}) + "\\n")
        if key not in seen:
            os._exit(1)  # dies before the handler's success is written
        return "done"

    @anyop.on.update("kopfexamples", id="update_fn")
    def update_fn(idempotency_key, **_):
        with open(LEDGER, "a") as f:
            f.write(json.dumps({{"key": idempotency_key, "pid": os.getpid()}}) + "\\n")
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_row31_a_crash_after_the_side_effect_reruns_the_handler_with_the_same_key(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    ledger = tmp_path / "ledger.jsonl"
    ledger.touch()
    source = tmp_path / "crashing_operator.py"
    source.write_text(CRASHING_OPERATOR.format(ledger=str(ledger)))
    apply_kex(plane, ns, "crashing")
    first = LiveOperator(plane, str(source), ns, backend)
    assert first.process.wait(timeout=60) == 1  # it died in the handler, as the fault says
    first.stop()
    second = LiveOperator(plane, str(source), ns, backend)
    try:
        status = wait_for_status(plane, ns, "crashing")
        kubectl(plane, "label", "-n", ns, "kex", "crashing", "change=later")
        wait_for_lines(ledger, 3)
    finally:
        second.stop()
    assert status["create_fn"] == "done"
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [entry["pid"] for entry in entries] == [first.pid, second.pid, second.pid]
    keys = [entry["key"] for entry in entries]
    assert keys[0] == keys[1]  # the same key: the re-run can dedupe
    assert keys[2] != keys[0]  # a change of labels only (the same generation): another key
    assert all(isinstance(key, str) and len(key) == 32 for key in keys)


def wait_for_lines(path: Path, count: int) -> None:
    """Wait until the ledger has ``count`` lines (the handler of the later change ran)."""
    deadline = time.monotonic() + 60
    while len(path.read_text().splitlines()) < count:
        assert time.monotonic() < deadline, path.read_text()
        time.sleep(0.2)
