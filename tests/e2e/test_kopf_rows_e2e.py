"""Rows of KOPF-FEATURES.md proven on the real control plane: finalizers, daemons' stopping,
deletion, superseding (in process, on both backends), and `anyop run`'s logging and module flags.

Each test waits for conditions with deadlines; the few timings asserted are lower bounds set by
the handlers' own options (a backoff), never upper bounds that a slow machine could miss.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_daemons_e2e import FINALIZER, finalizers, merge, until
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.errors import TemporaryError
from anyop.handlers.registry import OperatorRegistry
from anyop.storage.finalizers import ADDING_MESSAGE, RELEASING_MESSAGE, UNNEEDED_MESSAGE
from anyop.testing.controlplane import LocalControlPlane

GONE = "Deleted, really deleted, and we are notified."


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


async def create_labelled(
    api: httpx.AsyncClient, namespace: str, name: str, labels: dict[str, str]
) -> str:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name, "labels": labels}, "spec": {"field": "value"}}  # fmt: skip
    (await api.post(url(namespace), json=body)).raise_for_status()
    return url(namespace, name)


def stored_state(body: dict[str, Any]) -> str:
    """The annotations and the status as text: the engine's state, whatever its storage."""
    return json.dumps([body.get("metadata", {}).get("annotations"), body.get("status")])


def index(messages: list[str], prefix: str) -> int:
    """The position of the first message that starts with ``prefix`` (fails if there is none)."""
    found = [i for i, message in enumerate(messages) if message.startswith(prefix)]
    assert found, f"no message starts with {prefix!r}"
    return found[0]


# -- FZ2: the finalizer is removed when no handler requires it any more ---------------------------


def register_delete_handler(registry: OperatorRegistry, calls: list[str]) -> list[str]:
    """Returns the calls expected: the delete handler never runs, as nothing holds the object."""
    # Its labels become the watch's selector: without the label, the object leaves the watch, as
    # a DELETED event that carries its previous state (whose labels still match).

    @on.delete("kopfexamples", registry=registry, labels={"watched": "yes"}, id="delete_fn")
    def delete_fn(name: str, **_: Any) -> None:
        calls.append(name)

    return []


def register_daemon_beside_a_create_handler(
    registry: OperatorRegistry, calls: list[str]
) -> list[str]:
    """Returns the calls expected: the daemon saw its stop when its filter stopped matching."""
    # The unfiltered create handler means no shared label selector: the watch still sees the
    # object after the label goes, and the cycle itself finds the finalizer unneeded.
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: None)

    @anyop.daemon("kopfexamples", registry=registry, labels={"watched": "yes"}, id="watcher")
    async def watcher(name: str, stopped: anyop.DaemonStopped, **_: Any) -> None:
        await stopped.wait()
        calls.append(name)

    return ["fz2"]


@pytest.mark.parametrize(
    "register",
    [register_delete_handler, register_daemon_beside_a_create_handler],
    ids=["only-delete-handler-left-the-selection", "daemon-filtered-out"],
)
@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_the_finalizer_is_removed_once_no_handler_requires_it(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
    register: Any,
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []
    expected = register(registry, calls)
    async with running(registry, anyop_namespace):
        path = await create_labelled(api, anyop_namespace, "fz2", {"watched": "yes"})
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        assert UNNEEDED_MESSAGE not in caplog.messages
        await merge(api, path, {"metadata": {"labels": {"watched": None}}})
        with anyio.fail_after(5):  # well under a second when it works
            body = await wait_for(api, path, lambda b: FINALIZER not in finalizers(b))
        assert body["metadata"]["name"] == "fz2"  # released, not deleted
        await wait_for_log(caplog, UNNEEDED_MESSAGE)
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})  # nothing holds it now
    assert calls == expected


# -- D3/D4: a daemon is signalled gracefully, and after its backoff, by force --------------------

BACKOFF = 0.6


