"""The hierarchy helpers change the models of the kubernetes and kubernetes_asyncio clients."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import anyop

OWNER = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "u1", "labels": {"app": "demo"}},
}


@pytest.fixture(params=["kubernetes", "kubernetes_asyncio"])
def models(request: pytest.FixtureRequest) -> Any:
    pytest.importorskip(request.param)  # in the dev environment, not with the oldest versions
    return importlib.import_module(f"{request.param}.client")


def test_adopt_fills_a_pods_metadata_with_the_librarys_own_models(models: Any) -> None:
    pod = models.V1Pod(spec=models.V1PodSpec(containers=[]))
    anyop.adopt(pod, OWNER)
    assert isinstance(pod.metadata, models.V1ObjectMeta)
    assert pod.metadata.generate_name == "kex-"
    assert pod.metadata.namespace == "ns"
    assert pod.metadata.labels == {"app": "demo"}
    (reference,) = pod.metadata.owner_references
    assert isinstance(reference, models.V1OwnerReference)
    assert (reference.api_version, reference.kind, reference.name, reference.uid) == (
        "kopf.dev/v1", "KopfExample", "kex", "u1",
    )  # fmt: skip
    assert reference.controller is True
    assert reference.block_owner_deletion is True
    anyop.adopt(pod, OWNER)  # idempotent
    assert len(pod.metadata.owner_references) == 1


def test_names_namespaces_and_labels_respect_what_the_model_has(models: Any) -> None:
    pod = models.V1Pod(metadata=models.V1ObjectMeta(name="mine", namespace="other"))
    anyop.harmonize_naming(pod, "kex")
    anyop.adjust_namespace(pod, "ns")
    anyop.label(pod, {"app": "demo"})
    assert (pod.metadata.name, pod.metadata.generate_name) == ("mine", None)
    assert pod.metadata.namespace == "other"
    anyop.harmonize_naming(pod, "kex", forced=True, strict=True)
    anyop.adjust_namespace(pod, "ns", forced=True)
    assert (pod.metadata.name, pod.metadata.namespace) == ("kex", "ns")
    assert pod.metadata.labels == {"app": "demo"}


def test_nested_pod_templates_are_labelled_and_owner_references_removed(models: Any) -> None:
    template = models.V1PodTemplateSpec(metadata=models.V1ObjectMeta(labels={"x": "y"}))
    spec = models.V1DeploymentSpec(selector=models.V1LabelSelector(), template=template)
    deployment = models.V1Deployment(spec=spec)
    anyop.adopt(deployment, OWNER, nested="spec.template")
    assert deployment.spec.template.metadata.labels == {"x": "y", "app": "demo"}
    anyop.remove_owner_reference(deployment, OWNER)
    assert deployment.metadata.owner_references == []


def test_a_model_can_be_the_owner(models: Any) -> None:
    owner = models.V1Pod(
        api_version="v1", kind="Pod", metadata=models.V1ObjectMeta(name="p", uid="u2")
    )
    child = {"metadata": {}}
    anyop.append_owner_reference(child, owner)
    assert child["metadata"]["ownerReferences"][0]["uid"] == "u2"


def test_anything_else_is_refused_with_what_is_supported() -> None:
    with pytest.raises(TypeError, match="use dicts, pykube-ng objects, or kubernetes"):
        anyop.label([object()], {"a": "b"})
