"""Kopf's own examples (from Kopf's source distribution) under anyop, with ``import kopf``.

Each runs with ``anyop run`` on both backends: Kopf's object is created and deleted, every
handler succeeds once (or fails for good once, where the example means it to), and the
operator exits cleanly.

``17-admission`` builds every kind of webhook server in turn (an ngrok tunnel among them) and
keeps the last, the auto-server: the validators deny, one with its own HTTP code, the
subresource validator warns, and the mutator injects.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.kopf_examples import kopf_examples, kopf_pythonpath
from tests.e2e.live import LiveOperator
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_engine_e2e import DEADLINE, url
from tests.e2e.test_webhooks_e2e import kex, warned

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

CONFIGS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def wait_until_active(plane: LocalControlPlane, ns: str) -> None:
    """Wait until the API server calls the new webhooks (a dry run gets their warnings)."""
    probe = json.dumps(kex("kex-probe", {}, {"field": "probe"}))
    deadline = time.monotonic() + DEADLINE
    while not warned(plane, "create", "--dry-run=server", "-n", ns, "-f", "-", stdin=probe):
        assert time.monotonic() < deadline, "the webhooks never became active"
        time.sleep(0.2)


def refusal_of(plane: LocalControlPlane, ns: str, body: dict[str, Any]) -> str:
    """What kubectl says when the creation is refused."""
    command = [str(plane.assets.kubectl), f"--kubeconfig={plane.kubeconfig}", "create", "-n", ns]
    result = subprocess.run(
        [*command, "-f", "-"], input=json.dumps(body), capture_output=True, text=True
    )
    assert result.returncode != 0, result.stdout
    return result.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_admission_example_serves_its_last_server_and_its_webhooks(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    source = kopf_examples() / "17-admission" / "example.py"
    monkeypatch.setenv("PYTHONPATH", kopf_pythonpath(tmp_path))
    operator = start_operator(plane, str(source), ns, backend, "--standalone")
    try:
        wait_until_active(plane, ns)
        denial = refusal_of(plane, ns, kex("kex-bad", {}, {"field": "wrong"}))
        with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as api:
            lazy = api.post(url(ns), json=kex("kex-lazy", {}, {"field": "not-allowed"}))
        labelled = kex("kex-1", {"somelabel": "somevalue"}, {"field": "fine"})
        try:
            created = warned(plane, "create", "-n", ns, "-f", "-", stdin=json.dumps(labelled))
        except subprocess.CalledProcessError as e:
            raise AssertionError(f"kex-1 is not created: {e.stderr}") from None
        stored = json.loads(kubectl(plane, "get", "-n", ns, "kex", "kex-1", "-o", "json"))
    finally:
        operator.send_signal(signal.SIGTERM)
        output = operator.communicate(timeout=30)[0]
        for kind in CONFIGS:
            kubectl(plane, "delete", kind, "auto.kopf.dev", "--ignore-not-found")
        print(output)  # shown by pytest if anything above has failed
    assert operator.returncode == 0, output
    assert "Activity 'config' succeeded." in output
    assert "Traceback" not in output
    assert "Meh! I don't like it. Change the field." in denial
    assert lazy.status_code == 555
    assert lazy.json()["message"].endswith("I'm too lazy anyway. Go away!")
    assert "Warning: Accessing as user-agent: kube-apiserver-admission" in created
    assert "Warning: SSL peer is not identified." in created
    assert "Warning: Also update status.field to match spec.field: 'fine' != None" in created
    assert stored["spec"] == {"field": "fine", "injected": 123}


LINE = r"^(?:\[[^]]+\] )?\w+ "
"""The start of a log line about a handler: ``[ns/name] Handler `` or ``Activity ``."""

# Kopf's examples that run on the KopfExample resource alone (no Pods, no tunnels, no pykube),
# with the handlers that are expected to fail for good in each.
PLAIN = {
    "01-minimal": set(),
    "03-exceptions": {
        "instant_failure_with_only_a_message",
        "instant_failure_with_traceback",
        "eventual_failure_with_tracebacks",
    },
    "04-events": set(),
    "05-handlers": set(),
    "06-peering": set(),
    "07-subhandlers": set(),
    "11-filtering-handlers": set(),
}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("example", sorted(PLAIN))
def test_kopfs_plain_examples_handle_kopfs_object_once_and_exit_cleanly(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    example: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    monkeypatch.setenv("PYTHONPATH", kopf_pythonpath(tmp_path))
    source = str(examples / example / "example.py")
    operator = LiveOperator(plane, source, ns, backend, "--standalone", "--verbose")
    try:
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for(f"[{ns}/kopf-example-1] Creation is processed:", timeout=60)
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
        operator.wait_for(f"[{ns}/kopf-example-1] Deleted, really deleted", timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    succeeded = re.findall(rf"{LINE}'([^']+)' succeeded\.$", output, re.MULTILINE)
    assert succeeded
    assert {name: succeeded.count(name) for name in succeeded} == dict.fromkeys(succeeded, 1)
    stops = r"failed (?:permanently|with an exception and will stop)"
    failed = re.findall(rf"{LINE}'([^']+)' {stops}", output, re.MULTILINE)
    assert sorted(failed) == sorted(PLAIN[example]), output
    if not PLAIN[example]:
        assert "Traceback" not in output


ASYNCIO_ON_TRIO = (
    "[{ns}/kopf-example-1] Daemon 'background_async' failed permanently: background_async() "
    "uses asyncio (no running event loop), but the operator runs on Trio (--backend trio)."
)
BACKGROUND = {
    ("15-timers", "asyncio"): ["Ping from a sync timer: field='value'",
                               "Ping from an async timer: field='value'"],
    ("15-timers", "trio"): ["Ping from a sync timer: field='value'",
                            "Ping from an async timer: field='value'"],
    ("14-daemons", "asyncio"): ["=> Ping from a sync daemon: field='value', retry=3",
                                "=> Ping from an async daemon: field='value'"],
    # Its async daemon sleeps with asyncio: on Trio, that is said once, clearly.
    ("14-daemons", "trio"): ["=> Ping from a sync daemon: field='value', retry=3",
                             ASYNCIO_ON_TRIO],
}  # fmt: skip


@pytest.mark.parametrize(("example", "backend"), sorted(BACKGROUND))
def test_kopfs_daemon_and_timer_examples_run_in_the_background_and_stop(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    example: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    monkeypatch.setenv("PYTHONPATH", kopf_pythonpath(tmp_path))
    source = str(examples / example / "example.py")
    operator = LiveOperator(plane, source, ns, backend, "--standalone")
    try:
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        for line in BACKGROUND[example, backend]:
            operator.wait_for(line.format(ns=ns), timeout=60)
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    assert output.count("uses asyncio") == (backend == "trio" and example == "14-daemons")
