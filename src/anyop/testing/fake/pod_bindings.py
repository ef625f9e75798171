"""The binding of a Pod to a node, as a scheduler asks for it: ``POST`` of a ``Binding`` to
``bindings`` or to a Pod's ``binding`` subresource (kube-apiserver's ``BindingREST``).

The Pod gets the target node in ``spec.nodeName``, the binding's annotations and labels
(overwriting its own), its ``nominatedNodeName`` cleared and the condition ``PodScheduled``
``True``; the write is the storage's own (no strategy, ``managedFields`` untouched, no
``generation`` counted). It is refused (409) while the Pod is being deleted, is bound already,
or has scheduling gates. On the subresource, the binding's ``uid`` and ``resourceVersion`` are
preconditions; on ``bindings``, the create handler clears them. The answer is a ``Status`` of
success (201).

Sync: it writes to the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.body_kinds import checked_body_kind
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.request_bodies import decode_body
from anyop.testing.fake.routes import Route
from anyop.testing.fake.statuses import StatusError, bad_request, conflict, status_body
from anyop.testing.fake.store import Store
from anyop.testing.fake.typed_decoding import decode

__all__ = ["bind", "handles"]

Body = dict[str, Any]
_BINDINGS = ("", "bindings")


def handles(kind: Kind, route: Route) -> bool:
    """Whether the request's path is a binding's: ``bindings``, or a Pod's ``binding``."""
    if kind.custom:
        return False
    found = (kind.group, kind.plural)
    return found == _BINDINGS or (found == ("", "pods") and route.subresource == "binding")


def bind(
    store: Store, kind: Kind, route: Route, method: str, content_type: str, body: bytes
) -> tuple[int, Body]:
    """Answer a request of a path :func:`handles` (its code and body).

    Raises:
        StatusError: 400 (no name, another name than the URL's), 404 (no such Pod, or a path
            of no binding), 405 (not a POST), 409 (see the module), 500 (an invalid target).
    """
    subresource = route.subresource == "binding"
    if (route.name is not None and not subresource) or route.namespace is None:
        raise StatusError(status_body(404, "NotFound", _NO_RESOURCE, details={}))
    if method != "POST":
        message = "the server does not allow this method on the requested resource"
        raise StatusError(status_body(405, "MethodNotAllowed", message, details={}))
    binding_kind = store.kind("", "v1", "bindings")
    assert binding_kind is not None
    sent = decode_body(binding_kind, content_type, body)
    if not isinstance(sent, Mapping):
        raise bad_request("the request body is not an object")
    checked_body_kind(binding_kind, sent, body)
    binding = decode("", "v1", "Binding", dict(sent))
    metadata = binding.get("metadata") or {}
    name = str(metadata.get("name") or "")
    if not subresource and not name:
        raise bad_request("Name parameter required.")
    if subresource and name != route.name:
        raise bad_request("name in URL does not match name in Binding object")
    if errors := _binding_errors(binding.get("target") or {}):
        message = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        raise StatusError(status_body(500, "", message))
    pods = store.kind("", "v1", "pods")
    assert pods is not None
    stored = store.find(pods, route.namespace, name)
    if subresource:
        _check_preconditions(stored, metadata)
    if why := _refusal(stored):
        raise conflict("pods/binding", "", name, why=why)
    if not store.dry_run:
        bound = _bound(stored, binding, now=store.now())
        store.commit(pods, "MODIFIED", bound, old=stored)
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                 "code": 201}  # fmt: skip


_NO_RESOURCE = "the server could not find the requested resource"


def _binding_errors(target: Mapping[str, Any]) -> list[str]:
    """``ValidatePodBinding``'s errors, as the aggregate error words them."""
    errors = []
    if target.get("kind") and target["kind"] != "Node":
        errors.append(f'target.kind: Unsupported value: "{target["kind"]}": supported values: '
                      '"Node", "<empty>"')  # fmt: skip
    if not target.get("name"):
        errors.append("target.name: Required value")
    return errors


def _check_preconditions(pod: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
    """The storage's preconditions: the binding's ``uid`` and ``resourceVersion`` (if any)."""
    found = pod["metadata"]
    name = str(found["name"])
    storage = (f"StorageError: invalid object, Code: 4, Key: /registry/pods/{found['namespace']}/"
               f"{name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed:")  # fmt: skip
    if (uid := metadata.get("uid")) and uid != found.get("uid"):
        why = f"{storage} UID in precondition: {uid}, UID in object meta: {found['uid']}"
        raise conflict("pods", "", name, why=why)
    version = metadata.get("resourceVersion")
    if version and version != found.get("resourceVersion"):
        why = (f"{storage} ResourceVersion in precondition: {version}, ResourceVersion in object "
               f"meta: {found['resourceVersion']}")  # fmt: skip
        raise conflict("pods", "", name, why=why)


def _refusal(pod: Mapping[str, Any]) -> str | None:
    """Why the Pod may not be bound, if it may not."""
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    name = metadata["name"]
    if metadata.get("deletionTimestamp"):
        return f"pod {name} is being deleted, cannot be assigned to a host"
    if spec.get("nodeName"):
        return f'pod {name} is already assigned to node "{spec["nodeName"]}"'
    if spec.get("schedulingGates"):
        return f"pod {name} has non-empty .spec.schedulingGates"
    return None


def _bound(pod: Mapping[str, Any], binding: Mapping[str, Any], *, now: str) -> Body:
    """The Pod bound as the binding asks (a new object: the stored one stays as it is)."""
    metadata = dict(pod["metadata"])
    given = binding.get("metadata") or {}
    if annotations := given.get("annotations"):
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    if labels := given.get("labels"):
        metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    spec = {**(pod.get("spec") or {}), "nodeName": binding["target"]["name"]}
    status = {key: value for key, value in (pod.get("status") or {}).items()
              if key != "nominatedNodeName"}  # fmt: skip
    conditions = list(status.get("conditions") or ())
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": now}  # fmt: skip
    for index, condition in enumerate(conditions):
        if condition.get("type") == "PodScheduled":
            if condition.get("status") == "True":
                scheduled["lastTransitionTime"] = condition.get("lastTransitionTime")
            conditions[index] = scheduled
            break
    else:
        conditions.append(scheduled)
    status["conditions"] = conditions
    return {**pod, "metadata": metadata, "spec": spec, "status": status}
