"""The admission, all-in-one, conversion and sharding examples as in a cluster, under only the RBAC
that `anyop manifests` generates for them (with the options their command lines need).

Each runs as the generated ServiceAccount (no kubeconfig) and does its work without a refusal;
without the rule that only its options add (the webhook configurations, the CRD's patch, the
Leases of sharding), it says what it was refused. The rules that every operator gets (its
resources, Events, peering) are taken away one by one in ``test_generated_rbac_e2e.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from tests.e2e.conftest import EXAMPLES
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_conversion_e2e import (
    APPLIED,
    api_sync,
    backend,
    backends,
    converting,
    example_crd,
)
from tests.e2e.test_examples_more_e2e import apply, get, until
from tests.e2e.test_generated_rbac_e2e import example_registry, install, refusals_in, widget
from tests.e2e.test_incluster_e2e import operator_in_pod
from tests.e2e.test_least_privilege_e2e import without

from anyop.manifests.files import manifest_files
from anyop.manifests.options import ManifestOptions
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

__all__ = ["api_sync", "example_crd"]  # fixtures, used by name

ADMISSION = EXAMPLES / "16-admission" / "example.py"
ALL_AT_ONCE = EXAMPLES / "18-all-at-once" / "example.py"
CONVERSION = EXAMPLES / "20-conversion" / "example.py"
TYPED = EXAMPLES / "21-typed" / "example.py"
KOPF_CRDS = EXAMPLES / "crd.yaml"
WEBHOOK_CONFIGS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def rbac(namespace: str, example: Path, crds: Path | None = None, **options: Any) -> tuple[
    str, list[dict[str, Any]]
]:  # fmt: skip
    """The account's name and rbac.yaml's documents, as `anyop manifests` writes them."""
    name = f"rbac-{namespace}"
    chosen = ManifestOptions(name=name, namespace=namespace, namespaces=(namespace,), **options)
    known = list(yaml.safe_load_all(crds.read_text())) if crds is not None else []
    text = manifest_files(example_registry(example), chosen, known)["rbac.yaml"]
    return name, [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture
def webhook_configs(anyop_controlplane: LocalControlPlane) -> Iterator[None]:
    """Whatever webhook configuration the admission example leaves is removed afterwards."""
    yield
    for kind in WEBHOOK_CONFIGS:
        kubectl(anyop_controlplane, "delete", kind, "auto.anyop.dev", "--ignore-not-found")


def _kex(name: str, labels: dict[str, str], spec: dict[str, Any]) -> str:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name, "labels": labels}, "spec": spec}  # fmt: skip
    return json.dumps(body)


def _denied(plane: LocalControlPlane, namespace: str) -> str | None:
    """The denial of a bad object (a dry run), or None while the webhooks are not active."""
    try:
        kubectl(plane, "create", "--dry-run=server", "-n", namespace, "-f", "-",
                stdin=_kex("kex-bad", {}, {"field": "wrong"}))  # fmt: skip
    except AssertionError as exc:
        return str(exc)
    return None


def said(output: Any, *refusals: str) -> None:
    """Wait until the operator says it was refused, in one of these words (its output shown if
    it never does)."""
    try:
        until(lambda: any(r in output.text for r in refusals), f"the operator says {refusals}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it said:\n{output.text[-4000:]}") from None


def test_the_admission_example_runs_under_only_the_generated_rbac(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    kopfexample_crd: str,
    webhook_configs: None,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = rbac(ns, ADMISSION, KOPF_CRDS, webhooks_managed=True)
    folder = install(plane, ns, name, docs, tmp_path)
    with operator_in_pod(plane, folder, str(ADMISSION), "-n", ns, backend="asyncio") as output:
        denial = until(lambda: _denied(plane, ns), "the webhooks refuse a bad object")
        created = kubectl(plane, "create", "-n", ns, "-f", "-", "-o", "json",
                          stdin=_kex("kex-1", {"inject": "yes"}, {}))  # fmt: skip
    assert "The field must not be 'wrong'. Change it." in denial
    assert json.loads(created)["spec"] == {"field": "default", "injected": 123}
    assert not refusals_in(output.text)
    left = kubectl(plane, "get", ",".join(WEBHOOK_CONFIGS), "-o", "name")
    assert "auto.anyop.dev" not in left  # removed at exit: delete is among the rules


def test_without_the_webhook_configurations_rule_the_admission_example_says_so(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    kopfexample_crd: str,
    webhook_configs: None,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = rbac(ns, ADMISSION, KOPF_CRDS, webhooks_managed=True)
    folder = install(plane, ns, name, without(docs, "validatingwebhookconfigurations", None),
                     tmp_path)  # fmt: skip
    args = (str(ADMISSION), "-n", ns)
    with operator_in_pod(plane, folder, *args, backend="asyncio", check=False) as output:
        refusal = 'cannot patch resource "validatingwebhookconfigurations"'
        said(output, refusal)


def test_the_all_at_once_example_runs_under_only_the_generated_rbac(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    kopfexample_crd: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = rbac(ns, ALL_AT_ONCE, KOPF_CRDS)
    folder = install(plane, ns, name, docs, tmp_path)
    args = (str(ALL_AT_ONCE), "-n", ns)
    with operator_in_pod(plane, folder, *args, backend="trio", events=True) as output:
        apply_kex(plane, ns, "kex-18", field="blue")
        status = wait_for_status(plane, ns, "kex-18", "tick")
        output.wait_for(f"[{ns}/kex-18] Heartbeat of kex-18 started.")
        apply_kex(plane, ns, "kex-18", field="green")
        wait_for_status(plane, ns, "kex-18", "field_changed/spec.field")
        kubectl(plane, "delete", "kex", "kex-18", "-n", ns, "--timeout=60s")
        output.wait_for(f"[{ns}/kex-18] Cleaning up after kex-18.")
    assert status["create_fn/announce"] == "announced"
    assert not refusals_in(output.text)


def test_the_conversion_example_runs_under_only_the_generated_rbac(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    example_crd: str,
    api_sync: httpx.Client,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    crds = EXAMPLES / "20-conversion" / "crd.yaml"
    name, docs = rbac(ns, CONVERSION, crds, conversion_managed=True)
    folder = install(plane, ns, name, docs, tmp_path)
    with operator_in_pod(plane, folder, str(CONVERSION), "-n", ns, backend="asyncio") as output:
        output.wait_for(APPLIED)  # this operator's webhook, not one the API server still knows
        until(lambda: converting(api_sync, ns), "the API server converts with the webhook")
        made = api_sync.post(backends(ns, "v1alpha1"),
                             json=backend("b1", "v1alpha1", {"endpoint": "db:5432"}))  # fmt: skip
        assert made.status_code == 201, made.text
        read = api_sync.get(backends(ns, "v1", "b1")).json()
    assert read["spec"]["host"] == "db"
    assert not refusals_in(output.text)


def test_without_the_crd_patch_the_conversion_example_says_so(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    example_crd: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    crds = EXAMPLES / "20-conversion" / "crd.yaml"
    name, docs = rbac(ns, CONVERSION, crds, conversion_managed=True)
    folder = install(plane, ns, name, without(docs, "customresourcedefinitions", "patch"),
                     tmp_path)  # fmt: skip
    args = (str(CONVERSION), "-n", ns)
    with operator_in_pod(plane, folder, *args, backend="asyncio", check=False) as output:
        refusal = 'cannot patch resource "customresourcedefinitions"'
        said(output, refusal)


def test_a_sharded_replica_runs_under_only_the_generated_rbac(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    widget_crd: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = rbac(ns, TYPED, sharding=True)
    folder = install(plane, ns, name, docs, tmp_path)
    args = (str(TYPED), "-n", ns, "--shards", "auto")
    with operator_in_pod(plane, folder, *args, backend="trio") as output:
        apply(plane, ns, widget("w", {"replicas": 2}))
        until(lambda: get(plane, ns, "widget", "w").get("status", {}).get("replicas") == 2, "2")
        time.sleep(1)  # a lease renewal or two
    assert not refusals_in(output.text)


def test_without_the_leases_rule_a_sharded_replica_says_so(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    widget_crd: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = rbac(ns, TYPED, sharding=True)
    folder = install(plane, ns, name, without(docs, "leases", None), tmp_path)
    args = (str(TYPED), "-n", ns, "--shards", "auto")
    with operator_in_pod(plane, folder, *args, backend="trio", check=False) as output:
        said(output, 'resource "leases"')


def _start_kex(plane: LocalControlPlane, namespace: str) -> None:
    apply_kex(plane, namespace, "kex", field="blue", replicas=1)


def _start_widget(plane: LocalControlPlane, namespace: str) -> None:
    apply(plane, namespace, widget("w", {"replicas": 1}))


def _start_backend(plane: LocalControlPlane, namespace: str) -> None:
    body = backend("b", "v1", {"host": "db", "port": 5432})
    kubectl(plane, "apply", "-n", namespace, "-f", "-", stdin=json.dumps(body))


# Each example, how `anyop manifests` is asked for it, and what starts its work.
ABLATED: dict[str, tuple[Path, Path | None, dict[str, Any], tuple[str, ...], Any]] = {
    "admission": (ADMISSION, KOPF_CRDS, {"webhooks_managed": True}, (), _start_kex),
    "all-at-once": (ALL_AT_ONCE, KOPF_CRDS, {}, (), _start_kex),
    "reconcile": (EXAMPLES / "19-reconcile" / "example.py", KOPF_CRDS, {}, (), _start_kex),
    "conversion": (CONVERSION, EXAMPLES / "20-conversion" / "crd.yaml",
                   {"conversion_managed": True}, (), _start_backend),
    "sharding": (TYPED, None, {"sharding": True}, ("--shards", "auto"), _start_widget),
}  # fmt: skip


def _rules_of(example: str) -> list[tuple[str, str]]:
    source, crds, options, _, _ = ABLATED[example]
    _, docs = rbac("ablation", source, crds, **options)
    return [(example, resource) for doc in docs for rule in doc.get("rules", [])
            for resource in rule["resources"]]  # fmt: skip


@pytest.mark.parametrize(
    ("example", "resource"),
    [pair for example in ABLATED for pair in _rules_of(example)],
    ids=lambda value: str(value),
)
def test_every_generated_rule_of_the_examples_is_needed(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    kopfexample_crd: str,
    widget_crd: str,
    example: str,
    resource: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    source, crds, options, args, start = ABLATED[example]
    if example == "conversion":
        request.getfixturevalue("example_crd")
    if example == "admission":
        request.getfixturevalue("webhook_configs")
    name, docs = rbac(ns, source, crds, **options)
    folder = install(plane, ns, name, without(docs, resource, None), tmp_path)
    command = (str(source), "-n", ns, *args)
    with operator_in_pod(plane, folder, *command, backend="asyncio", check=False,
                         events=True) as output:  # fmt: skip
        start(plane, ns)
        # Without CRDs to list, the operator goes on (and says so) with the resources it found.
        said(output, f'resource "{resource}"', "CustomResourceDefinitions cannot be listed")
