"""The ``scale`` subresource of custom resources: an ``autoscaling/v1`` Scale read from and
written to the paths the CRD names (``specReplicasPath``, ``statusReplicasPath``,
``labelSelectorPath``).

Pure but for :func:`rescale`, which writes to the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import writes
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.json_patches import PatchFailed, apply_json_patch
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.managed_fields import owners_after_scale
from anyop.testing.fake.patch_merging import apply_merge_patch
from anyop.testing.fake.schemas import default
from anyop.testing.fake.statuses import (
    StatusError,
    bad_request,
    invalid,
    rejected_patch,
    status_body,
    unsupported_media_type,
)
from anyop.testing.fake.store import Ref, Store
from anyop.testing.fake.typed_decoding import decode

__all__ = ["replicas_path", "rescale", "scale_of", "scaled", "with_replicas"]

Body = dict[str, Any]


def _path(text: str) -> list[str]:
    return [part for part in text.removeprefix(".").split(".") if part]


def _read(body: Mapping[str, Any], path: str) -> Any:
    value: Any = body
    for part in _path(path):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def selector_text(selector: Mapping[str, Any]) -> str:
    """A label selector as a string (``a=b,c in (d,e)``), as a workload's Scale shows it."""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    words = {"In": "in", "NotIn": "notin"}
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(sorted(expression.get("values") or ()))
        if operator in words:
            parts.append(f"{key} {words[operator]} ({values})")
        elif operator == "Exists":
            parts.append(str(key))
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(sorted(parts))


def replicas_path(kind: Kind) -> tuple[tuple[str, str], ...]:
    """The path of the object's replicas (its ``specReplicasPath``) in ``managedFields``."""
    return tuple(
        ("f", part) for part in _path((kind.scale or {}).get("specReplicasPath", ".spec.replicas"))
    )


_UNSET = -(2**31)
"""The replicas of a custom resource's Scale that an update starts from when the object has
none (the smallest int32, as kube-apiserver's): still there after the update, it is refused."""


