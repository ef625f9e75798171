"""Who owns which fields of an object (``metadata.managedFields``), kept by every write.

Pure. The helpers of :mod:`anyop.testing.fake.server_side_apply`, and
:func:`owners_after_update` for the other writes (create, replace, patch): their manager (the
``fieldManager`` parameter, else the user agent's product) takes the fields they change, which
the other managers lose.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.event_conversion import own_group_entries, zero_times
from anyop.testing.fake.field_ownership import (
    Path,
    Shape,
    changes,
    fields_v1_of,
    from_fields_v1,
    to_fields_v1,
)
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import catalog
from anyop.testing.fake.typed_decoding import decode

__all__ = [
    "MISSING",
    "changed_by_version",
    "entries_of",
    "in_order",
    "new_entry",
    "owners_after_scale",
    "owners_after_update",
    "rebuilt",
    "same_owner",
    "scale_entries",
    "shape_of",
    "status_mode",
]

Body = dict[str, Any]
Converter = Callable[[Mapping[str, Any], str], Mapping[str, Any]]
"""An object to another API version of its kind (``group/version``)."""
MISSING = object()
"""A path's value where the path is not there."""


_BUILTIN_SHAPES: dict[tuple[str, str, str], Shape] = {}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def shape_of(kind: Kind) -> Shape:
    """The structure of a kind's objects: its CRD schema, or its OpenAPI schema (one shape per
    built-in kind, kept: the catalog's schemas live as long as the process)."""
    if kind.custom:  # its metadata is ObjectMeta, whatever the CRD's schema says of it
        books = catalog()
        schema: dict[str, Any] = dict(kind.schema or {"x-kubernetes-preserve-unknown-fields": True})
        schema["properties"] = {**(schema.get("properties") or {}), "metadata": {"$ref": _META}}
        return Shape(schema, lambda node: books.resolve(node)[0] if "$ref" in node else node)
    key = (kind.group, kind.version, kind.kind)
    found = _BUILTIN_SHAPES.get(key)
    if found is None:
        books = catalog()
        name = books.schema_name(*key)
        found = _BUILTIN_SHAPES[key] = Shape(
            books.schemas.get(name or ""), lambda node: books.resolve(node)[0]
        )
    return found


_ZEROS: dict[tuple[str, str, str], Body] = {}


def zero_object(kind: Kind) -> Body:
    """What a create's changes are counted from: a custom resource's empty object, a built-in
    kind's Go zero value (its structs there, empty; its maps, lists and pointers not)."""
    if kind.custom:
        return {"metadata": {}}
    key = (kind.group, kind.version, kind.kind)
    found = _ZEROS.get(key)
    if found is None:
        found = _ZEROS[key] = {"metadata": {}, **decode(*key, {}),
                               **zero_times(kind.group, kind.kind)}  # fmt: skip
    return found


def status_mode(kind: Kind, subresource: str | None) -> str:
    """What of ``status`` a write by ``subresource`` owns (see ``field_ownership``)."""
    if subresource == "status":
        return "only"
    return "skip" if kind.status else "keep"


def entries_of(obj: Mapping[str, Any] | None) -> list[Body]:
    """A copy of an object's ``managedFields`` entries, read as kube-apiserver reads them: by
    their manager's identity, so of two entries of one identity the later one."""
    if obj is None:
        return []
    found = (obj.get("metadata") or {}).get("managedFields") or []
    entries = [dict(entry) for entry in found if isinstance(entry, Mapping)]
    keyed = {_identity(entry): index for index, entry in enumerate(entries)}
    if len(keyed) == len(entries):
        return entries
    return [entry for index, entry in enumerate(entries) if keyed[_identity(entry)] == index]


