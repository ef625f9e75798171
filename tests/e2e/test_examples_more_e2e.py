"""The examples 05 and later run as their READMEs say, and show what their READMEs promise.

Each runs with ``anyop run`` (or ``python`` for the embedding example) in a child process against
the real control plane, on both backends; the tests look at what a user would: the output, the
objects' status, child objects, Events and the probe endpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_cli_run import start_operator

from anyop.testing.controlplane import LocalControlPlane, free_port
from anyop.testing.pytest_plugin import kubectl

EXAMPLES = Path(__file__).parents[2] / "examples"
DEADLINE = 60  # seconds; only reached when something is broken
DIFFBASE = "last-handled-configuration"  # in status.anyop, by default
BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])


Cluster = tuple[LocalControlPlane, str]


@pytest.fixture
def cluster(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, kopfexample_crd: str
) -> Cluster:
    """The control plane and a fresh namespace in it, with the KopfExample CRD applied."""
    return anyop_controlplane, anyop_namespace


class Output:
    """The lines a child process prints, collected by a thread as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    @property
    def text(self) -> str:
        """Everything printed so far."""
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, fragment: str, count: int = 1) -> str:
        """Wait until ``count`` lines contain ``fragment``; return the last of them."""

        def found() -> list[str]:
            return [line for line in self.lines if fragment in line]

        with self._changed:
            if not self._changed.wait_for(lambda: len(found()) >= count, timeout=DEADLINE):
                raise AssertionError(f"No {count}x {fragment!r} in the output:\n{self.text}")
            return found()[-1]

    def stop(self) -> str:
        """SIGTERM, then everything printed until the exit (which must be a clean one)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=DEADLINE)
        self._reader.join(timeout=DEADLINE)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.text


@contextmanager
def running_example(
    plane: LocalControlPlane, example: str, namespace: str, backend: str, *more: str
) -> Iterator[Output]:
    """``anyop run examples/<example>/example.py -n NAMESPACE`` for the duration of the block."""
    source = str(EXAMPLES / example / "example.py")
    output = Output(start_operator(plane, source, namespace, backend, *more))
    try:
        yield output
    finally:
        output.stop()
    assert output.process.returncode == 0, output.text


def get(plane: LocalControlPlane, namespace: str, *what: str) -> dict[str, Any]:
    """``kubectl get ... -o json``, parsed."""
    result: dict[str, Any] = json.loads(kubectl(plane, "get", "-n", namespace, *what, "-o", "json"))
    return result


def find(plane: LocalControlPlane, namespace: str, *what: str) -> dict[str, Any] | None:
    """``kubectl get ... -o json``, parsed; ``None`` if there is no such object (yet)."""
    found = kubectl(plane, "get", "-n", namespace, *what, "--ignore-not-found", "-o", "json")
    return json.loads(found) if found.strip() else None


def until(check: Callable[[], Any], what: str) -> Any:
    """Call ``check`` until it returns something truthy; return that."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.2)
    raise AssertionError(f"Not within {DEADLINE} s: {what}")


