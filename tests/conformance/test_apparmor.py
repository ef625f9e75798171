"""Conformance: a Pod's deprecated AppArmor annotations (``container.apparmor.security.beta
.kubernetes.io/<container>``) and its ``appArmorProfile`` fields: the annotations copied into
the containers' fields on create, with their warning (``applyAppArmorVersionSkew``); both
checked (the annotations' values and containers, the fields' types and names, an annotation
that does not match its field), on Pods and on workloads' pod templates; an update that
adds, changes or removes an annotation refused.

Each write is recorded as its status, its ``Warning`` header, and the object's annotations
and security contexts (or the refusal's causes).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target, status_shown
from tests.conformance.test_workloads import DEPLOYMENT

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
KEY = "container.apparmor.security.beta.kubernetes.io/"
APPLY = "application/apply-patch+yaml"


def _shown(document: Any) -> Any:
    """A refusal's causes; or the pod's (or template's) annotations and security contexts."""
    if not isinstance(document, dict):
        return document
    if document.get("kind") == "Status":
        return status_shown(document)
    pod = document
    if document.get("kind") != "Pod":
        pod = document["spec"]["template"]
    spec = pod.get("spec") or {}
    return {
        "annotations": (pod.get("metadata") or {}).get("annotations"),
        "pod": (spec.get("securityContext") or {}).get("appArmorProfile"),
        "containers": {
            c["name"]: c.get("securityContext")
            for key in ("initContainers", "containers")
            for c in spec.get(key) or ()
        },
    }


async def _write(
    t: Target,
    label: str,
    method: str,
    path: str,
    body: Any,
    *,
    ct: str = "application/json",
    params: dict[str, str] | None = None,
) -> Any:
    """Send a write; note its status, ``Warning`` header and what :func:`_shown` shows."""
    if method in ("PUT", "PATCH"):
        await t.api.get(path.rsplit("/", 1)[0])  # the watch cache caught up
    answer = await t.api.request(
        method, path, content=json.dumps(body), headers={"Content-Type": ct}, params=params
    )
    document = answer.json()
    t.note(label, (answer.status_code, answer.headers.get("warning"), _shown(document)))
    return document


def _pod(
    name: str = "p",
    annotations: dict[str, str] | None = None,
    profile: Body | None = None,
    containers: list[Body] | None = None,
    **spec: Any,
) -> Body:
    pod: Body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers or [{"name": "c", "image": "busybox"}], **spec},
    }
    if annotations is not None:
        pod["metadata"]["annotations"] = annotations
    if profile is not None:
        pod["spec"]["securityContext"] = {"appArmorProfile": profile}
    return pod


def _container(name: str, profile: Body | None = None) -> Body:
    container: Body = {"name": name, "image": "busybox"}
    if profile is not None:
        container["securityContext"] = {"appArmorProfile": profile}
    return container


