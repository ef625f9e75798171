"""What a write makes of an object: defaults, system metadata, status rules, generation.

Pure. :func:`prepare_create` and :func:`prepare_update` return the object to store (or raise a
422 :class:`~anyop.testing.fake.statuses.StatusError`); the store only numbers and keeps it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.json_copy import json_copy, same_json
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.object_meta import (
    object_meta_causes,
)
from anyop.testing.fake.object_names import name_causes
from anyop.testing.fake.outside_rules import strategy_prepared
from anyop.testing.fake.schemas import default, prune, violations
from anyop.testing.fake.service_rules import kept_allocations
from anyop.testing.fake.service_types import type_dependent_dropped
from anyop.testing.fake.statuses import Cause, invalid
from anyop.testing.fake.stored_form import as_stored

__all__ = [
    "SYSTEM_FIELDS",
    "Body",
    "added_finalizers",
    "count_generation",
    "generated_name",
    "is_same",
    "prepare_create",
    "prepare_update",
]

Body = dict[str, Any]

SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
"""Metadata that only the server sets; what clients send there is ignored."""

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def generated_name(prefix: str, rng: random.Random) -> str:
    """``generateName`` (cut to its first 58 bytes) plus five random characters, as the API
    server makes them (a name of 63 at most)."""
    if len(prefix.encode()) > 58:
        prefix = prefix.encode()[:58].decode(errors="ignore")
    return prefix + "".join(rng.choice(_NAME_CHARS) for _ in range(5))


def _custom_checks(
    kind: Kind,
    body: Body,
    name: str | None,
    old: Mapping[str, Any] | None = None,
    *,
    subresource: str | None = None,
    prior: list[tuple[str, Cause]],
    applied: bool = False,
    warned: list[str] | None = None,
) -> Body:
    """Default and prune a custom resource by its schema and refuse it on schema errors (and
    broken validation rules; transition rules against ``old``, the stored object); its numbers
    as sent (the checks see ``2.0`` as a float, as kube-apiserver's do, and so does the
    comparison with the stored object; the write stores them as the stored object gives them
    back, see :func:`.go_json.unstructured_numbers`). ``prior``:
    the errors of its metadata, which come first; ``applied``: a server-side apply's result,
    whose nulls are kept (and refused where the schema has no default nor ``nullable``)."""
    pruned = prune(default(body, kind.schema), kind.schema, nulls=applied)
    causes = violations(pruned, kind.schema, old, scale=kind.scale, prior=prior, warned=warned)
    if subresource == "status":
        causes = [_within_status(field, cause) for field, cause in causes]
    if causes:
        raise invalid(kind.kind, kind.group, name, causes=causes)
    return pruned


def _within_status(field: str, cause: Cause) -> tuple[str, Cause]:
    """The status subresource validates the status alone: its messages name paths in it."""
    checked = "Checked value must be of type integer (default format) in status."
    if field == "<nil>" and checked in cause["message"]:  # the root of what it validates
        return "status", {**cause, "message": cause["message"].replace(checked, checked[:-7])}
    if not field.startswith("status."):
        return field, cause
    inner = field.removeprefix("status.")
    message = cause["message"].replace(f"{field} in body", f"{inner} in body")
    return field, {**cause, "message": message}


def prepare_create(
    kind: Kind,
    body: Mapping[str, Any],
    *,
    namespace: str | None,
    uid: str,
    now: str,
    applied: bool = False,
) -> Body:
    """The object to store for a create (its name already generated if asked), made of the
    body's parts: give a copy of a body that must stay as it is.

    Raises:
        StatusError: 422, the name is missing or invalid, or the schema refuses the object.
    """
    obj = dict(body)
    obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
    metadata = obj["metadata"] = dict(obj.get("metadata") or {})
    name = str(metadata.get("name") or "")
    for field in (*SYSTEM_FIELDS, "resourceVersion", "managedFields"):
        if field != "generation" or kind.generation:  # a strategy that counts sets it
            metadata.pop(field, None)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["uid"], metadata["creationTimestamp"] = uid, now
    if kind.generation:
        metadata["generation"] = 1
    if kind.status:
        obj.pop("status", None)
    if kind.custom:  # (a built-in object's: with its kind's own, in new_object_causes)
        causes = name_causes(kind, metadata) + object_meta_causes(metadata, custom=True)
        obj = _custom_checks(kind, obj, name or None, prior=causes, applied=applied)
    obj = strategy_prepared(kind, obj, now=now)  # its strategy's PrepareForCreate
    return _builtin_defaults(kind, obj, creating=True)


def _omit_empty(obj: Body) -> Body:
    """Drop empty metadata maps and lists, as typed kinds serialise them (``omitempty``); the
    rest was decoded by its Go type already (:mod:`anyop.testing.fake.typed_decoding`)."""
    kept = dict(obj)
    metadata = kept.get("metadata") or {}
    kept["metadata"] = {
        key: value for key, value in metadata.items() if value != {} and value != []
    }
    return kept


def _builtin_defaults(kind: Kind, obj: Body, *, creating: bool) -> Body:
    if kind.custom:
        return obj
    obj = _omit_empty(obj)
    if kind.group or kind.plural != "namespaces":
        return obj
    name = obj["metadata"]["name"]
    labels = obj["metadata"].setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = name
    spec = obj.setdefault("spec", {})
    if creating and "kubernetes" not in (spec.get("finalizers") or ()):
        spec["finalizers"] = [*(spec.get("finalizers") or ()), "kubernetes"]  # PrepareForCreate
    phase = "Terminating" if obj["metadata"].get("deletionTimestamp") else "Active"
    obj["status"] = {"phase": phase}
    return obj


def _essence(kind: Kind, obj: Mapping[str, Any]) -> Body:
    """What ``metadata.generation`` counts changes of: all but metadata (and status if a
    subresource); an EndpointSlice's labels too (its strategy compares them)."""
    skipped = ("metadata", "status") if kind.status else ("metadata",)
    essence = {key: value for key, value in obj.items() if key not in skipped}
    if (kind.group, kind.plural) == ("discovery.k8s.io", "endpointslices"):
        essence["labels"] = (obj.get("metadata") or {}).get("labels") or {}
    return essence