@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_a_stopped_daemon_is_cancelled_only_after_its_cancellation_backoff(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    started: set[str] = set()
    cancelled_at: list[float] = []

    @anyop.daemon(
        "kopfexamples", registry=registry, id="deaf",
        cancellation_backoff=BACKOFF, cancellation_timeout=DEADLINE,
    )  # fmt: skip
    async def deaf(**_: Any) -> None:
        started.add("deaf")
        try:
            await anyio.sleep(DEADLINE)  # ignores its flag
        except anyio.get_cancelled_exc_class():
            cancelled_at.append(time.monotonic())
            raise

    @anyop.daemon(
        "kopfexamples", registry=registry, id="polite",
        cancellation_backoff=BACKOFF, cancellation_timeout=DEADLINE,
    )  # fmt: skip
    async def polite(stopped: anyop.DaemonStopped, **_: Any) -> None:
        started.add("polite")
        await stopped.wait()

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "d34")
        path = url(anyop_namespace, "d34")
        await wait_for(api, path, lambda b: FINALIZER in finalizers(b))
        await until(lambda: started == {"deaf", "polite"})
        t0 = time.monotonic()
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
    assert len(cancelled_at) == 1
    assert cancelled_at[0] - t0 >= BACKOFF, "cancelled before its cancellation_backoff"

    stamps = {r.getMessage(): r.created for r in caplog.records if r.name == "anyop.objects"}
    graceful = stamps["Daemon 'deaf' is signalled to exit gracefully."]
    force = stamps["Daemon 'deaf' is signalled to exit by force."]
    assert force - graceful >= BACKOFF - 0.01  # log stamps are wall-clock: a hair of slack
    messages = caplog.messages
    deaf_lines = [
        "Daemon 'deaf' is signalled to exit gracefully.",
        "Daemon 'deaf' is signalled to exit by force.",
        "Daemon 'deaf' is cancelled.",
        "Daemon 'deaf' has exited.",
    ]
    positions = [messages.index(line) for line in deaf_lines]
    assert positions == sorted(positions)
    assert "Daemon 'polite' is signalled to exit gracefully." in messages
    assert "Daemon 'polite' has exited gracefully." in messages
    assert "Daemon 'polite' is signalled to exit by force." not in messages
    assert "Daemon 'deaf' did not exit in time. Leaving it orphaned." not in messages


# -- H3: the finalizer comes before the create handler; the deletion's lines in order -------------


@pytest.mark.parametrize("optional", [False, True], ids=["required", "optional"])
@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_a_delete_handler_puts_the_finalizer_before_creation_and_releases_it_last(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture, optional: bool
) -> None:
    registry = OperatorRegistry()
    seen: list[list[str]] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(body: anyop.Body, logger: anyop.Logger, **_: Any) -> None:
        seen.append(list(body["metadata"].get("finalizers") or []))
        logger.info("CREATE RAN")

    @on.delete("kopfexamples", registry=registry, optional=optional, id="delete_fn")
    def delete_fn(logger: anyop.Logger, **_: Any) -> None:
        logger.info("DELETE RAN")

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "h3")
        path = url(anyop_namespace, "h3")
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        body = (await api.get(path)).json()
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
        if not optional:
            await wait_for_log(caplog, GONE)
    messages = caplog.messages
    if optional:
        assert seen == [[]]
        assert finalizers(body) == []
        assert ADDING_MESSAGE not in messages
        return
    assert seen == [[FINALIZER]], "the create handler ran before the finalizer was added"
    order = [ADDING_MESSAGE, "CREATE RAN", "Deletion is in progress: {", "DELETE RAN",
             "Deletion is processed: 1 succeeded; 0 failed.", RELEASING_MESSAGE, GONE]  # fmt: skip
    positions = [index(messages, line) for line in order]
    assert positions == sorted(positions), messages


# -- H14: superseding --------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_an_update_supersedes_a_creation_left_unfinished_by_an_earlier_operator(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An update needs a diff-base, which a creation stores only when it is done (as in Kopf);
    so an update meets an unfinished creation where another version of the operator, one with
    no create handler, stored the diff-base meanwhile: a rollout that went back and forth."""
    created: list[int] = []
    updated: list[Any] = []

    def create_fn(retry: int, **_: Any) -> None:
        created.append(retry)
        raise TemporaryError("not yet", delay=DEADLINE)

    def update_fn(diff: Any, **_: Any) -> None:
        updated.append(diff)

    first, second, third = OperatorRegistry(), OperatorRegistry(), OperatorRegistry()
    on.create("kopfexamples", registry=first, id="create_fn")(create_fn)
    on.update("kopfexamples", registry=second, id="update_fn")(update_fn)
    on.create("kopfexamples", registry=third, id="create_fn")(create_fn)
    on.update("kopfexamples", registry=third, id="update_fn")(update_fn)
    path = url(anyop_namespace, "h14")

    async with running(first, anyop_namespace):
        await create(api, anyop_namespace, "h14")
        await wait_for_log(caplog, "Handler 'create_fn' failed temporarily: not yet")
    async with running(second, anyop_namespace):  # no create handler: the diff-base is stored
        await wait_for(api, path, lambda b: "last-handled-configuration" in stored_state(b))
    assert not any(" is superseded by " in message for message in caplog.messages)
    await merge(api, path, {"spec": {"field": "changed"}})
    async with running(third, anyop_namespace):
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    superseded = [message for message in caplog.messages if " is superseded by " in message]
    assert superseded == [
        "Creation is superseded by updating: 0 succeeded; 0 failed; 1 left to the moment."
    ]
    assert created == [0]  # its cause is over: never retried
    assert len(updated) == 1
    body = (await api.get(path)).json()
    assert "create_fn" not in stored_state(body), "its record was not purged"


@pytest.mark.anyio
@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_a_change_during_an_unfinished_creation_continues_the_creation(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Kopf's behaviour: with no diff-base yet, the change is still a creation (no superseding),
    and the update handler never sees it, as the creation's diff-base holds it already."""
    registry = OperatorRegistry()
    fields: list[str] = []
    updated: list[Any] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(retry: int, spec: anyop.Spec, **_: Any) -> None:
        fields.append(str(spec.get("field")))
        if retry == 0:
            raise TemporaryError("not yet", delay=0.5)

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(diff: Any, **_: Any) -> None:
        updated.append(diff)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "h14b")
        await wait_for_log(caplog, "Handler 'create_fn' failed temporarily: not yet")
        await merge(api, url(anyop_namespace, "h14b"), {"spec": {"field": "changed"}})
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        await anyio.sleep(0.3)  # room for a wrong update cycle to come
    assert fields == ["value", "changed"]
    assert updated == []
    assert not any(" is superseded by " in message for message in caplog.messages)