async def test_a_pods_annotations_are_copied_into_its_containers_fields(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        annotations = {f"{KEY}c": "runtime/default", f"{KEY}i": "localhost/prof",
                       f"{KEY}d": "unconfined"}  # fmt: skip
        containers = [_container("c"), _container("d", {"type": "RuntimeDefault"})]
        pod = _pod("one", annotations, containers=containers,
                   initContainers=[_container("i")])  # fmt: skip
        await _write(t, "mismatch", "POST", pods, pod)
        annotations[f"{KEY}d"] = "runtime/default"
        pod = _pod("three", annotations, containers=containers,
                   initContainers=[_container("i")],
                   nodeSelector={"beta.kubernetes.io/arch": "amd64"})  # fmt: skip
        await _write(t, "create, with the spec's own warning", "POST", pods, pod)
        await t.get(t.core("pods", "three"), record=_shown)
        dry = _pod("two", {f"{KEY}c": "unconfined"})
        await _write(t, "dry run", "POST", pods, dry, params={"dryRun": "All"})

    await conform(scenario)


async def test_an_annotation_like_the_pods_profile_is_not_copied(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        pod = _pod("one", {f"{KEY}c": "runtime/default"}, {"type": "RuntimeDefault"})
        await _write(t, "same as the pod's", "POST", pods, pod)
        pod = _pod(
            "two", {f"{KEY}c": "localhost/x"}, {"type": "Localhost", "localhostProfile": "x"}
        )
        await _write(t, "same localhost", "POST", pods, pod)
        pod = _pod("three", {f"{KEY}c": "localhost/"})
        await _write(t, "no name: warned, not copied", "POST", pods, pod)
        pod = _pod("four", {f"{KEY}c": ""})
        await _write(t, "empty: warned, not copied", "POST", pods, pod)

    await conform(scenario)


async def test_an_annotation_the_pod_refuses_is_warned_of_all_the_same(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        await _write(t, "unknown value", "POST", pods, _pod("one", {f"{KEY}c": "other"}))
        await _write(t, "no container", "POST", pods, _pod("two", {f"{KEY}x": "unconfined"}))
        bad = _pod("three", {f"{KEY}c": "unconfined"}, containers=[{"name": "c"}])
        await _write(t, "invalid spec", "POST", pods, bad)

    await conform(scenario)


async def test_an_annotation_and_its_field_must_match(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        local = {"type": "Localhost", "localhostProfile": "a"}
        for label, annotation, profile in (
            ("type", "runtime/default", {"type": "Unconfined"}),
            ("runtime default", "unconfined", {"type": "RuntimeDefault"}),
            ("localhost type", "runtime/default", local),
            ("localhost name", "localhost/b", local),
            ("localhost same", "localhost/a", local),
        ):
            name = label.replace(" ", "-")
            pod = _pod(name, {f"{KEY}c": annotation}, containers=[_container("c", profile)])
            await _write(t, label, "POST", pods, pod)
        pod = _pod("pod-level", {f"{KEY}c": "unconfined"}, {"type": "RuntimeDefault"})
        await _write(t, "the pod's profile", "POST", pods, pod)

    await conform(scenario)


async def test_the_profile_fields_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        for label, profile in (
            ("localhost without a name", {"type": "Localhost"}),
            ("localhost empty name", {"type": "Localhost", "localhostProfile": ""}),
            ("localhost padded", {"type": "Localhost", "localhostProfile": " a"}),
            ("name without localhost", {"type": "RuntimeDefault", "localhostProfile": "a"}),
            ("no type", {}),
            ("unknown type", {"type": "Other"}),
        ):
            name = label.replace(" ", "-")
            await _write(t, f"pod: {label}", "POST", pods, _pod(f"p-{name}", None, profile))
            pod = _pod(f"c-{name}", containers=[_container("c", profile)])
            await _write(t, f"container: {label}", "POST", pods, pod)

    await conform(scenario)


async def test_an_update_may_not_add_change_or_remove_an_annotation(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _write(t, "create", "POST", t.core("pods"), _pod("p", {f"{KEY}c": "unconfined"}))
        path = t.core("pods", "p")
        await _write(
            t,
            "change",
            "PATCH",
            path,
            {"metadata": {"annotations": {f"{KEY}c": "runtime/default"}}},
            ct=MERGE,
        )
        await _write(
            t, "remove", "PATCH", path, {"metadata": {"annotations": {f"{KEY}c": None}}}, ct=MERGE
        )
        await _write(t, "other", "PATCH", path,
                     {"metadata": {"annotations": {"a": "b"}}}, ct=MERGE)  # fmt: skip
        await _write(t, "create plain", "POST", t.core("pods"), _pod("q"))
        await _write(
            t,
            "add",
            "PATCH",
            t.core("pods", "q"),
            {"metadata": {"annotations": {f"{KEY}c": "unconfined"}}},
            ct=MERGE,
        )

    await conform(scenario)


async def test_an_applied_pods_annotation_is_copied_but_not_owned(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pod = _pod("p", {f"{KEY}c": "runtime/default"})
        answer = await _write(t, "apply", "PATCH", t.core("pods", "p"), pod, ct=APPLY,
                              params={"fieldManager": "m"})  # fmt: skip
        fields = [(e["manager"], e["fieldsV1"]) for e in answer["metadata"]["managedFields"]]
        t.note("owners", fields)

    await conform(scenario)


async def test_a_windows_pods_annotations_are_not_copied(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        pods = t.core("pods")
        pod = _pod("w", {f"{KEY}c": "runtime/default"}, os={"name": "windows"})
        await _write(t, "windows", "POST", pods, pod)
        pod = _pod("x", {f"{KEY}c": "bad"}, os={"name": "windows"})
        await _write(t, "windows, bad value", "POST", pods, pod)

    await conform(scenario)


def _deployment(name: str, annotations: dict[str, str], profile: Body | None = None) -> Body:
    body = copy.deepcopy(DEPLOYMENT)
    body["metadata"]["name"] = name
    template = body["spec"]["template"]
    template["metadata"]["annotations"] = annotations
    if profile is not None:
        template["spec"]["containers"][0]["securityContext"] = {"appArmorProfile": profile}
    return body


async def test_a_templates_annotations_are_checked_not_copied(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        deployments = t.apis("apps/v1", "deployments")
        await _write(t, "warned, kept", "POST", deployments,
                     _deployment("a", {f"{KEY}app": "runtime/default"}))  # fmt: skip
        await _write(t, "unknown value", "POST", deployments,
                     _deployment("b", {f"{KEY}app": "nope"}))  # fmt: skip
        await _write(t, "no container", "POST", deployments,
                     _deployment("c", {f"{KEY}x": "unconfined"}))  # fmt: skip
        await _write(
            t,
            "mismatch",
            "POST",
            deployments,
            _deployment("d", {f"{KEY}app": "unconfined"}, {"type": "RuntimeDefault"}),
        )
        await _write(t, "bad field", "POST", deployments,
                     _deployment("e", {}, {"type": "Localhost"}))  # fmt: skip
        patch = {"spec": {"template": {"metadata": {"annotations": {f"{KEY}app": "bad"}}}}}
        await _write(t, "update", "PATCH", t.apis("apps/v1", "deployments", "a"), patch, ct=MERGE)

    await conform(scenario)


async def test_a_jobs_template_annotations_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        job = {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {
                "metadata": {"annotations": {f"{KEY}c": "localhost/a"}},
                "spec": {"restartPolicy": "Never", "containers": [_container(
                    "c", {"type": "Localhost", "localhostProfile": "b"})]}}},
        }  # fmt: skip
        await _write(t, "mismatch", "POST", t.apis("batch/v1", "jobs"), job)
        job["spec"]["template"]["metadata"]["annotations"] = {f"{KEY}c": "x"}
        await _write(t, "unknown value", "POST", t.apis("batch/v1", "jobs"), job)

    await conform(scenario)
