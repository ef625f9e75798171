"""An operator process that dies between a side effect and its progress write: RELIABILITY.md §5
row 31.

`anyop run` in a child process; its handler writes a ledger line (the side effect), then the
process ends at once with ``os._exit`` before anyop can record the handler as done. The next
operator runs the handler again (at-least-once), and the re-run sees the same idempotency key
(uid, handler id, generation), so a handler can dedupe its side effects by it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane

CRASHING_OPERATOR = textwrap.dedent(
    """
    import json, os
    import anyop

    LEDGER = {ledger!r}

    @anyop.on.create("kopfexamples", id="create_fn")
    def create_fn(uid, body, **_):
        key = [uid, "create_fn", body["metadata"]["generation"]]
        with open(LEDGER) as f:
            seen = [json.loads(line)["key"] for line in f]
        with open(LEDGER, "a") as f:  # the side effect
            f.write(json.dumps({{"key": key, "pid": os.getpid()}}) + "\\n")
        if key not in seen:
            os._exit(1)  # dies before the handler's success is written
        return "done"
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
    finally:
        second.stop()
    assert status["create_fn"] == "done"
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [entry["pid"] for entry in entries] == [first.pid, second.pid]  # once per process
    assert entries[0]["key"] == entries[1]["key"]  # the same key: the re-run can dedupe