def changed_uid(old: Mapping[str, Any], sent: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The error of an update that sends another ``uid`` than the stored one (one sent empty,
    or none, is the stored one)."""
    uid = (sent.get("metadata") or {}).get("uid")
    if not uid or uid == (old.get("metadata") or {}).get("uid"):
        return []
    message = f"Invalid value: {json.dumps(uid)}: field is immutable"
    return [("metadata.uid", {"reason": "FieldValueInvalid", "message": message})]


def added_finalizers(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The error of finalizers added to an object being deleted."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if not old_meta.get("deletionTimestamp"):
        return []
    before = set(old_meta.get("finalizers") or ())
    added = [item for item in new_meta.get("finalizers") or () if item not in before]
    if not added:
        return []
    listed = ", ".join(f'"{item}"' for item in added)
    message = (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        f"found new finalizers []string{{{listed}}}"
    )
    return [("metadata.finalizers", {"reason": "FieldValueForbidden", "message": message})]


def prepare_update(
    kind: Kind,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    subresource: str | None,
    applied: bool = False,
    warned: list[str] | None = None,
) -> Body:
    """The object to store for an update of ``old`` to ``new`` (a PUT body or a patch result,
    decoded: the result takes its parts, so give a copy of one that must stay as it is).
    ``warned``: where the warnings of a custom resource's ratcheted rules go.

    The main resource keeps the old ``status`` when ``/status`` is a subresource; the
    ``/status`` subresource keeps everything but ``status``. System metadata stays as it was;
    ``generation`` counts changes to the rest (see :func:`_essence`).

    Raises:
        StatusError: 422, a finalizer was added during deletion or the schema refuses it.
    """
    if subresource == "status" and (kind.custom or (kind.group, kind.plural) in _STATUS_OLD_META):
        obj = json_copy(dict(old))
        obj.pop("status", None)
        if "status" in new:
            obj["status"] = new["status"]
    elif subresource == "status":  # a built-in kind's strategy keeps the old spec, not metadata
        obj = {key: value for key, value in new.items() if key in ("metadata", "status")}
        obj.update({key: json_copy(value) for key, value in old.items()
                    if key not in ("metadata", "status")})  # fmt: skip
        kept = _STATUS_KEEPS.get((kind.group, kind.plural), ())
        obj["metadata"] = {key: value for key, value in (new.get("metadata") or {}).items()
                           if key not in kept}  # fmt: skip
        for key in kept:
            if key in (old.get("metadata") or {}):
                obj["metadata"][key] = json_copy(old["metadata"][key])
    else:
        obj = dict(new)
        if kind.status:
            obj.pop("status", None)
            if "status" in old:
                obj["status"] = json_copy(old["status"])
    obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
    metadata = obj["metadata"] = dict(obj.get("metadata") or {})
    old_meta = old.get("metadata") or {}
    for field in (*SYSTEM_FIELDS, "name", "namespace"):  # (a generateName is the update's)
        metadata.pop(field, None)
        if field in old_meta:
            metadata[field] = old_meta[field]
    metadata.pop("managedFields", None)
    name = str(old_meta.get("name", ""))
    if kind.custom:  # (a built-in object's: update_causes)
        updating = added_finalizers(old, obj) + changed_uid(old, new)
        causes = object_meta_causes(metadata, custom=True, updating=updating)
        obj = _custom_checks(kind, obj, name, old, subresource=subresource, prior=causes,
                             applied=applied, warned=warned)  # fmt: skip
    count_generation(kind, old, obj)
    if kind.plural == "namespaces" and not kind.group:
        # Only /finalize changes a namespace's spec.finalizers (and all else but its status).
        source = new if subresource == "finalize" else old
        finalizers = list((source.get("spec") or {}).get("finalizers") or [])
        spec = {k: v for k, v in (obj.get("spec") or {}).items() if k != "finalizers"}
        obj["spec"] = {**spec, "finalizers": finalizers} if finalizers else spec
    if (kind.group, kind.kind) == ("", "Service") and subresource is None:
        obj = kept_allocations(old, obj)
        type_dependent_dropped(old, obj)
    return _builtin_defaults(kind, obj, creating=False)


_STATUS_OLD_META = {
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("networking.k8s.io", "servicecidrs"), ("resource.k8s.io", "resourceclaims"),
    ("storage.k8s.io", "volumeattachments"),  # (ResetObjectMetaForStatus)
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),  # (the old ObjectMeta)
    ("apiregistration.k8s.io", "apiservices"),  # (its labels, annotations, finalizers, owners)
}  # fmt: skip
"""The built-in kinds whose ``/status`` keeps the old metadata (a custom resource's does too);
the others' keep the update's, but for :data:`_STATUS_KEEPS`."""
_STATUS_KEEPS = {("apps", "deployments"): ("labels",), ("", "pods"): ("ownerReferences",)}
"""The metadata fields a kind's ``/status`` keeps as they were."""
_COUNTED_ON_UPDATE = {("storage.k8s.io", "csidrivers")}
"""Kinds whose strategy counts an update's changes of the spec, but sets no generation on a
create: it counts from what the create kept (the client's, or none)."""


def count_generation(kind: Kind, old: Mapping[str, Any], obj: Body) -> None:
    """Set an update's ``metadata.generation`` (in place): the old one, plus one if the update
    changes more than the metadata and status (see :func:`_essence`). Kinds that do not count
    keep the old one (the create's: the client's, if it sent one)."""
    if (kind.group, kind.plural) in _COUNTED_ON_UPDATE:
        if _changed(kind, old, obj):
            generation = (old.get("metadata") or {}).get("generation") or 0
            obj["metadata"]["generation"] = int(generation) + 1
        return
    if not kind.generation:
        return
    old_meta = old.get("metadata") or {}
    counted = (kind.group, kind.plural) != ("scheduling.k8s.io", "priorityclasses")  # (its 1 stays)
    if counted and _changed(kind, old, obj):
        obj["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
    elif "generation" in old_meta:
        obj["metadata"]["generation"] = old_meta["generation"]
    else:
        obj["metadata"].pop("generation", None)


def _changed(kind: Kind, stored: Mapping[str, Any], obj: Body) -> bool:
    """Whether an update changes what the generation counts (see :func:`_essence`). A built-in
    object's as the strategies compare Go objects, semantically: an empty list or map is a nil
    one, as the stored one has it (see :func:`~anyop.testing.fake.stored_form.as_stored`);
    converted only where the objects differ at all."""
    before = _essence(kind, stored)
    if same_json(_essence(kind, obj), before):
        return False
    if kind.custom:
        return True
    return not same_json(
        _essence(kind, as_stored(kind.group, kind.version, kind.kind, obj)), before
    )


def is_same(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update changes nothing (then the API server writes nothing)."""
    strip = ("resourceVersion", "managedFields")
    old_meta = {k: v for k, v in (old.get("metadata") or {}).items() if k not in strip}
    new_meta = {k: v for k, v in (new.get("metadata") or {}).items() if k not in strip}
    rest = {k: v for k, v in old.items() if k != "metadata"}
    return same_json(old_meta, new_meta) and same_json(
        rest, {k: v for k, v in new.items() if k != "metadata"}
    )
