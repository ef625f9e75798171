"""Writes: create, replace, patch and delete, with the API server's checks and side effects.

Sync. Each function checks the request against the stored state, prepares the new object with
:mod:`anyop.testing.fake.objects`, and commits it to the :class:`~anyop.testing.fake.store.Store`
(finalizers, deletion, namespaces terminating, CRDs serving their kinds).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake import conversions, go_json
from anyop.testing.fake.apparmor_rules import with_profile_fields
from anyop.testing.fake.batch_rules import with_generated_selector
from anyop.testing.fake.body_kinds import (
    OTHER_NAMESPACE,
    check_identity,
    check_uid,
    custom_kind_error,
)
from anyop.testing.fake.builtin_rules import (
    defaulted,
    error_group,
    new_object_causes,
    update_causes,
)
from anyop.testing.fake.crd_lifecycle import crd_prepared, delete_instances, establish, serve_anew
from anyop.testing.fake.go_json import go_printed, unstructured_numbers
from anyop.testing.fake.json_copy import json_copy, sorted_keys
from anyop.testing.fake.json_patches import PatchFailed, apply_json_patch
from anyop.testing.fake.kind_warnings import warnings_on_create, warnings_on_update
from anyop.testing.fake.kinds import CRD_KIND, NAMESPACE_KIND, Kind
from anyop.testing.fake.managed_fields import in_order, owners_after_update
from anyop.testing.fake.objects import (
    added_finalizers,
    changed_uid,
    count_generation,
    generated_name,
    is_same,
    prepare_create,
    prepare_update,
)
from anyop.testing.fake.openapi_catalog import catalog
from anyop.testing.fake.outside_rules import strategy_prepared
from anyop.testing.fake.patch_merging import apply_merge_patch, apply_strategic_patch
from anyop.testing.fake.resource_claim_rules import admin_access_causes
from anyop.testing.fake.schemas import default, prune
from anyop.testing.fake.service_allocation import allocate as _allocate  # its node ports too
from anyop.testing.fake.smd_typing import smd_errors
from anyop.testing.fake.statuses import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    forbidden_terminating,
    invalid,
    not_found,
    rejected_patch,
    status_body,
    unsupported_media_type,
)
from anyop.testing.fake.store import Ref, Store, shown
from anyop.testing.fake.stored_form import as_stored
from anyop.testing.fake.typed_decoding import decode, decode_metadata
from anyop.testing.fake.write_path import admitted, as_managed

__all__ = [
    "APPLY",
    "JSON_PATCH",
    "MERGE",
    "STRATEGIC",
    "create",
    "decoded",
    "patch",
    "check_version",
    "patched",
    "replace",
    "served",
    "update",
]

Body = dict[str, Any]
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
"""The fields of ``CustomResourceDefinitionNames`` in the Go struct's order (the JSON's)."""


def decoded(kind: Kind, body: Mapping[str, Any], *, stored: Body | None = None) -> Body:
    """A request's object as the API server reads it: a built-in one into its Go type (unknown
    fields dropped, wrong types refused), a custom resource's metadata into ``ObjectMeta``.

    ``stored`` is the object an update replaces: its fields, decoded before, are not walked
    again where the new object has them unchanged.

    Raises:
        StatusError: 400, a built-in object does not decode.
    """
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping) and "managedFields" in metadata:
        # The server keeps the field ownership itself: what a request sends there is dropped.
        body = {**body, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    if kind.custom:
        if not isinstance(body.get("metadata"), Mapping):
            return dict(body)
        metadata = decode_metadata(body["metadata"], kind=kind.kind, version=kind.version)
        return {**body, "metadata": metadata}
    if conversions.converts(kind):  # of the URL's version (a patch's result converted from
        body = conversions.as_decoded(kind, body)  # the other one, where it names it)
    return defaulted(kind, decode(kind.group, kind.version, kind.kind, body, like=stored))


_EMPTY_STATUSES: dict[tuple[str, str, str], Any] = {}


def _empty_status(kind: Kind, obj: Body) -> Body:
    """The status a create resets, as the kind's Go type serialises it when empty."""
    key = (kind.group, kind.version, kind.kind)
    if key not in _EMPTY_STATUSES:
        _EMPTY_STATUSES[key] = decode(*key, {}).get("status")
    empty = _EMPTY_STATUSES[key]
    return obj if empty is None else {**obj, "status": json_copy(empty)}