def apply(plane: LocalControlPlane, namespace: str, body: dict[str, Any]) -> None:
    kubectl(plane, "apply", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def kex(name: str, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A KopfExample body with extra metadata (labels, annotations)."""
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name, **meta}, "spec": spec or {}}  # fmt: skip


# -- 05-children ---------------------------------------------------------------------------------


@BACKENDS
def test_children_a_pod_is_created_and_adopted_by_its_kopfexample(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    with running_example(plane, "05-children", ns, backend) as output:
        apply(plane, ns, kex("kex-5", {"duration": 60}, labels={"app": "demo"}))
        status = wait_for_status(plane, ns, "kex-5")
        output.wait_for(f"[{ns}/kex-5] Pod child is created: kex-5-")
    parent = get(plane, ns, "kex", "kex-5")
    pods = get(plane, ns, "pods", "-l", "app=demo")["items"]
    assert len(pods) == 1
    pod = pods[0]["metadata"]
    assert status["create_fn"] == {"children": [pod["uid"]]}
    assert pod["name"].startswith("kex-5-")  # generateName: the parent's name and a suffix
    assert pod["namespace"] == ns
    assert pod["labels"] == {"app": "demo"}
    assert pod["ownerReferences"] == [
        {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": "kex-5",
         "uid": parent["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert pods[0]["spec"]["containers"][0]["command"][-1] == "echo 'Hello, world!'; sleep 60"
    # No garbage collector runs in the bare control plane: in a real cluster, deleting kex-5
    # deletes the pod too, because of the owner reference asserted above.


# -- 06-exceptions -------------------------------------------------------------------------------


@BACKENDS
def test_exceptions_temporary_ones_are_retried_permanent_ones_are_final(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    with running_example(plane, "06-exceptions", ns, backend) as output:
        apply(plane, ns, kex("kex-6", {"field": "not-a-number"}))
        output.wait_for(f"[{ns}/kex-6] Creation is processed: 2 succeeded; 3 failed.")
        status = get(plane, ns, "kex", "kex-6")["status"]
    lines = output.text.splitlines()
    prefix = f"[{ns}/kex-6] Handler"

    def count(line: str) -> int:
        return sum(1 for printed in lines if printed == f"{prefix} {line}")

    assert status["waits_for_a_dependency"] == "succeeded after 2 retries"
    assert status["dependency"] == "ready"  # patched on every attempt, the last one wins
    assert status["flaky_backend"] == "the backend answered"
    assert not {"never_works", "gives_up_eventually", "strict_parsing"} & set(status)
    assert count("'never_works' failed permanently: "
                 "This object cannot be served, and retrying will not help.") == 1  # fmt: skip
    assert count("'waits_for_a_dependency' failed temporarily: "
                 "The dependency is not ready yet.") == 2  # fmt: skip
    assert count("'flaky_backend' failed with an exception and will try again in 1 seconds: "
                 "Connection reset by the backend.") == 1  # fmt: skip
    assert count("'gives_up_eventually' failed with an exception and will try again in 1 seconds: "
                 "The backend is down for maintenance.") == 2  # fmt: skip
    assert count("'gives_up_eventually' failed with an exception and will stop now (it would "
                 "exceed 3 retries on the next attempt): "
                 "The backend is down for maintenance.") == 1  # fmt: skip
    assert count("'strict_parsing' failed with an exception and will stop now: "
                 "invalid literal for int() with base 10: 'not-a-number'") == 1  # fmt: skip
    assert count("'waits_for_a_dependency' succeeded.") == 1
    assert count("'flaky_backend' succeeded.") == 1
    assert "BackendUnavailable: Connection reset by the backend." in output.text  # a traceback
    assert "NoneType: None" not in output.text  # ... which is not lost


# -- 07-events -----------------------------------------------------------------------------------


def events_about(
    plane: LocalControlPlane, namespace: str, name: str, reasons: set[str]
) -> list[dict[str, Any]]:
    """The Events about one object, once there is one of each reason."""

    def check() -> list[dict[str, Any]]:
        items = get(plane, namespace, "events", f"--field-selector=involvedObject.name={name}")
        found: list[dict[str, Any]] = items["items"]
        return found if reasons <= {event["reason"] for event in found} else []

    events: list[dict[str, Any]] = until(check, f"Events {reasons} about {name}")
    return events


@BACKENDS
def test_events_are_posted_about_the_object_and_its_log_lines(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    with running_example(plane, "07-events", ns, backend) as output:
        apply(plane, ns, kex("kex-7", {"size": "XXL"}))
        reasons = {"Greeting", "Provisioning", "BadSize", "NoRedundancy", "Logging"}
        events_about(plane, ns, "kex-7", reasons)
        output.wait_for(f"[{ns}/kex-7] Handler 'create_fn' succeeded.")
        events = events_about(plane, ns, "kex-7", reasons)
    seen = {(e["type"], e["reason"], e["message"]) for e in events}
    assert ("Normal", "Greeting", "Hello from the operator!") in seen
    assert ("Normal", "Provisioning", "Provisioning has started.") in seen
    assert ("Warning", "BadSize", "The size is not known, using S: 'XXL'") in seen
    assert ("Warning", "NoRedundancy", "A single replica has no redundancy.") in seen
    assert ("Normal", "Logging", "Running 1 replica(s).") in seen
    uid = get(plane, ns, "kex", "kex-7")["metadata"]["uid"]
    for event in events:
        assert event["involvedObject"]["kind"] == "KopfExample"
        assert event["involvedObject"]["uid"] == uid
        assert event["source"]["component"] == "anyop"


# -- 08-filters ----------------------------------------------------------------------------------


@BACKENDS
def test_filters_pick_the_handlers_by_labels_annotations_fields_and_transitions(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    with running_example(plane, "08-filters", ns, backend) as output:
        apply(plane, ns, kex("kex-plain", {"replicas": 1}))
        apply(plane, ns, kex("kex-gold", {"replicas": 5, "phase": "draft"},
                             labels={"tier": "gold"}))  # fmt: skip
        apply(plane, ns, kex("kex-silver", {"replicas": 1},
                             labels={"tier": "silver"}, annotations={"paused": "yes"}))  # fmt: skip
        apply(plane, ns, kex("kex-huge", {"replicas": 500}))
        for name in ("kex-gold", "kex-silver", "kex-huge"):
            output.wait_for(f"[{ns}/{name}] Creation is processed:")
        for name in ("kex-huge", "kex-gold"):  # only kex-gold goes from draft to published
            kubectl(plane, "patch", "-n", ns, "kex", name, "--type=merge",
                    "-p", '{"spec": {"phase": "published"}}')  # fmt: skip
        output.wait_for(f"[{ns}/kex-gold] Field change is satisfied: draft -> published.")
        until(lambda: '"published"' in get(plane, ns, "kex", "kex-huge")["status"]["anyop"]
              [DIFFBASE], "kex-huge's change is handled")  # fmt: skip
        bodies = {name: get(plane, ns, "kex", name)
                  for name in ("kex-plain", "kex-gold", "kex-silver", "kex-huge")}  # fmt: skip
    ran = {name: set(body.get("status") or {}) - {"anyop"} for name, body in bodies.items()}
    gold = {"gold_only", "any_tier_unless_paused", "scaled_out/spec.replicas"}
    assert ran["kex-gold"] == gold | {"published/spec.phase"}
    assert ran["kex-silver"] == {"silver_or_bronze", "needs_attention"}
    assert ran["kex-huge"] == {"scaled_out/spec.replicas", "needs_attention"}
    assert "status" not in bodies["kex-plain"]
    assert "Field change is satisfied" not in output.text.replace(f"[{ns}/kex-gold] Field", "")
    assert f"[{ns}/kex-silver] Label callback is matching: tier=silver." in output.text
    assert "kex-plain" not in output.text, "an object that no handler wants is left alone"
    assert not [key for key in bodies["kex-plain"]["metadata"]["annotations"] if "anyop" in key]
    assert not bodies["kex-plain"]["metadata"].get("finalizers")


# -- 09-indexing ---------------------------------------------------------------------------------


@BACKENDS
def test_indexing_the_index_is_a_kwarg_that_follows_every_change(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster

    def mates() -> dict[str, Any]:
        items = get(plane, ns, "kex")["items"]
        return {i["metadata"]["name"]: (i.get("status") or {}).get("team_mates") for i in items}

    apply_kex(plane, ns, "ann", team="red")  # before the start: listed and indexed first
    base = f"http://127.0.0.1:{free_port()}"
    liveness = ("--liveness", f"{base}/healthz")
    with running_example(plane, "09-indexing", ns, backend, *liveness) as output:
        apply_kex(plane, ns, "bob", team="red")
        apply_kex(plane, ns, "cid", team="blue")
        expected = {"ann": ["bob"], "bob": ["ann"], "cid": []}
        until(lambda: mates() == expected, f"team mates are {expected}")
        apply_kex(plane, ns, "cid", team="red")
        expected = {"ann": ["bob", "cid"], "bob": ["ann", "cid"], "cid": ["ann", "bob"]}
        until(lambda: mates() == expected, f"team mates are {expected}")
        health = httpx.get(f"{base}/healthz", timeout=10)
    assert health.json() == {"team_sizes": {"red": 3}}
    assert f"[{ns}/ann] ann joins team 'red' with " in output.text  # 1 or 2: bob may be first
    assert f"[{ns}/cid] cid joins team 'blue' with 1 member(s) now." in output.text


# -- 10-activities -------------------------------------------------------------------------------


@BACKENDS
def test_activities_startup_login_settings_and_memo_probes_and_cleanup(
    cluster: Cluster, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plane, ns = cluster
    base = f"http://127.0.0.1:{free_port()}"
    liveness = ("--liveness", f"{base}/healthz")
    monkeypatch.setenv("EXAMPLE_LOGIN_SECONDS", "2")  # the credentials expire after 2 s, not 30
    with running_example(plane, "10-activities", ns, backend, *liveness) as output:
        output.wait_for("Configured: Events come from 'activities-example'.")
        output.wait_for("Re-authentication has been initiated.", count=2)
        apply_kex(plane, ns, "kex-10")  # handled with the credentials of a re-login
        output.wait_for(f"[{ns}/kex-10] Handler 'create_fn' succeeded.")
        events = events_about(plane, ns, "kex-10", {"Counted"})
        health = httpx.get(f"{base}/healthz", timeout=10)
        ready = httpx.get(f"{base}/readyz", timeout=10)
        finalizers = get(plane, ns, "kex", "kex-10")["metadata"]["finalizers"]
        kubectl(plane, "delete", "-n", ns, "kex", "kex-10", "--timeout=60s")
    assert health.status_code == 200
    assert health.json()["created_objects"] == 1
    assert health.json()["uptime_seconds"] > 0
    assert (ready.status_code, ready.json()) == (200, {"ready": True})
    assert finalizers == ["example.anyop.dev/cleanup"]
    assert events[0]["message"] == "Object number 1."
    assert events[0]["source"]["component"] == "activities-example"
    lines = output.text.splitlines()
    failed = "Activity 'configure' failed temporarily: The licence server is not reachable yet."
    assert lines.count(failed) == 1
    assert lines.count("Goodbye! Created 1, deleted 1.") == 1
    logins = [line for line in lines if line.startswith("Logged in to ")]
    assert set(logins) == {f"Logged in to {plane.server} for 2s."}
    assert len(logins) >= 3  # the first login and at least two re-logins
    assert lines.index(logins[0]) > lines.index("Activity 'configure' succeeded.")
    assert "Activity 'login_with_kubeconfig' succeeded." not in lines  # login_fn replaces it


# -- 11-embedding --------------------------------------------------------------------------------


@BACKENDS
def test_embedding_the_operator_runs_in_the_programs_own_task_group(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    cmd = [sys.executable, str(EXAMPLES / "11-embedding" / "example.py"),
           "-n", ns, "--backend", backend, "--count", "2"]  # fmt: skip
    result = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=DEADLINE, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    printed = result.stdout.splitlines()  # the program's own prints; the logs go to stderr
    greeted = "['kex-embedded-0', 'kex-embedded-1']"
    assert printed == [
        "The operator is ready.",
        "The operator says: Hello, kex-embedded-0!",
        "The operator says: Hello, kex-embedded-1!",
        f"The operator has stopped after greeting {greeted}.",
    ]
    logged = result.stderr.splitlines()
    assert f"[{ns}/kex-embedded-1] Handler 'greet' succeeded." in logged
    assert f"[{ns}/kex-embedded-1] Good bye, kex-embedded-1!" in logged
    started = "The operator starts: its startup handlers run inside anyop.serve()."
    stopped = "The operator stops: its cleanup handlers run before anyop.serve() returns."
    assert logged.count(started) == logged.count(stopped) == 1  # anyop.serve() runs them
    assert logged.index(started) < logged.index(f"[{ns}/kex-embedded-1] Good bye, kex-embedded-1!")
    assert get(plane, ns, "kex")["items"] == []


# -- 12-subhandlers ------------------------------------------------------------------------------


@BACKENDS
def test_subhandlers_are_retried_on_their_own_and_the_parent_finishes_once(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    with running_example(plane, "12-subhandlers", ns, backend) as output:
        apply_kex(plane, ns, "kex-12", items=["db", "slow-cache"], version=1)
        output.wait_for(f"[{ns}/kex-12] Creation is processed:")
        created = get(plane, ns, "kex", "kex-12")["status"]
        apply_kex(plane, ns, "kex-12", items=["db", "slow-cache"], version=2)
        output.wait_for(f"[{ns}/kex-12] Updating is processed:")
        updated = get(plane, ns, "kex", "kex-12")["status"]
    lines = output.text.splitlines()
    prefix = f"[{ns}/kex-12] "
    assert created["create_fn"] == {"items": 2}
    assert created["create_fn/db"] == "db is ready"
    assert created["create_fn/slow-cache"] == "slow-cache is ready"
    assert lines.count(f"{prefix}=== Handling creation for db, attempt 1. ===") == 1
    assert lines.count(f"{prefix}=== Handling creation for db, attempt 2. ===") == 0
    assert lines.count(f"{prefix}=== Handling creation for slow-cache, attempt 2. ===") == 1
    field = "upgrade/spec.version"
    assert updated[field] == "1 -> 2"
    assert updated[f"{field}/drain"] == "drained"
    assert updated[f"{field}/install"] == "installed"
    assert lines.count(f"{prefix}Draining the traffic off version 1.") == 1
    assert lines.count(f"{prefix}Upgraded from version 1 to 2.") == 1
    failed = f"{prefix}Handler '{field}/install' failed temporarily: "
    assert lines.count(failed + "The new version is still downloading.") == 1


# -- 13-event-watching ---------------------------------------------------------------------------


@BACKENDS
def test_event_watching_sees_every_event_and_survives_errors_without_state(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    apply(plane, ns, kex("kex-old", {"field": "x"}))
    with running_example(plane, "13-event-watching", ns, backend) as output:
        output.wait_for(f"[{ns}/kex-old] Event LISTED #1 for kex-old: field='x'")
        apply(plane, ns, kex("kex-13", {"field": "a"}, labels={"fragile": "yes"}))
        output.wait_for(f"[{ns}/kex-13] Event ADDED #1 for kex-13: field='a'")
        kubectl(plane, "patch", "-n", ns, "kex", "kex-13", "--type=merge",
                "-p", '{"spec": {"field": "b"}}')  # fmt: skip
        output.wait_for(f"[{ns}/kex-13] Event MODIFIED #2 for kex-13: field='b'")
        body = get(plane, ns, "kex", "kex-13")
        kubectl(plane, "delete", "-n", ns, "kex", "kex-13", "--timeout=60s")
        output.wait_for(f"[{ns}/kex-13] Event DELETED #3 for kex-13: field='b'")
    assert "status" not in body
    assert not body["metadata"].get("finalizers")
    assert not [key for key in body["metadata"]["annotations"] if "anyop" in key]
    assert "RuntimeError: Cannot cope with the MODIFIED event." in output.text
    assert "RuntimeError: Cannot cope with the LISTED event." not in output.text  # not fragile


# -- 14-builtin-resources ------------------------------------------------------------------------


def ttl_pod(name: str, seconds: int) -> dict[str, Any]:
    """A pod that the example kills after ``seconds`` (no kubelet runs it here)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"ttl-seconds": str(seconds)}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip


@BACKENDS
def test_builtin_resources_configmaps_are_greeted_and_pods_are_killed_when_due(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"greeting": "hello"},
                 "metadata": {"name": "hello", "labels": {"app": "greeter"}}}  # fmt: skip
    with running_example(plane, "14-builtin-resources", ns, backend) as output:
        apply(plane, ns, configmap)
        output.wait_for(f"[{ns}/hello] ConfigMap hello says: hello")
        kubectl(plane, "patch", "-n", ns, "configmap", "hello", "--type=merge",
                "-p", '{"data": {"greeting": "bonjour"}}')  # fmt: skip
        output.wait_for(f"[{ns}/hello] The greeting has changed: 'hello' -> 'bonjour'")
        events = events_about(plane, ns, "hello", {"GreetingChanged"})
        apply(plane, ns, ttl_pod("short-lived", 1))
        output.wait_for(f"[{ns}/short-lived] === Pod killing happens NOW!")
        until(lambda: not get(plane, ns, "pods")["items"], "the pod is gone")
        output.wait_for(f"[{ns}/short-lived] Deletion is processed: 1 succeeded; 0 failed.")
    assert events[0]["message"] == "'hello' -> 'bonjour'"
    assert events[0]["involvedObject"]["kind"] == "ConfigMap"
    lines = output.text.splitlines()
    assert lines.count(f"[{ns}/short-lived] === Pod killing happens in 1s.") == 1
    assert lines.count(f"[{ns}/short-lived] === Pod short-lived is being deleted.") == 1
    assert "Pod killing is cancelled" not in output.text  # it was done, not cancelled


