"""Least privilege: manifests/rbac.yaml without one of its rules (or verbs), and what breaks then.

Each case takes one rule or one verb away from the ServiceAccount of the in-cluster test, runs the
same operator in the same Pod-like environment, and finds the refusal that a user would see in the
log. docs/local-cluster.md has the table of what each rule is for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_examples_more_e2e import apply, kex, until
from tests.e2e.test_incluster_e2e import install_operator, operator_in_pod, rbac_documents

from anyop.testing.controlplane import LocalControlPlane

# (scope, the resource of the rule, the verb taken away or None for the whole rule, what it says)
CASES = [
    (
        "namespaced",
        "customresourcedefinitions",
        None,
        "CustomResourceDefinitions cannot be listed (forbidden)",
    ),
    ("namespaced", "anyoppeerings", "get", 'cannot get resource "anyoppeerings"'),
    ("namespaced", "anyoppeerings", "patch", 'cannot patch resource "anyoppeerings"'),
    ("namespaced", "leases", "get", 'cannot get resource "leases"'),
    ("namespaced", "leases", "create", 'cannot create resource "leases"'),
    ("namespaced", "events", None, 'cannot create resource "events"'),
    ("namespaced", "kopfexamples", "patch", 'cannot patch resource "kopfexamples"'),
    ("namespaced", "kopfexamples/status", None, 'cannot patch resource "kopfexamples/status"'),
    ("cluster-wide", "clusteranyoppeerings", "get", 'cannot get resource "clusteranyoppeerings"'),
    ("namespaced", "leases", "update", 'cannot update resource "leases"'),
    ("namespaced", "kopfexamples", "watch", 'cannot watch resource "kopfexamples"'),
    ("namespaced", "anyoppeerings", "list", 'cannot list resource "anyoppeerings"'),
    ("namespaced", "anyoppeerings", "watch", 'cannot watch resource "anyoppeerings"'),
    (
        "cluster-wide",
        "clusteranyoppeerings",
        "patch",
        'cannot patch resource "clusteranyoppeerings"',
    ),
]


def without(docs: list[dict[str, Any]], resource: str, verb: str | None) -> list[dict[str, Any]]:
    """The documents with one rule, or one verb of it, taken away."""
    for doc in docs:
        for rule in list(doc.get("rules", [])):
            if rule.get("resources") == [resource]:
                if verb is None:
                    doc["rules"].remove(rule)
                else:
                    rule["verbs"].remove(verb)
                return docs
    raise AssertionError(f"manifests/rbac.yaml has no rule for {resource}")


@pytest.mark.parametrize(
    ("scope", "resource", "verb", "refusal"),
    CASES,
    ids=[f"{scope}-{resource}-{verb or 'rule'}" for scope, resource, verb, _ in CASES],
)
def test_without_the_rule_the_operator_says_what_it_was_refused(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    scope: str,
    resource: str,
    verb: str | None,
    refusal: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    docs = without(rbac_documents(ns, cluster_wide=scope == "cluster-wide"), resource, verb)
    folder, args = install_operator(plane, ns, docs, tmp_path / "serviceaccount")
    events = resource == "events"  # posting.loggers only here: see test_incluster_e2e.py
    with operator_in_pod(
        plane, folder, *args, backend="asyncio", check=False, events=events
    ) as output:
        apply(plane, ns, kex("kex-1", {"field": "a", "items": ["x"]}))
        until(lambda: refusal in output.text, f"the operator says {refusal!r}")