def served(kind: Kind, committed: Body) -> Body:
    """The answer of a write: the object as committed, in the kind's version. Its parts are
    the stored object's, which no write changes in place (each stores a new one): encode it,
    or copy it before changing it."""
    if conversions.converts(kind):
        return conversions.in_version(kind, committed)
    return {**committed, "apiVersion": kind.api_version}


def _check_namespace(store: Store, ref: Ref) -> None:
    kind, namespace = ref.kind, ref.namespace
    if not kind.namespaced or namespace is None:
        return
    found = store.namespace(namespace)
    if found is None:
        raise not_found("namespaces", "", namespace)
    if found["metadata"].get("deletionTimestamp"):
        raise forbidden_terminating(kind.plural, kind.group, ref.name, namespace=namespace)


def create(
    store: Store,
    kind: Kind,
    body: Mapping[str, Any],
    *,
    namespace: str | None,
    manager: str | None = None,
    owners: list[Body] | None = None,
    applied: bool = False,
    field_warnings: list[str] | None = None,
) -> Body:
    """Create an object; with ``generateName``, under a new name. The object is made of
    ``body``'s parts: give a copy of a body that must stay as it is. ``field_warnings`` (of
    its unknown fields) are recorded once it decodes.

    ``manager`` (the request's field manager) comes to own the object's fields in
    ``managedFields``; ``owners`` are those entries as they are (server-side apply's).
    ``applied``: the object is a server-side apply's (a custom resource keeps its nulls).

    Raises:
        StatusError: 400 (namespace mismatch), 403 (terminating namespace), 404 (no namespace),
            409 AlreadyExists, 422 Invalid.
    """
    if not isinstance(body, Mapping):
        raise bad_request("the body of the request is not a JSON object")
    conversions.check_api_version(kind, body)
    raw, body = body, decoded(kind, body)
    _record(store, field_warnings)
    metadata = dict(body.get("metadata") or {})
    if metadata.get("resourceVersion"):
        message = "resourceVersion should not be set on objects to be created"
        raise StatusError(status_body(500, "", message))
    given = metadata.get("namespace")
    if kind.namespaced and given and namespace and given != namespace:
        raise bad_request(OTHER_NAMESPACE)
    if not kind.namespaced:
        metadata.pop("namespace", None)  # a cluster-scoped object's is cleared
    body = store.admission.mutating(kind, None, {**body, "metadata": metadata})  # webhooks'
    metadata = dict(body.get("metadata") or {})
    if not metadata.get("name") and metadata.get("generateName"):
        metadata["name"] = generated_name(str(metadata["generateName"]), store.rng)
    elif not metadata.get("name") and (kind.group, kind.kind) == ("", "LimitRange"):
        metadata["name"] = store.uid()  # its strategy's PrepareForCreate names it so
    name = str(metadata.get("name") or "")
    if kind.custom and (wrong := custom_kind_error(kind, raw, name)):
        raise wrong
    obj = prepare_create(
        kind,
        {**body, "metadata": metadata},
        namespace=namespace if kind.namespaced else None,
        uid=store.uid(),
        now=store.now(),
        applied=applied,
    )
    if kind.custom:
        obj = unstructured_numbers(obj)  # as the stored object gives them back
    obj = crd_prepared(kind, obj)
    if owners is None and manager is not None:  # before admission and allocation: theirs is
        owners = [] if _untyped(kind, body) else owners_after_update(  # no manager's
            kind, None, as_managed(kind, obj), manager=manager, subresource=None,
            now=store.now())  # fmt: skip
    owners = store.admission.owned(owners)
    if (kind.group, kind.kind) == ("", "Service"):
        _allocate(store, obj, creating=True)
    elif (kind.group, kind.kind) == ("batch", "Job"):
        obj = with_generated_selector(obj)
    elif (kind.group, kind.kind) == ("", "Pod"):  # its strategy's AppArmor fields, warned of
        obj = with_profile_fields(obj, store.warnings)
    causes = admin_access_causes((kind.group, kind.kind), obj, store.namespace(namespace or ""))
    if causes := [*causes, *new_object_causes(kind, obj, raw=raw)]:
        raise invalid(kind.kind, error_group(kind), name, causes=causes)
    if kind.status and not kind.custom and "status" not in obj:
        obj = _empty_status(kind, obj)
    obj = admitted(kind, obj)
    if owners:
        obj["metadata"]["managedFields"] = in_order(owners)
    _check_namespace(store, Ref(kind, namespace, name))
    if store.warnings is not None:  # sent even if the storage then refuses it
        store.warnings += warnings_on_create(kind, obj)
    store.admission.validating(kind, obj)
    existing = store.objects[(kind.group, kind.plural)].get((namespace or "", name))
    if existing is not None:
        deleting = bool(existing["metadata"].get("deletionTimestamp"))
        raise already_exists(kind.plural, kind.group, name, deleting=deleting)
    created = store.commit(kind, "ADDED", conversions.written(kind, obj, old=None), old=None)
    key = (kind.group, kind.plural, namespace or "", name)
    if _first_update_written(kind, raw):
        store.unsettled.add(key)  # its first update is written, whatever it changes
    else:
        store.unsettled.discard(key)  # one stored before under the name
    if kind == CRD_KIND:
        establish(store, created)
    return served(kind, created)


