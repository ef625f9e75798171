"""Kopf's remaining examples under anyop with ``import kopf``, against the real local cluster.

Each asserts what Kopf's README for the example (or Kopf's own test of it) says it does. An
example whose code uses asyncio itself (its locks, events, tasks or sleeps) runs on asyncio;
on Trio, its first such handler fails for good with one line that says why. The others run on
both backends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.conftest import EXAMPLES
from tests.e2e.kopf_examples import kopf_examples, kopf_pythonpath
from tests.e2e.live import LiveOperator

from anyop.testing.controlplane import LocalControlPlane, free_port
from anyop.testing.pytest_plugin import kubectl

NAME = "kopf-example-1"


def events_about(plane: LocalControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    """The Events about the object ``name`` in ``ns``, oldest first."""
    selector = f"involvedObject.name={name}"
    found = json.loads(
        kubectl(plane, "get", "events", "-n", ns, "--field-selector", selector, "-o", "json")
    )
    items: list[dict[str, Any]] = found["items"]
    return items


def start(
    plane: LocalControlPlane,
    ns: str,
    example: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *more: str,
) -> LiveOperator:
    """``anyop run`` Kopf's example, with ``import kopf`` meaning anyop."""
    monkeypatch.setenv("PYTHONPATH", kopf_pythonpath(tmp_path))
    source = str(kopf_examples() / example / "example.py")
    return LiveOperator(plane, source, ns, backend, "--standalone", "--verbose", *more)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_08_events_spies_on_raw_events_and_posts_no_events(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    operator = start(plane, ns, "08-events", backend, tmp_path, monkeypatch)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for("Event received: {'type': 'ADDED'", timeout=60)
        time.sleep(1)  # anything it would store, it would have stored by now
        stored = json.loads(kubectl(plane, "get", "-n", ns, "kex", NAME, "-o", "json"))
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
        operator.wait_for("Event received: {'type': 'DELETED'", timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    failed = f"[{ns}/{NAME}] Handler 'event_fn_with_error' failed with an exception. Will ignore."
    events = events_about(plane, ns, NAME)
    received = re.findall(r"^Event received: \{'type': '?(\w+)'?, ", output, re.MULTILINE)
    assert received == ["ADDED", "DELETED"], output
    assert output.count(failed) == len(received), output
    assert output.count(f"[{ns}/{NAME}] Handler 'normal_event_fn' succeeded.") == 2
    assert "Exception: Oops!" in output
    # The object is only watched: nothing is stored on it, no Events are posted about it.
    assert events == []
    assert "status" not in stored
    assert "finalizers" not in stored["metadata"]
    applied = "kubectl.kubernetes.io/last-applied-configuration"
    assert set(stored["metadata"]["annotations"]) == {"someannotation", applied}


def create_pod(
    plane: LocalControlPlane, ns: str, name: str, labels: dict[str, str] | None = None
) -> None:
    """A Pod of busybox (KWOK's fake nodes run it), created once the namespace can have Pods."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}]},
    }
    deadline = time.monotonic() + 60
    while True:  # a new namespace has no ServiceAccount for a moment
        try:
            kubectl(plane, "create", "-f", "-", stdin=json.dumps(pod))
            break
        except AssertionError as e:
            if "serviceaccount" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    phase = "--for=jsonpath={.status.phase}=Running"
    kubectl(plane, "wait", "-n", ns, f"pod/{name}", phase, "--timeout=60s")


def probes(port: int, expected: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """The probes' answer once it is ``expected`` (Kopf caches it for 10 s), or the last one."""
    deadline, found = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            found = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
        if found == expected:
            break
        time.sleep(0.5)
    return found


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_16_indexing_serves_its_indexes_to_probes_and_a_timer(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, pod_namespace, kopf_examples()
    pod = f"kopf-16-{ns}"  # in `default`, the one namespace that its timer reports besides
    port = free_port()  # kube-system
    liveness = f"--liveness=http://127.0.0.1:{port}/healthz"
    create_pod(plane, "default", pod, {"kopf-example": ns})
    more = ("-n", "default", liveness)
    operator = start(plane, ns, "16-indexing", backend, tmp_path, monkeypatch, *more)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for(f"('kopf-example', '{ns}'): ['{pod}']", timeout=60)
        deadline, running = time.monotonic() + 60, []
        while f"default::{pod}" not in running and time.monotonic() < deadline:
            time.sleep(0.5)
            got = kubectl(plane, "get", "-n", ns, "kex", NAME, "-o", "json")
            running = json.loads(got).get("status", {}).get("running-pods", [])
        pods = sorted(
            item["metadata"]["name"]
            for item in json.loads(kubectl(plane, "get", "pods", "-A", "-o", "json"))["items"]
            if item["metadata"]["namespace"] in ("default", ns)
        )
        answer = probes(port, {"pod_count": len(pods), "pod_names": pods})
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
    finally:
        output = operator.stop()
        kubectl(plane, "delete", "pod", "-n", "default", pod, "--wait=false")
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    assert f"default::{pod}" in running, output
    assert all(entry.startswith(("default::", "kube-system::")) for entry in running)
    assert sorted(answer["pod_names"]) == pods, answer
    assert answer["pod_count"] == len(pods)


def test_kopfs_13_hooks_start_log_in_probe_and_clean_up(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kopf, too, names the activities as such ("Activity 'login_fn' succeeded.").
    # asyncio only: its handlers share an asyncio.Lock, asyncio.Events and asyncio tasks.
    plane, ns = anyop_controlplane, pod_namespace
    port, pod = free_port(), "kopf-13-pod"
    create_pod(plane, ns, pod)
    liveness = f"--liveness=http://127.0.0.1:{port}/healthz"
    operator = start(plane, ns, "13-hooks", "asyncio", tmp_path, monkeypatch, liveness)
    try:
        operator.wait_for(f"[{ns}/{pod}] Handler 'pod_task' succeeded.", timeout=60)
        answer = probes(port, {"tasks_count": 1, "monitored_objects": {ns: [pod]}})
        operator.wait_for(f"[{ns}/{pod}] Served by the background task.", timeout=30)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    assert answer == {"tasks_count": 1, "monitored_objects": {ns: [pod]}}
    lines = [
        "Initialising the task-lock...",
        "Activity 'startup_fn_simple' succeeded.",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 3s",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 2s",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 1s",
        "Starting retried...",
        "Activity 'startup_fn_retried' succeeded.",
        "Logging in in 2s...",
        "Activity 'login_fn' succeeded.",
        f"[{ns}/{pod}] Handler 'pod_task' succeeded.",
        "Cleaning up...",
        "All pod-tasks are requested to stop...",
        "Activity 'cleanup_fn' succeeded.",
    ]
    assert [line for line in lines if line not in output] == [], output
    assert output.count("Activity 'startup_fn_simple' succeeded.") == 1
    order = [output.index(line) for line in lines if line in output]
    assert order[:7] == sorted(order[:7]), output


def test_kopfs_12_embedded_runs_the_operator_in_a_thread_of_its_app(
    anyop_controlplane: LocalControlPlane,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    # asyncio only: the app makes its own asyncio loop for kopf.operator() in its thread.
    plane, source = anyop_controlplane, kopf_examples() / "12-embedded" / "example.py"
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig),
           "PYTHONPATH": kopf_pythonpath(tmp_path)}  # fmt: skip
    app = subprocess.run(
        [sys.executable, str(source)], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    output = app.stdout + app.stderr
    assert app.returncode == 0, output
    assert "Traceback" not in output
    lines = ["Starting the main app."]
    for step in range(3):
        lines += [f"Do the main app activity here. Step {step + 1}/3.",
                  f"Hello, kopf-example-{step}!", f"Good bye, kopf-example-{step}!"]  # fmt: skip
    lines += ["Exiting the main app."]
    assert [line for line in lines if line not in output] == [], output
    position = 0  # in this order (other namespaces' objects of these names may come between)
    for line in lines:
        assert line in output[position:], f"{line!r} is not after its predecessor:\n{output}"
        position = output.index(line, position) + len(line)
    left = kubectl(plane, "get", "kex", "-n", "default", "-o", "name")
    assert not [name for name in left.split() if re.search(r"/kopf-example-[012]$", name)]


def test_kopfs_99_all_at_once_starts_handles_posts_adopts_and_cleans_up(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # asyncio only: its start-up and clean-up handlers sleep with asyncio.sleep().
    plane, ns, examples = anyop_controlplane, pod_namespace, kopf_examples()
    monkeypatch.setenv("ANYOP_EXECUTION__DEFAULT_BACKOFF", "3")  # Kopf's 60 s, too long here
    operator = start(plane, ns, "99-all-at-once", "asyncio", tmp_path, monkeypatch)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        # create_2 fails once, as meant, and is retried after the default backoff.
        operator.wait_for(f"[{ns}/{NAME}] Creation is processed:", timeout=60)
        operator.wait_for("This pod is special for us.", timeout=60)
        pods = json.loads(
            kubectl(plane, "get", "pods", "-n", ns, "-l", "application=kopf-example-10",
                    "-o", "json")
        )["items"]  # fmt: skip
        lst = json.dumps({"spec": {"lst": ["a", "b"]}})
        kubectl(plane, "patch", "-n", ns, "kex", NAME, "--type=merge", "-p", lst)
        operator.wait_for(f"[{ns}/{NAME}] Updating is processed:", timeout=60)
        stored = json.loads(kubectl(plane, "get", "-n", ns, "kex", NAME, "-o", "json"))
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
        operator.wait_for(f"[{ns}/{NAME}] Deleted, really deleted", timeout=60)
        events = events_about(plane, ns, NAME)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    startup = [
        "Starting in 1s...",
        "Activity 'startup_fn_simple' succeeded.",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 3s",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 2s",
        "Activity 'startup_fn_retried' failed temporarily: Going to succeed in 1s",
        "Starting retried...",
        "Activity 'startup_fn_retried' succeeded.",
        "Cleaning up in 3s...",
        "Activity 'cleanup_fn' succeeded.",
    ]
    assert [line for line in startup if line not in output] == [], output
    assert stored["status"]["create_1"] == {"job1-status": 100}
    assert stored["status"]["create_2"] == {"job2-status": 100}
    retried = "Handler 'create_2' failed with an exception and will try again in 3 seconds: Whoops!"
    assert f"[{ns}/{NAME}] {retried}" in output
    assert "Exception: Whoops!" in output
    assert "Handling the FIELD = None -> ['a', 'b']" in output
    assert "Handling the diff\n[('add', ('spec', 'lst'), None, ['a', 'b'])]\n" in output
    assert f"[{ns}/{NAME}] Handler 'delete' succeeded." in output
    # Its Pod is adopted and labelled, and the event handler sees it.
    assert len(pods) == 1, pods
    owner = pods[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("KopfExample", NAME, True)
    assert pods[0]["metadata"]["labels"]["somelabel"] == "somevalue"
    assert f"[{ns}/{pods[0]['metadata']['name']}] This pod is special for us." in output
    # Its own Events, one each; with Kopf's defaults (settings.posting.loggers is false), the
    # log lines are not posted; its Events about no children (an empty list) are no Events.
    posted = [(e["type"], e["reason"], e.get("message", ""), e.get("count", 1)) for e in events]
    assert sorted(posted) == [
        ("Normal", "AnyReason", "", 1),
        ("Warning", "SomeReason", "Cannot do something", 1),
    ]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_02_children_creates_an_adopted_pod_that_goes_with_its_parent(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, pod_namespace, kopf_examples()
    operator = start(plane, ns, "02-children", backend, tmp_path, monkeypatch)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for(f"[{ns}/{NAME}] Creation is processed:", timeout=60)
        parent = json.loads(kubectl(plane, "get", "-n", ns, "kex", NAME, "-o", "json"))
        listed = kubectl(plane, "get", "-n", ns, "kopfexamples")
        found = kubectl(plane, "get", "pods", "-n", ns, "-l", "somelabel=somevalue", "-o", "json")
        pods = json.loads(found)["items"]
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
        operator.wait_for(f"[{ns}/{NAME}] Deleted, really deleted", timeout=60)
        # The garbage collector deletes the child once its owner is gone.
        gone = subprocess.run(
            [str(plane.assets.kubectl), f"--kubeconfig={plane.kubeconfig}", "wait", "-n", ns,
             "--for=delete", "pods", "-l", "somelabel=somevalue", "--timeout=60s"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    assert len(pods) == 1, pods
    pod = pods[0]
    assert parent["status"]["create_fn"] == {"children": [pod["metadata"]["uid"]]}
    assert re.search(rf"^{NAME} +1m +\[\"{pod['metadata']['uid']}\"\]", listed, re.M), listed
    assert pod["metadata"]["name"].startswith(f"{NAME}-")
    owner = pod["metadata"]["ownerReferences"]
    assert owner == [{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": NAME,
                      "uid": parent["metadata"]["uid"], "controller": True,
                      "blockOwnerDeletion": True}]  # fmt: skip
    assert pod["spec"]["containers"][0]["env"] == [{"name": "FIELD", "value": "value"}]
    assert "sleep 1m" in pod["spec"]["containers"][0]["args"][0]
    assert gone.returncode == 0, gone.stderr


def test_kopfs_10_builtins_watches_pods_and_cancels_their_killers(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # asyncio only: its handlers keep asyncio tasks and sleep with asyncio.sleep().
    plane, ns = anyop_controlplane, pod_namespace
    operator = start(plane, ns, "10-builtins", "asyncio", tmp_path, monkeypatch)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        create_pod(plane, ns, "kopf-pod-1")
        create_pod(plane, ns, "kopf-pod-2")  # left alone: killed in 30 s
        operator.wait_for(f"[{ns}/kopf-pod-1] === Pod killing happens in 30s.", timeout=60)
        kubectl(plane, "delete", "pod", "-n", ns, "kopf-pod-1", "--timeout=60s")
        operator.wait_for(f"[{ns}/kopf-pod-1] === Pod killing is cancelled!", timeout=60)
        operator.wait_for(f"[{ns}/kopf-pod-2] === Pod killing happens NOW!", timeout=60)
        kubectl(plane, "wait", "-n", ns, "--for=delete", "pod/kopf-pod-2", "--timeout=60s")
        operator.wait_for(f"[{ns}/kopf-pod-2] Handler 'pod_deleted' succeeded.", timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    # What Kopf's own test of this example asserts.
    assert f"[{ns}/kopf-pod-1] Creation is in progress:" in output
    assert f"[{ns}/kopf-pod-1] Deletion is in progress:" in output
    assert f"[{ns}/kopf-pod-1] Handler 'pod_in_sight' succeeded." in output
    assert f"[{ns}/kopf-pod-1] Handler 'pod_deleted' succeeded." in output
    assert f"[{ns}/kopf-pod-2] === Pod killing is cancelled!" not in output
    assert output.count("=== Pod killing happens NOW!") == 1


def test_kopfs_09_testing_passes_its_own_test_with_kopfs_runner(
    anyop_controlplane: LocalControlPlane,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    # Kopf's own test of the example, run by pytest as Kopf's README says, with
    # kopf.testing.KopfRunner. It uses `kubectl` and the `default` namespace, and applies Kopf's
    # crd.yaml (the same CRD but for its short names): ours is re-applied afterwards.
    plane, examples = anyop_controlplane, kopf_examples()
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig),
           "PATH": os.pathsep.join([str(plane.assets.kubectl.parent), os.environ["PATH"]]),
           "PYTHONPATH": kopf_pythonpath(tmp_path)}  # fmt: skip
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
               "-p", "no:anyop", "-q", "test_example_09.py"]  # fmt: skip
    try:
        run = subprocess.run(
            command, env=env, cwd=examples / "09-testing", capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip
    finally:
        kubectl(plane, "apply", "-f", str(EXAMPLES / "crd.yaml"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_04_events_posts_each_of_its_events_once(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    operator = start(plane, ns, "04-events", backend, tmp_path, monkeypatch)
    try:
        operator.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for(f"[{ns}/{NAME}] Creation is processed:", timeout=60)
        deadline, events = time.monotonic() + 30, []
        while len(events) < 4 and time.monotonic() < deadline:  # they are posted in background
            time.sleep(0.5)
            events = events_about(plane, ns, NAME)
        time.sleep(2)  # and no more come
        events = events_about(plane, ns, NAME)
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    # With Kopf's defaults (settings.posting.loggers is false), only the handler's own Events.
    # kopf.exception() posts an `Error` Event; anyop's a `Warning` one (docs/events.md says why).
    posted = [(e["type"], e["reason"], e.get("message", ""), e.get("count", 1)) for e in events]
    assert sorted(posted) == [
        ("Normal", "SomeReason", "Some message", 1),
        ("SomeType", "SomeReason", "Some message", 1),
        ("Warning", "SomeReason", "Some exception: Exception text.", 1),
        ("Warning", "SomeReason", "Some message", 1),
    ]


ON_TRIO = (
    "{fn}() uses asyncio (no running event loop), but the operator runs on Trio (--backend trio)."
)
ASYNCIO_ONLY = {
    "10-builtins": ("[{ns}/kopf-pod-1] Handler 'pod_in_sight' failed permanently: ", 0),
    "13-hooks": ("Activity 'login_fn' failed permanently: ", 1),  # the operator cannot log in
    "99-all-at-once": ("Activity 'startup_fn_simple' failed permanently: ", 1),
}


@pytest.mark.parametrize("example", sorted(ASYNCIO_ONLY))
def test_kopfs_asyncio_examples_on_trio_say_once_which_handler_uses_asyncio(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    example: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    prefix, code = ASYNCIO_ONLY[example]
    fn = re.findall(r"'(\w+)' failed", prefix)[0]
    line = prefix.format(ns=ns) + ON_TRIO.format(fn=fn)
    operator = start(plane, ns, example, "trio", tmp_path, monkeypatch)
    try:
        if example == "10-builtins":
            operator.wait_for("The operator is ready", timeout=60)
            create_pod(plane, ns, "kopf-pod-1")
        operator.wait_for(line, timeout=60)
        if code:  # it stops by itself
            operator.process.wait(timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == code, output
    assert output.count(line) == 1, output
    assert "Traceback" not in output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_06_peering_pauses_same_priority_peers_and_yields_to_dev(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    peering_crds: None,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kopf's README: A and B of the same priority both warn and pause; B stops and A resumes;
    # B again with --dev: A pauses in its favour, and resumes when it stops. In Kopf's own
    # KopfPeering `default`, which an operator without --peering (or --standalone) uses.
    plane, ns = anyop_controlplane, anyop_namespace
    peering = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "default"}}
    kubectl(plane, "apply", "-n", ns, "-f", "-", stdin=json.dumps(peering))
    monkeypatch.setenv("PYTHONPATH", kopf_pythonpath(tmp_path))
    source = str(kopf_examples() / "06-peering" / "example.py")
    a = LiveOperator(plane, source, ns, backend, "--verbose")
    b: LiveOperator | None = None
    try:
        a.wait_for("The operator is ready", timeout=60)
        b = LiveOperator(plane, source, ns, backend, "--verbose")
        a.wait_for("Possibly conflicting operators with the same priority: [", timeout=60)
        b.wait_for("Possibly conflicting operators with the same priority: [", timeout=60)
        a.wait_for("Pausing all operators, including self: [", timeout=60)
        b_output = b.stop()
        a.wait_for("Resuming operations after the pause.", timeout=60)
        b = LiveOperator(plane, source, ns, backend, "--verbose", "--dev")
        a.wait_for("Pausing operations in favour of [", timeout=60)
        b.wait_for("The operator is ready", timeout=60)
        b.stop()
        a.wait_for("Resuming operations after the pause.", times=2, timeout=60)
    finally:
        output = a.stop()
        if b is not None:
            b.stop()
    assert a.process.returncode == 0, output
    assert b.process.returncode == 0, b.output
    assert "Pausing all operators, including self: [" in b_output
    assert "Traceback" not in output + b_output


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_kopfs_05_handlers_create_update_resume_and_delete_in_their_order(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    obj = str(examples / "obj.yaml")
    first = start(plane, ns, "05-handlers", backend, tmp_path, monkeypatch)
    second: LiveOperator | None = None
    try:
        first.wait_for("The operator is ready", timeout=60)
        kubectl(plane, "apply", "-n", ns, "-f", obj)
        first.wait_for(f"[{ns}/{NAME}] Creation is processed:", timeout=60)
        change = json.dumps({"spec": {"field": "newvalue", "newfield": 100}})
        kubectl(plane, "patch", "-n", ns, "-f", obj, "--type=merge", "-p", change)
        first.wait_for(f"[{ns}/{NAME}] Updating is processed:", timeout=60)
        before = first.stop()
        second = start(plane, ns, "05-handlers", backend, tmp_path, monkeypatch)
        second.wait_for(f"[{ns}/{NAME}] Resuming is processed:", timeout=60)
        kubectl(plane, "delete", "-n", ns, "-f", obj, "--timeout=60s")
        second.wait_for(f"[{ns}/{NAME}] Deleted, really deleted", timeout=60)
    finally:
        before = first.stop()
        after = second.stop() if second is not None else ""
    assert first.process.returncode == 0, before
    assert second is not None
    assert second.process.returncode == 0, after
    printed = [line for line in (before + after).splitlines() if re.match(r"^[A-Z]{5,}\b", line)]
    # As in Kopf 1.45, the field handler (of no reason) also runs on creation, from None.
    assert printed == [
        "CREATED 1st", "CREATED 2nd", "FIELD CHANGED: None -> value",
        "UPDATED", "FIELD CHANGED: value -> newvalue",
        "RESUMED 1st", "RESUMED 2nd", "DELETED 1st", "DELETED 2nd",
    ], before + after  # fmt: skip
    assert "Traceback" not in before + after


def test_kopfs_14_daemons_report_retries_and_stop_gracefully_or_by_force(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # asyncio only: its async daemon sleeps with asyncio.sleep() (on Trio: the test above).
    plane, ns, examples = anyop_controlplane, anyop_namespace, kopf_examples()
    operator = start(plane, ns, "14-daemons", "asyncio", tmp_path, monkeypatch)
    try:
        kubectl(plane, "apply", "-n", ns, "-f", str(examples / "obj.yaml"))
        operator.wait_for("=> Ping from a sync daemon: field='value', retry=3", timeout=60)
        operator.wait_for("=> Ping from an async daemon: field='value'", timeout=60)
        stored = json.loads(kubectl(plane, "get", "-n", ns, "kex", NAME, "-o", "json"))
        kubectl(plane, "delete", "-n", ns, "-f", str(examples / "obj.yaml"), "--timeout=60s")
        operator.wait_for(f"[{ns}/{NAME}] Deleted, really deleted", timeout=60)
    finally:
        output = operator.stop()
    assert operator.process.returncode == 0, output
    assert "Traceback" not in output
    assert stored["status"]["message"] == "Failed 3 times."  # the sync daemon's last failure
    for fn in ("background_sync", "background_async"):  # retries 0, 1 and 2 fail
        assert output.count(f"Daemon '{fn}' failed temporarily: Simulated failure.") == 3
    lines = [  # its cancellation_backoff=1.0 passes; its cancellation_timeout=0.5 is enough
        f"[{ns}/{NAME}] Daemon 'background_async' is signalled to exit gracefully.",
        f"[{ns}/{NAME}] Daemon 'background_async' is signalled to exit by force.",
        f"[{ns}/{NAME}] Daemon 'background_sync' is signalled to exit gracefully.",
        f"[{ns}/{NAME}] Daemon 'background_sync' has exited gracefully.",  # it checks `stopped`
    ]
    assert [line for line in lines if line not in output] == [], output
    assert "did not exit in time" not in output