def new_entry(
    kind: Kind, manager: str, operation: str, now: str, subresource: str | None, fields: set[Path]
) -> Body:
    """One ``managedFields`` entry."""
    entry: Body = {
        "manager": manager,
        "operation": operation,
        "apiVersion": kind.api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(fields),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def same_owner(entry: Mapping[str, Any], manager: str, operation: str, sub: str | None) -> bool:
    """Whether an entry is the one of this manager, operation and subresource."""
    return (entry.get("manager"), entry.get("operation"), entry.get("subresource")) == (
        manager,
        operation,
        sub or None,
    )


def rebuilt(
    kind: Kind,
    entries: list[Body],
    owned: list[set[Path]],
    before: list[set[Path]] | None = None,
) -> list[Body]:
    """The entries with their new field sets; those left without fields go. An entry whose
    set is what it was (``before``: the sets its ``fieldsV1`` gave) keeps its document."""
    kept = []
    for index, (entry, fields) in enumerate(zip(entries, owned, strict=True)):
        if not fields:
            continue
        if before is not None and index < len(before) and before[index] == fields:
            kept.append(entry)
        else:
            kept.append({**entry, "fieldsV1": to_fields_v1(fields)})
    return kept


def changed_by_version(
    kind: Kind,
    entries: list[Body],
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    status: str,
    convert: Converter | None,
    taken: bool = False,
) -> dict[str, set[Path]]:
    """For each API version of the entries but the write's own, what comparing ``old`` and
    ``new`` converted to it finds changed (``taken``: changed or added), as structured merge
    compares the objects for the managers of each version; none where the kind's versions are
    not converted (their paths are the same)."""
    found = {}
    for version in {str(e.get("apiVersion") or "") for e in entries} - {kind.api_version, ""}:
        if convert is not None:
            group, _, plain = version.rpartition("/")  # (Events: of either group)
            other = dataclasses.replace(kind, group=group, version=plain)
            before, after = convert(old, version), convert(new, version)
            found[version] = changes(before, after, shape_of(other), status=status)[int(taken)]
    return found


def owners_after_update(
    kind: Kind,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    subresource: str | None,
    now: str,
    convert: Converter | None = None,
) -> list[Body]:
    """The ``managedFields`` after a create or an update by ``manager``: it owns the fields it
    changed (all of a new object's), which the other managers lose; removed fields go. An
    update of an object without ``managedFields`` leaves it without, as kube-apiserver does.

    ``convert`` (for a kind whose versions are converted, not only relabelled) gives ``old``
    and ``new`` in another API version: a manager of another version loses the fields that
    comparing them in its version finds changed."""
    shape = shape_of(kind)
    mode = status_mode(kind, subresource)
    if old is None:  # a create: the manager owns every field, in one entry
        document = fields_v1_of(new, shape, status=mode, zero=zero_object(kind))
        if not document:
            return []
        return [
            {**new_entry(kind, manager, "Update", now, subresource, set()), "fieldsV1": document}
        ]
    entries = entries_of(old)
    if not entries:  # an object no one owns a field of stays so until an apply (see apply)
        return []
    entries = own_group_entries(kind.group, entries)  # (an Event's of the other API: gone)
    changed, taken = changes(old, new, shape, status=mode)
    by_version = changed_by_version(kind, entries, old, new, status=mode, convert=convert)
    sets = [from_fields_v1(entry.get("fieldsV1")) for entry in entries]
    owned = [fields - by_version.get(str(entry.get("apiVersion")), changed)
             for entry, fields in zip(entries, sets, strict=True)]  # fmt: skip
    mine = next(
        (i for i, e in enumerate(entries) if same_owner(e, manager, "Update", subresource)), None
    )
    if not taken:
        return rebuilt(kind, entries, owned, sets)
    if mine is None:
        entries.append(new_entry(kind, manager, "Update", now, subresource, set()))
        owned.append(set())
        mine = len(entries) - 1
    owned[mine] |= taken
    entries[mine]["time"] = now
    return rebuilt(kind, entries, owned, sets)


def _identity(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """An entry's manager as kube-apiserver keys it: an update's names its API version too."""
    version = entry.get("apiVersion") if entry.get("operation") == "Update" else None
    return entry.get("manager"), entry.get("operation"), version, entry.get("subresource")


def in_order(entries: list[Body]) -> list[Body]:
    """Entries in kube-apiserver's order: by operation (applies first), time (none first),
    manager, API version and subresource."""
    return sorted(entries, key=_order)


def _order(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return (entry.get("operation") or "", entry.get("time") or "", entry.get("manager") or "",
            entry.get("apiVersion") or "", entry.get("subresource") or "")  # fmt: skip


def owners_after_scale(
    kind: Kind,
    old: Mapping[str, Any],
    *,
    replicas: Path,
    changed: bool,
    manager: str,
    zero: bool = False,
) -> list[Body]:
    """The ``managedFields`` of a custom resource after a write of its Scale by ``manager``, as
    kube-apiserver's scale handler leaves them.

    While no one owns the ``replicas`` (the spec replicas path), the Scale's fields are not
    tracked: nothing changes. Else the handler keys their owners by API version, so an update's
    owner is another manager to the Scale's entries than to the object's: it loses the field
    and, unless the replicas ``changed``, comes back beside itself as an entry of that one
    field without a time (read later as one with its own, by :func:`entries_of`: the later
    wins, which does not own them). Changed replicas go to the writer, in an entry of the
    ``scale`` subresource without a time, from every owner, an apply's too (an entry left
    owning nothing goes); changed to ``zero``, which the Scale leaves out, they go from every
    owner to no one. An apply's owner keeps them while they do not change.
    """
    entries = entries_of(old)
    owned = [from_fields_v1(entry.get("fieldsV1")) for entry in entries]
    if not any(replicas in fields for fields in owned):
        return entries
    result: list[Body] = []
    for entry, fields in zip(entries, owned, strict=True):
        if replicas not in fields or (entry.get("operation") == "Apply" and not changed):
            result.append(entry)
            continue
        if rest := fields - {replicas}:
            result.append({**entry, "fieldsV1": to_fields_v1(rest)})
        if not changed:
            stranger = {k: v for k, v in entry.items() if k not in ("time", "fieldsV1")}
            result.append({**stranger, "fieldsV1": to_fields_v1({replicas})})
    if changed and not zero:
        taker = new_entry(kind, manager, "Update", "", "scale", {replicas})
        result.append({k: v for k, v in taker.items() if k != "time"})
    return result


_SCALE_REPLICAS = (("f", "spec"), ("f", "replicas"))


def scale_entries(entries: list[Body], replicas: Path) -> list[Body]:
    """The ``managedFields`` of an object's ``autoscaling/v1`` Scale, as kube-apiserver's scale
    handler shows them to admission: the entries that own the object's ``replicas`` path, each
    owning the Scale's ``spec.replicas`` in its version."""
    fields = to_fields_v1({_SCALE_REPLICAS})
    return [{**entry, "apiVersion": "autoscaling/v1", "fieldsV1": fields} for entry in entries
            if replicas in from_fields_v1(entry.get("fieldsV1"))]  # fmt: skip
