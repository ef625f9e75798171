"""Who owns which fields of an object (``metadata.managedFields``), kept by every write.

Pure. The helpers of :mod:`anyop.testing.fake.server_side_apply`, and
:func:`owners_after_update` for the other writes (create, replace, patch): their manager (the
``fieldManager`` parameter, else the user agent's product) takes the fields they change, which
the other managers lose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

__all__ = [
    "MISSING",
    "entries_of",
    "new_entry",
    "owners_after_update",
    "rebuilt",
    "same_owner",
    "shape_of",
    "status_mode",
]

Body = dict[str, Any]
MISSING = object()
"""A path's value where the path is not there."""


_BUILTIN_SHAPES: dict[tuple[str, str, str], Shape] = {}


def shape_of(kind: Kind) -> Shape:
    """The structure of a kind's objects: its CRD schema, or its OpenAPI schema (one shape per
    built-in kind, kept: the catalog's schemas live as long as the process)."""
    if kind.custom:
        return Shape(kind.schema, lambda node: node)
    key = (kind.group, kind.version, kind.kind)
    found = _BUILTIN_SHAPES.get(key)
    if found is None:
        books = catalog()
        name = books.schema_name(*key)
        schema = books.schemas.get(name or "")
        found = _BUILTIN_SHAPES[key] = Shape(schema, lambda node: books.resolve(node)[0])
    return found


def status_mode(kind: Kind, subresource: str | None) -> str:
    """What of ``status`` a write by ``subresource`` owns (see ``field_ownership``)."""
    if subresource == "status":
        return "only"
    return "skip" if kind.status else "keep"


def entries_of(obj: Mapping[str, Any] | None) -> list[Body]:
    """A copy of an object's ``managedFields`` entries."""
    if obj is None:
        return []
    found = (obj.get("metadata") or {}).get("managedFields") or []
    return [dict(entry) for entry in found if isinstance(entry, Mapping)]


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


def owners_after_update(
    kind: Kind,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    subresource: str | None,
    now: str,
) -> list[Body]:
    """The ``managedFields`` after a create or an update by ``manager``: it owns the fields it
    changed (all of a new object's), which the other managers lose; removed fields go."""
    shape = shape_of(kind)
    mode = status_mode(kind, subresource)
    if old is None:  # a create: the manager owns every field, in one entry
        document = fields_v1_of(new, shape, status=mode)
        if not document:
            return []
        return [
            {**new_entry(kind, manager, "Update", now, subresource, set()), "fieldsV1": document}
        ]
    changed, taken = changes(old, new, shape, status=mode)
    entries = entries_of(old)
    sets = [from_fields_v1(entry.get("fieldsV1")) for entry in entries]
    owned = [fields - changed for fields in sets]
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
