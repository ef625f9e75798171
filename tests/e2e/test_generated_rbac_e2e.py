"""examples/21-typed as in a cluster, under only the RBAC that `anyop manifests` generates.

The operator runs as the generated ServiceAccount (a TokenRequest token mounted where a Pod has
it, no kubeconfig) with the generated Role and ClusterRole: it handles Widgets without a single
refusal; and without one of the application's rules, it says what it was refused.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.e2e.conftest import EXAMPLES
from tests.e2e.kex import apply_kex
from tests.e2e.test_examples_more_e2e import BACKENDS, apply, get, until
from tests.e2e.test_incluster_e2e import operator_in_pod, service_account_folder
from tests.e2e.test_least_privilege_e2e import without

from anyop.handlers.registry import OperatorRegistry, get_default_registry, set_default_registry
from anyop.manifests.files import manifest_files
from anyop.manifests.options import ManifestOptions
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

EXAMPLE = EXAMPLES / "21-typed" / "example.py"
RECONCILE = EXAMPLES / "19-reconcile" / "example.py"


def example_registry(example: Path) -> OperatorRegistry:
    """The example's handlers, in a registry of their own."""
    registry, previous = OperatorRegistry(), get_default_registry()
    set_default_registry(registry)
    try:
        spec = importlib.util.spec_from_file_location(f"rbac_of_{example.parent.name}", example)
        assert spec is not None
        assert spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        set_default_registry(previous)
    return registry


def generated_rbac(
    namespace: str, example: Path = EXAMPLE, crds: list[Any] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The account's name and rbac.yaml's documents, for an operator serving ``namespace``."""
    name = f"rbac-{namespace}"  # the ClusterRole is cluster-wide: one per test
    options = ManifestOptions(name=name, namespace=namespace, namespaces=(namespace,))
    text = manifest_files(example_registry(example), options, crds or [])["rbac.yaml"]
    return name, [doc for doc in yaml.safe_load_all(text) if doc]


def install(
    plane: LocalControlPlane, namespace: str, name: str, docs: list[Any], tmp: Path
) -> Path:
    """Apply the RBAC and the namespace's default peering object (so that peering is used,
    not skipped); return the account's token folder."""
    peering = {
        "apiVersion": "anyop.dev/v1",
        "kind": "AnyopPeering",
        "metadata": {"name": "default"},
    }
    items = [*docs, {**peering, "metadata": {"name": "default", "namespace": namespace}}]
    kubectl(
        plane,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
    )
    return service_account_folder(plane, namespace, tmp / "serviceaccount", account=name)


def widget(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "demo.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


def refusals_in(text: str) -> list[str]:
    """The 403s in an operator's output, but for Kopf's peering kinds: the peering object is
    looked for there too, and a kind that may not be read counts as having none (a debug line;
    the generated RBAC is for anyop's own peering only)."""
    lines = [line for line in text.splitlines() if "forbidden" in line.lower()]
    return [line for line in lines if "No access to kopfpeerings" not in line]


@BACKENDS
def test_the_typed_example_runs_under_only_the_generated_rbac(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    widget_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = generated_rbac(ns)
    folder = install(plane, ns, name, docs, tmp_path)
    with operator_in_pod(plane, folder, str(EXAMPLE), "-n", ns, backend=backend) as output:
        apply(plane, ns, widget("w", {"replicas": 2}))
        until(lambda: get(plane, ns, "widget", "w").get("status", {}).get("replicas") == 2, "2")
        apply(plane, ns, widget("w", {"replicas": 1}))
        output.wait_for(f"[{ns}/w] Deleted w-1.")
        apply(plane, ns, widget("over", {"replicas": 3, "maxReplicas": 1}))
        output.wait_for("replicas 3 exceed maxReplicas 1")
        events = until(
            lambda: [
                event for event in get(plane, ns, "events")["items"] if event["reason"] == "Invalid"
            ],
            "an Invalid Event",
        )
    assert events[0]["involvedObject"]["name"] == "over"
    assert not refusals_in(output.text)


@BACKENDS
def test_the_reconcile_example_runs_under_only_the_rbac_generated_with_its_crd(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    backend: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    crds = list(yaml.safe_load_all((EXAMPLES / "crd.yaml").read_text()))
    name, docs = generated_rbac(ns, RECONCILE, crds)
    folder = install(plane, ns, name, docs, tmp_path)
    with operator_in_pod(plane, folder, str(RECONCILE), "-n", ns, backend=backend) as output:
        apply_kex(plane, ns, "kex", replicas=2)
        output.wait_for(f"[{ns}/kex] Created kex-1.")
        apply_kex(plane, ns, "kex", replicas=1)
        output.wait_for(f"[{ns}/kex] Deleted kex-1.")
        until(lambda: get(plane, ns, "kex", "kex").get("status", {}).get("replicas") == 1, "1")
    assert not refusals_in(output.text)


CASES = [
    ("widgets", "watch", 'cannot watch resource "widgets"'),
    ("customresourcedefinitions", None, "CustomResourceDefinitions cannot be listed (forbidden)"),
    ("anyoppeerings", "get", 'cannot get resource "anyoppeerings"'),
    ("anyoppeerings", "list", 'cannot list resource "anyoppeerings"'),
    ("anyoppeerings", "watch", 'cannot watch resource "anyoppeerings"'),
    ("anyoppeerings", "patch", 'cannot patch resource "anyoppeerings"'),
    ("configmaps", "list", 'cannot list resource "configmaps"'),
    ("widgets/status", None, 'cannot patch resource "widgets/status"'),
    ("configmaps", "create", 'cannot create resource "configmaps"'),
    ("events", None, 'cannot create resource "events"'),
]


@pytest.mark.parametrize(
    ("resource", "verb", "refusal"),
    CASES,
    ids=[f"{resource}-{verb or 'rule'}" for resource, verb, _ in CASES],
)
def test_without_a_generated_rule_the_operator_says_what_it_was_refused(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    widget_crd: str,
    resource: str,
    verb: str | None,
    refusal: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    name, docs = generated_rbac(ns)
    folder = install(plane, ns, name, without(docs, resource, verb), tmp_path)
    args = (str(EXAMPLE), "-n", ns)
    with operator_in_pod(plane, folder, *args, backend="asyncio", check=False) as output:
        apply(plane, ns, widget("w", {"replicas": 1}))
        apply(plane, ns, widget("over", {"replicas": 3, "maxReplicas": 1}))
        until(lambda: refusal in output.text, f"the operator says {refusal!r}")
