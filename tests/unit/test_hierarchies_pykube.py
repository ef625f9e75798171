"""The hierarchy helpers change pykube-ng objects in place: the dict they hold in ``.obj``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import anyop
from anyop.handlers.context import current_body

pykube = pytest.importorskip("pykube")  # in the dev environment, not with the oldest versions

OWNER: dict[str, Any] = {
    "apiVersion": "kopf.dev/v1", "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "u1", "labels": {"app": "demo"}},
}  # fmt: skip


@pytest.fixture
def api() -> Iterator[Any]:
    """A client for a server that is never asked: building objects needs no requests."""
    client = pykube.HTTPClient(pykube.KubeConfig.from_url("http://127.0.0.1:9"))
    yield client
    client.session.close()


def pod(api: Any, **metadata: Any) -> Any:
    return pykube.Pod(api, {"apiVersion": "v1", "kind": "Pod", "metadata": dict(metadata)})


def test_adopt_fills_the_pods_own_dict_with_the_owners_reference_name_namespace_labels(
    api: Any,
) -> None:
    child = pod(api)
    held = child.obj
    anyop.adopt(child, OWNER)
    assert child.obj is held  # changed in place, not replaced
    assert child.obj["metadata"] == {
        "ownerReferences": [{
            "controller": True, "blockOwnerDeletion": True, "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample", "name": "kex", "uid": "u1",
        }],
        "generateName": "kex-",
        "namespace": "ns",
        "labels": {"app": "demo"},
    }  # fmt: skip
    assert child.labels == {"app": "demo"}  # pykube's own view of the same dict
    anyop.adopt(child, OWNER)  # idempotent
    assert len(child.obj["metadata"]["ownerReferences"]) == 1


def test_each_helper_changes_a_list_of_pykube_objects(api: Any) -> None:
    pods = [pod(api), pod(api, name="mine", namespace="other", labels={"app": "own"})]
    anyop.append_owner_reference(pods, OWNER, controller=False)
    anyop.harmonize_naming(pods, "kex")
    anyop.adjust_namespace(pods, "ns")
    anyop.label(pods, {"app": "demo", "tier": "web"})
    fresh, named = (p.obj["metadata"] for p in pods)
    assert (fresh["generateName"], fresh["namespace"]) == ("kex-", "ns")
    assert fresh["labels"] == {"app": "demo", "tier": "web"}
    assert (named.get("generateName"), named["name"], named["namespace"]) == (None, "mine", "other")
    assert named["labels"] == {"app": "own", "tier": "web"}  # not overwritten unless forced
    assert [m["ownerReferences"][0]["controller"] for m in (fresh, named)] == [False, False]
    anyop.remove_owner_reference(pods, OWNER)
    assert [m["ownerReferences"] for m in (fresh, named)] == [[], []]


def test_a_deployments_pod_template_is_labelled_as_nested(api: Any) -> None:
    template: dict[str, Any] = {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": []}}
    deployment = pykube.Deployment(
        api, {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": template}}
    )
    anyop.adopt(deployment, OWNER, nested="spec.template")
    assert deployment.obj["spec"]["template"]["metadata"]["labels"] == {"x": "y", "app": "demo"}
    assert deployment.obj["metadata"]["labels"] == {"app": "demo"}


def test_a_pykube_object_can_be_the_owner(api: Any) -> None:
    owner = pykube.Pod(
        api, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u2"}}
    )
    child = pod(api)
    anyop.append_owner_reference(child, owner)
    (reference,) = child.obj["metadata"]["ownerReferences"]
    assert (reference["kind"], reference["name"], reference["uid"]) == ("Pod", "p", "u2")


def test_in_a_handler_the_owner_is_the_handlers_object(api: Any) -> None:
    child = pod(api)
    token = current_body.set(OWNER)
    try:
        anyop.adopt(child)
    finally:
        current_body.reset(token)
    assert child.obj["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert child.obj["metadata"]["namespace"] == "ns"