def _record(store: Store, warnings: list[str] | None) -> None:
    """Record warnings of the request being answered (if it records them)."""
    if warnings and store.warnings is not None:
        store.warnings += warnings


def check_version(kind: Kind, stored: Mapping[str, Any], given: Any) -> None:
    if given and str(given) != stored["metadata"].get("resourceVersion"):
        raise conflict(kind.plural, kind.group, stored["metadata"]["name"])


def _check_precondition(kind: Kind, stored: Mapping[str, Any], request: Mapping[str, Any],
                        *, required: bool) -> None:  # fmt: skip
    """Refuse an update whose object (as the mutating webhooks left it) names another
    ``resourceVersion`` than the stored one (409), or none where its kind requires one (422:
    a custom resource's replace), as kube-apiserver's storage does once the object is made.

    Raises:
        StatusError: 409 or 422.
    """
    metadata = request.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    if required and not version:
        message = "Invalid value: 0: must be specified for an update"
        cause = {"reason": "FieldValueInvalid", "message": message}
        name = stored["metadata"]["name"]
        raise invalid(kind.plural, kind.group, name, causes=[("metadata.resourceVersion", cause)])
    check_version(kind, stored, version)


def _first_update_written(kind: Kind, body: Mapping[str, Any]) -> bool:
    """Whether kube-apiserver 1.36.3 writes an object's first update after its create (a new
    ``resourceVersion``) even where it changes nothing, and not the next: a claim's, and a
    Job's created without labels of its own or its template's (they are defaulted from the
    template as it is read, and stored by that update)."""
    if (kind.group, kind.plural) == ("", "persistentvolumeclaims"):
        return True
    if (kind.group, kind.plural) != ("batch", "jobs"):
        return False
    template = (body.get("spec") or {}).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    return not (body.get("metadata") or {}).get("labels") and not labels