# -- EV4 and EM5: `anyop run`'s logging flags and -m ----------------------------------------------

OPERATOR = textwrap.dedent(
    """
    import anyop

    @anyop.on.create("kopfexamples")
    def create_fn(logger, **_):
        logger.info("CREATE RAN")
        return "done"
    """
)


def run_operator_until_handled(
    plane: LocalControlPlane, namespace: str, name: str, args: list[str], *, env: dict[str, str]
) -> list[str]:
    """`anyop run ARGS -n NAMESPACE`, until the object ``name`` is handled; its output lines."""
    cmd = [sys.executable, "-m", "anyop", "run", *args, "-n", namespace, "--backend", "asyncio"]
    full_env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), **env}
    operator = subprocess.Popen(
        cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        apply_kex(plane, namespace, name, field="value")
        wait_for_status(plane, namespace, name)
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    return output.splitlines()


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    docs = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(docs) == len(lines), lines  # every line is a JSON document
    assert docs
    return docs


def test_json_logs_put_the_object_under_object_and_leave_the_message_bare(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "json_operator.py"
    source.write_text(OPERATOR)
    args = [str(source), "--log-format", "json"]
    lines = run_operator_until_handled(anyop_controlplane, anyop_namespace, "kex-j", args, env={})
    (doc,) = [d for d in json_lines(lines) if d["message"].endswith("CREATE RAN")]
    assert doc["message"] == "CREATE RAN"
    assert doc["object"]["name"] == "kex-j"
    assert doc["object"]["namespace"] == anyop_namespace


def test_log_refkey_and_log_prefix_change_the_json_lines(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "json_operator.py"
    source.write_text(OPERATOR)
    args = [str(source), "--log-format", "json", "--log-refkey", "k8s", "--log-prefix"]
    lines = run_operator_until_handled(anyop_controlplane, anyop_namespace, "kex-r", args, env={})
    docs = json_lines(lines)
    (doc,) = [d for d in docs if d["message"].endswith("CREATE RAN")]
    assert doc["message"] == f"[{anyop_namespace}/kex-r] CREATE RAN"
    assert doc["k8s"] == {
        "apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": "kex-r",
        "uid": doc["k8s"]["uid"], "namespace": anyop_namespace,
    }  # fmt: skip
    assert doc["k8s"]["uid"]
    assert not any("object" in d for d in docs)
    (stopping,) = [d for d in docs if d["message"].endswith("Operator is stopping.")]
    assert stopping["message"] == "Signal SIGTERM received. Operator is stopping."  # no prefix
    assert "k8s" not in stopping  # not about an object: no reference


def test_no_log_prefix_leaves_the_plain_object_lines_bare(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    source = tmp_path / "plain_operator.py"
    source.write_text(OPERATOR)
    args = [str(source), "--log-format", "plain", "--no-log-prefix"]
    lines = run_operator_until_handled(anyop_controlplane, anyop_namespace, "kex-p", args, env={})
    assert "CREATE RAN" in lines
    assert "Handler 'create_fn' succeeded." in lines
    assert not any(line.startswith(f"[{anyop_namespace}/") for line in lines), lines


def test_run_with_m_imports_the_handlers_from_a_module(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    package = tmp_path / "kopf_rows_operator"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "handlers.py").write_text(OPERATOR)
    args = ["-m", "kopf_rows_operator.handlers", "--log-format", "plain"]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    lines = run_operator_until_handled(anyop_controlplane, anyop_namespace, "kex-m", args, env=env)
    assert f"[{anyop_namespace}/kex-m] CREATE RAN" in lines
    assert f"[{anyop_namespace}/kex-m] Handler 'create_fn' succeeded." in lines