@BACKENDS
def test_builtin_resources_a_pod_deleted_or_unlabelled_before_its_time_is_not_killed(
    cluster: Cluster, backend: str
) -> None:
    plane, ns = cluster
    for name in ("doomed", "spared", "kept"):  # before the start: resumed, not created
        apply(plane, ns, ttl_pod(name, 600))
    with running_example(plane, "14-builtin-resources", ns, backend, "--debug") as output:
        for name in ("doomed", "spared", "kept"):
            output.wait_for(f"[{ns}/{name}] === Pod killing happens in 600s.")
        kubectl(plane, "delete", "-n", ns, "pod", "doomed", "--timeout=60s")
        output.wait_for(f"[{ns}/doomed] === Pod killing is cancelled!")
        output.wait_for(f"[{ns}/doomed] Deletion is processed: 1 succeeded; 0 failed.")
        kubectl(plane, "label", "-n", ns, "pod", "spared", "ttl-seconds-")
        output.wait_for(f"[{ns}/spared] === Pod killing is cancelled!")
        until(lambda: not get(plane, ns, "pod", "spared")["metadata"].get("finalizers"),
              "the finalizer of the unlabelled pod is released")  # fmt: skip
        pods = [pod["metadata"]["name"] for pod in get(plane, ns, "pods")["items"]]
    lines = output.text.splitlines()
    assert pods == ["kept", "spared"]
    assert lines.count(f"[{ns}/doomed] === Pod killing is cancelled!") == 1
    assert lines.count(f"[{ns}/doomed] === Pod doomed is being deleted.") == 1
    assert f"[{ns}/doomed] Deletion is in progress: {{" in output.text  # with --debug only
    assert "spared is being deleted" not in output.text
    assert "Pod killing happens NOW" not in output.text
    postponed = "=== Pod killing is postponed until the operator serves the pod again."
    assert lines.count(f"[{ns}/kept] {postponed}") == 1  # at the exit: not a cancellation
    assert f"[{ns}/kept] === Pod killing is cancelled!" not in lines
    assert "The server dropped status.anyop" in output.text  # the state goes to annotations


# -- 15-testing ----------------------------------------------------------------------------------


def test_testing_the_users_example_tests_pass_with_their_own_pytest_settings() -> None:
    """``pytest examples/15-testing`` as a user runs it: its own control plane, both backends."""
    folder = EXAMPLES / "15-testing"
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    cmd = [sys.executable, "-m", "pytest", "-c", str(folder / "pytest.ini"), str(folder), "-v"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = [line.split(" ")[0] for line in result.stdout.splitlines() if " PASSED" in line]
    assert sorted(name.split("::")[-1] for name in passed) == [
        "test_the_operator_greets_in_a_background_thread[asyncio]",
        "test_the_operator_greets_in_a_background_thread[trio]",
        "test_the_operator_greets_in_the_tests_own_event_loop[asyncio]",
        "test_the_operator_greets_in_the_tests_own_event_loop[trio]",
    ]