def update(
    store: Store,
    kind: Kind,
    stored: Body,
    *,
    new: Mapping[str, Any],
    subresource: str | None,
    manager: str | None = None,
    owners: list[Body] | None = None,
    applied: bool = False,
    field_warnings: list[str] | None = None,
    conditional: bool | None = None,
) -> Body:
    """Store ``new`` in place of ``stored`` (a replace or patch already checked); an object being
    deleted whose last finalizer goes is deleted. ``field_warnings`` (a patch's unknown
    fields') are recorded once ``new`` decodes.

    ``conditional``: the ``resourceVersion`` of ``new`` as the mutating webhooks leave it is
    the update's precondition, checked after them as kube-apiserver checks it; ``True``: it
    must be given (a custom resource's replace); ``None``: the caller checked it.

    ``manager`` (the request's field manager) takes over the fields it changes in
    ``managedFields``; ``owners`` are the new entries as they are (server-side apply's); with
    neither, the ownership stays as it was. ``applied``: ``new`` is a server-side apply's
    result (a custom resource keeps its nulls).

    Raises:
        StatusError: 409 (stale precondition); 422, as
            :func:`~anyop.testing.fake.objects.prepare_update` refuses it.
    """
    raw = stored  # as stored; ``stored`` as of the kind's version (where its kind converts)
    stored = conversions.in_version(kind, stored) if conversions.converts(kind) else stored
    request = decoded(kind, new, stored=stored)
    _record(store, field_warnings)
    request = store.admission.mutating(kind, stored, request)  # the webhooks'
    if conditional is not None and store.admission.made(kind):
        _check_precondition(kind, stored, request, required=conditional)
    obj = prepare_update(kind, stored, request, subresource=subresource, applied=applied,
                         warned=store.warnings)  # fmt: skip
    obj = strategy_prepared(kind, obj, old=stored, sent=request, subresource=subresource,
                            now=store.now())  # fmt: skip
    if subresource is None:
        obj = crd_prepared(kind, obj, old=stored)
    retyped = False  # a custom resource's 2.0 where it stored 2: a change to Go's comparison
    if kind.custom:
        stored_form = unstructured_numbers(obj)
        retyped, obj = stored_form is not obj, stored_form  # (it is obj where none changes)
    if owners is None and manager is not None:  # before admission and allocation: theirs is
        seen = obj if subresource is not None else as_managed(kind, obj)  # no manager's
        owners = [] if _untyped(kind, request, stored) else owners_after_update(
            kind, stored, seen, manager=manager, subresource=subresource, now=store.now(),
            convert=conversions.other_versions(kind, raw, stored))  # fmt: skip
    owners = store.admission.owned(owners)
    if (kind.group, kind.kind) == ("", "Pod") and subresource is None:
        obj = admitted(kind, obj, old=stored)
        count_generation(kind, stored, obj)  # counted after admission, as the strategy counts
    elif (kind.group, kind.kind) == ("", "Service") and subresource is None:
        _allocate(store, obj, creating=False)
    elif (kind.group, kind.kind) == ("apps", "DaemonSet") and subresource is None:
        obj = admitted(kind, obj, old=stored)
    added = added_finalizers(stored, obj) + changed_uid(stored, request)
    if causes := update_causes(kind, stored, obj, added=added, raw=new, subresource=subresource):
        raise invalid(kind.kind, error_group(kind), stored["metadata"]["name"], causes=causes)
    if store.warnings is not None:  # sent even if it changes nothing
        store.warnings += warnings_on_update(kind, obj, stored, subresource=subresource)
    if (kind.group, kind.kind) == ("", "Service") and isinstance(obj.get("spec"), dict):
        spec = obj["spec"]  # a lone cluster IP reads as the list (``defaultOnRead``), which a
        if spec.get("clusterIP") and not spec.get("clusterIPs"):  # later write then sends
            spec["clusterIPs"] = [spec["clusterIP"]]
    if owners is None:
        owners = list(stored["metadata"].get("managedFields") or [])
    if owners:
        obj["metadata"]["managedFields"] = in_order(owners)
    key = (kind.group, kind.plural, stored["metadata"].get("namespace") or "",
           stored["metadata"]["name"])  # fmt: skip
    obj = conversions.written(kind, obj, old=raw, request=request, subresource=subresource)
    store.admission.validating(kind, obj)
    kept = obj if kind.custom else as_stored(*conversions.stored_as(kind), kind.kind, obj)
    unchanged = not retyped and is_same(raw, kept) and _same_owners(stored, obj)  # as stored
    if unchanged and key not in store.unsettled:
        return shown(kind, raw)
    store.unsettled.discard(key)
    metadata = obj["metadata"]
    if metadata.get("deletionTimestamp") and not _finalizers(kind, obj, raw):
        store.commit(kind, "DELETED", raw, old=raw)  # watches see the last stored state
        delete_instances(store, kind, stored)
        obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        return shown(kind, obj)  # the final removal answers with the last stored version
    committed = store.commit(kind, "MODIFIED", obj, old=raw)
    if kind == CRD_KIND:
        serve_anew(store, committed)
    return served(kind, committed)