def scale_of(kind: Kind, body: Mapping[str, Any], *, updating: bool = False) -> Body:
    """The object's Scale (``spec.replicas`` omitted when 0, as ``ScaleSpec`` writes it).

    ``updating``: the Scale that an update of it changes, whose replicas are :data:`_UNSET`
    where a custom resource has none.

    Raises:
        StatusError: 500, a custom resource has no value at its ``specReplicasPath``.
    """
    paths = kind.scale or {}
    metadata = body["metadata"]
    spec_path = paths.get("specReplicasPath", "")
    unset = kind.custom and _read(body, spec_path) is None
    if unset and not updating:
        cause = f'the spec replicas field "{spec_path}" does not exist'
        details = {"causes": [{"message": cause}]}
        message = f"Internal error occurred: {cause}"
        raise StatusError(status_body(500, "InternalError", message, details=details))
    kept = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    status: Body = {"replicas": int(_read(body, paths.get("statusReplicasPath", "")) or 0)}
    if selector := paths.get("labelSelectorPath"):
        found = _read(body, selector)
        if isinstance(found, Mapping):
            found = selector_text(found)
        if found is not None:
            status["selector"] = found
    replicas = _UNSET if unset else int(_read(body, spec_path) or 0)
    return {
        "apiVersion": "autoscaling/v1",  # in ``Scale``'s field order, as Go writes it
        "kind": "Scale",
        "metadata": {key: metadata[key] for key in kept if key in metadata},
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


def with_replicas(kind: Kind, body: Mapping[str, Any], scale: Mapping[str, Any]) -> Body:
    """The object with the Scale's ``spec.replicas`` written to its ``specReplicasPath``.

    Raises:
        StatusError: 422, the replicas are not an integer.
    """
    replicas = (scale.get("spec") or {}).get("replicas")
    if replicas is None:  # omitted when 0, as ScaleSpec writes it; null decodes to 0 too
        replicas = 0
    # Negative replicas are the custom resource's validation's to refuse (by its schema, then
    # as "should be a non-negative integer"), as the API server validates the updated object.
    if (
        not isinstance(replicas, int)
        or isinstance(replicas, bool)
        or (replicas < 0 and not kind.custom)
    ):
        message = f"Invalid value: {replicas!r}: must be greater than or equal to 0"
        cause = {"reason": "FieldValueInvalid", "message": message}
        name = str(body["metadata"].get("name", ""))
        raise invalid("Scale", "autoscaling", name, causes=[("spec.replicas", cause)])
    result = json_copy(dict(body))
    *parents, last = _path((kind.scale or {}).get("specReplicasPath", ".spec.replicas"))
    target = result
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = replicas
    return result


def scaled(kind: Kind, body: Mapping[str, Any], scale: Mapping[str, Any]) -> Body:
    """The object a write of its Scale makes: :func:`with_replicas`, and the Scale's
    ``resourceVersion`` (if any) as the update's precondition, checked after the mutating
    webhooks.

    Raises:
        StatusError: 422, the replicas are not an integer.
    """
    result = with_replicas(kind, body, scale)
    result["metadata"].pop("resourceVersion", None)
    if version := (scale.get("metadata") or {}).get("resourceVersion"):
        result["metadata"]["resourceVersion"] = version
    return result


def rescale(
    store: Store, ref: Ref, *, content_type: str, document: bytes, manager: str | None = None
) -> Body:
    """Write a Scale (PUT, or a merge or JSON patch of it) to the object's replicas; answer the
    new Scale. The owners change as
    :func:`~anyop.testing.fake.managed_fields.owners_after_scale` says (``manager`` is the
    writer).

    Raises:
        StatusError: 400, 404, 409 (stale resourceVersion), 415, 422 (bad replicas).
    """
    kind = ref.kind
    stored = store.find(kind, ref.namespace, ref.name)
    current = scale_of(kind, stored, updating=True)
    try:
        given = json.loads(document)
    except ValueError as exc:
        raise bad_request(f"error decoding the request: {exc}") from None
    try:
        if content_type == writes.JSON_PATCH:
            wanted = apply_json_patch(current, given)
        elif content_type in (writes.MERGE, writes.STRATEGIC) and isinstance(given, Mapping):
            wanted = apply_merge_patch(current, given)
        elif content_type == "application/json":
            wanted = given
        else:
            raise unsupported_media_type([writes.JSON_PATCH, writes.MERGE, writes.STRATEGIC])
    except PatchFailed:
        raise rejected_patch() from None
    if not isinstance(wanted, Mapping):
        raise bad_request("the body of the request is not a JSON object")
    _check_decodes(wanted, patched=content_type != "application/json")
    if (wanted.get("spec") or {}).get("replicas") == _UNSET:
        path = (kind.scale or {}).get("specReplicasPath", "")
        raise bad_request(f"the spec replicas field {json.dumps(path)} cannot be empty")
    new = scaled(kind, stored, wanted)
    spec_path = (kind.scale or {}).get("specReplicasPath", ".spec.replicas")
    replicas = replicas_path(kind)
    changed = _read(stored, spec_path) != _read(new, spec_path)
    owners = owners_after_scale(kind, stored, replicas=replicas, changed=changed,
                                manager=manager or "", zero=not _read(new, spec_path))  # fmt: skip
    # The Scale is no custom resource the API server decodes (and defaults): a spec the write
    # creates is stored without its defaults, so the next update is written, whatever it changes.
    undefaulted = kind.defaults and default(new, kind.schema) != new
    updated = writes.update(store, kind, stored, new=new, subresource="scale", owners=owners,
                            conditional=False)  # fmt: skip
    if undefaulted:
        store.unsettled.add((kind.group, kind.plural, ref.namespace or "", ref.name))
    return scale_of(kind, updated)


def _check_decodes(scale: Mapping[str, Any], *, patched: bool) -> None:
    """Refuse a Scale that ``autoscaling/v1`` does not decode (``"replicas": 3.0``), as
    kube-apiserver does: a body with an odd 400 of its scheme, a patch with a 422 that shows the
    patched Scale as Go's patcher writes it.

    Raises:
        StatusError: 400 or 422.
    """
    try:
        decode("autoscaling", "v1", "Scale", scale)
    except StatusError as exc:
        if not patched:
            scheme = '"pkg/runtime/scheme.go:111"'
            message = f"no kind is registered for the type v1.Scale in scheme {scheme}"
            raise bad_request(message) from None
        refusal = 'Scale in version "v1" cannot be handled as a Scale: '
        error = str(exc.body.get("message", "")).removeprefix(refusal)
        shown = json.dumps(scale, separators=(",", ":"))
        message = f"Invalid value: {json.dumps(shown)}: {error}"
        cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
        body = status_body(422, "Invalid", f' "" is invalid: patch: {message}')
        raise StatusError({**body, "details": {"causes": [cause]}}) from None