def _untyped(kind: Kind, request: Mapping[str, Any], stored: Body | None = None) -> bool:
    """Whether structured merge cannot type a custom resource's write: the request's object
    as decoded (defaulted and pruned, its status still there: a ``"replicas": "2"`` that the
    create then drops), or the stored one (a list in a string with a format passes the
    schema's checks). kube-apiserver then stores it without ``managedFields``. A built-in
    object decoded by its Go type always can be."""
    if not kind.custom:
        return False
    typed = prune(default(dict(request), kind.schema), kind.schema)
    return any(smd_errors(kind, obj, duplicates=False) for obj in (typed, stored) if obj)


def _same_owners(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether the ownership is the same but for the times of the entries."""

    def timeless(obj: Mapping[str, Any]) -> list[Any]:
        entries = (obj.get("metadata") or {}).get("managedFields") or []
        return [{k: v for k, v in entry.items() if k != "time"} for entry in entries]

    return timeless(old) == timeless(new)


def _finalizers(kind: Kind, obj: Body, old: Body) -> list[str]:
    """What keeps an object being deleted: finalizers (a namespace's spec ones), a grace period."""
    found = list(obj["metadata"].get("finalizers") or ())
    if kind == NAMESPACE_KIND:
        found += (obj.get("spec") or {}).get("finalizers") or ()
    return found + ["grace"] * bool(old["metadata"].get("deletionGracePeriodSeconds"))


def replace(
    store: Store,
    ref: Ref,
    body: Mapping[str, Any],
    *,
    subresource: str | None = None,
    manager: str | None = None,
    field_warnings: list[str] | None = None,
) -> tuple[int, Body]:
    """Replace an object (PUT), or its status; create it where its kind allows a PUT to.
    ``field_warnings`` (of its unknown fields) are recorded once it decodes.

    Returns:
        200 and the object replaced, or 201 and the object created.

    Raises:
        StatusError: 400 (name mismatch), 404, 409 Conflict (stale resourceVersion), 422.
    """
    if not isinstance(body, Mapping):
        raise bad_request("the body of the request is not a JSON object")
    kind, name = ref.kind, ref.name
    conversions.check_api_version(kind, body)
    sent, body = body, decoded(kind, body)  # the server decodes first: a wrong type is first
    _record(store, field_warnings)
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    check_identity(kind, body, ref.namespace, ref.name)
    if (
        subresource is None
        and kind.creates_on_update
        and (store.objects[(kind.group, kind.plural)].get((ref.namespace or "", name)) is None)
    ):
        body = {**body, "metadata": {k: v for k, v in metadata.items() if k != "resourceVersion"}}
        return 201, create(store, kind, body, namespace=ref.namespace, manager=manager)
    stored = store.find(kind, ref.namespace, name)
    if kind.custom and (wrong := custom_kind_error(kind, sent, name)):
        raise wrong
    check_uid(kind, sent, stored)
    return 200, update(store, kind, stored, new=sent, subresource=subresource, manager=manager,
                       conditional=kind.conditional_update)  # fmt: skip


def check_patch_type(kind: Kind, content_type: str) -> None:
    """Refuse a patch of a type the resource does not take, before its object is looked for:
    a custom resource takes a JSON, merge or apply patch (415 naming them); a built-in kind any
    patch type, and another media type gets the router's bare 415.

    Raises:
        StatusError: 415.
    """
    if kind.custom and content_type not in (JSON_PATCH, MERGE, APPLY):
        raise unsupported_media_type([JSON_PATCH, MERGE, APPLY])
    if content_type not in (JSON_PATCH, MERGE, STRATEGIC, APPLY):
        message = "415: Unsupported Media Type"
        raise StatusError(status_body(415, "UnsupportedMediaType", message, details={}))


def patched(kind: Kind, stored: Body, *, content_type: str, document: bytes) -> Any:
    accepted = [JSON_PATCH, MERGE, APPLY] if kind.custom else [JSON_PATCH, MERGE, STRATEGIC, APPLY]
    if content_type not in accepted or content_type == APPLY:
        raise unsupported_media_type(accepted)
    try:
        patch = go_json.loads(document)
    except go_json.GoJSONError as exc:
        # The strategic merge patcher passes the decoder's error on bare; the others prefix it.
        prefix = "" if content_type == STRATEGIC else "error decoding patch: "
        raise bad_request(f"{prefix}{exc}") from None
    if kind.custom or stored.get("apiVersion") != kind.api_version:
        current = shown(kind, stored)  # as read: in the kind's version, with its defaults
    else:
        # As read already. The patches leave it as it is; what they share with it, the
        # update's decoding copies.
        current = stored
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            error = go_json.unmarshal_type_error(patch, "[]handlers.jsonPatchOp")
            raise bad_request(f"error decoding patch: {error}")
        try:
            return apply_json_patch(current, patch)
        except PatchFailed:
            raise rejected_patch() from None
    if not isinstance(patch, Mapping):
        error = go_json.unmarshal_type_error(patch, "map[string]interface {}")
        prefix = "" if content_type == STRATEGIC else "error decoding patch: "
        raise bad_request(f"{prefix}{error}")
    if content_type == STRATEGIC:
        books = catalog()
        name = books.schema_name(kind.group, kind.version, kind.kind)
        schema = books.schemas.get(name or "")
        return apply_strategic_patch(current, patch, schema, lambda s: books.resolve(s)[0])
    return apply_merge_patch(current, patch)


def patch(
    store: Store,
    ref: Ref,
    *,
    content_type: str,
    document: bytes,
    subresource: str | None = None,
    manager: str | None = None,
    field_warnings: list[str] | None = None,
) -> Body:
    """Patch an object, or its status, with a merge, JSON or strategic merge patch;
    ``field_warnings`` (of its unknown fields) are recorded once the patched object decodes.

    Raises:
        StatusError: 400 (undecodable), 404, 409 (stale resourceVersion in the patch),
            415 (strategic merge on a custom resource, or server-side apply), 422.
    """
    kind = ref.kind
    stored = store.find(kind, ref.namespace, ref.name)
    result = patched(kind, stored, content_type=content_type, document=document)
    if not isinstance(result, Mapping):
        raise rejected_patch()
    check_identity(kind, result, ref.namespace, ref.name)
    strategic = content_type == STRATEGIC
    if kind.custom:  # its metadata alone decodes (a built-in object's whole, in update)
        _check_patched_decodes(kind, result, strategic=False)
        _record(store, field_warnings)
        field_warnings = None
    try:
        return update(store, kind, stored, new=result, subresource=subresource, manager=manager,
                      field_warnings=field_warnings, conditional=False)  # fmt: skip
    except StatusError as exc:
        if exc.body.get("code") != 400 or kind.custom:
            raise
        _check_patched_decodes(kind, result, strategic=strategic, patch=document)  # as the
        raise  # patcher refuses it


def _check_patched_decodes(
    kind: Kind, result: Mapping[str, Any], *, strategic: bool, patch: bytes = b""
) -> None:
    """Refuse a patched object that does not decode (``"labels": []``) as kube-apiserver's
    patcher does: 422, the patched object (as Go writes a map: keys sorted; a strategic merge
    patch's: the ``patch`` itself, as Go's ``%v`` prints it) and the decoder's error under
    ``patch``.

    Raises:
        StatusError: 422.
    """
    try:
        if kind.custom or not strategic:  # the patcher writes its result as Go writes a map
            decoded(kind, sorted_keys(result))
        else:  # a strategic merge's result is converted, with the converter's errors
            decode(kind.group, kind.version, kind.kind, result, unstructured=True)
    except StatusError as exc:
        refusal = f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
        error = str(exc.body.get("message", "")).removeprefix(refusal)
        if strategic and not kind.custom:
            shown = go_printed(json.loads(patch))
        else:
            shown = json.dumps(result, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        message = f"Invalid value: {json.dumps(shown, ensure_ascii=False)}: {error}"
        cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
        body = status_body(422, "Invalid", f' "" is invalid: patch: {message}')
        raise StatusError({**body, "details": {"causes": [cause]}}) from None
