"""Server-side apply (``application/apply-patch+yaml``) and the field ownership of every write.

Sync. :func:`apply` merges an applied configuration into the object as the API server's
structured merge does: by the kind's list types (map-lists by their keys, sets, atomic lists),
with ``metadata.managedFields`` recording who owns what; a field another manager owns and the
configuration changes is a conflict (409) unless ``force=true`` takes it over, and a field the
manager applied before and applies no more is removed (when no one else owns it).
``managed_fields.owners_after_update`` keeps the ownership of the other writes (create,
replace, patch): their manager takes the fields they change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from anyop.testing.fake import conversions, writes
from anyop.testing.fake.event_conversion import own_group_entries
from anyop.testing.fake.field_ownership import (
    Path,
    Shape,
    changes,
    fields_of,
    from_fields_v1,
    named_prefixes,
    path_text,
    remove_path,
    value_at,
)
from anyop.testing.fake.go_json import unstructured_numbers
from anyop.testing.fake.go_yaml import GoYAMLError
from anyop.testing.fake.json_copy import is_map, json_copy
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.managed_fields import (
    MISSING,
    changed_by_version,
    entries_of,
    new_entry,
    owners_after_update,
    rebuilt,
    same_owner,
    shape_of,
    status_mode,
)
from anyop.testing.fake.request_bodies import applied_document
from anyop.testing.fake.smd_typing import (
    smd_errors,
    smd_failure,
    undeclared_applied_field,
)
from anyop.testing.fake.statuses import StatusError, bad_request, invalid, status_body
from anyop.testing.fake.store import Ref, Store, shown
from anyop.testing.fake.typed_decoding import decode

__all__ = ["apply"]

Body = dict[str, Any]


# -- apply --------------------------------------------------------------------------------------


def _keeps_live(live: Any, where: Any, shape: Shape) -> bool:
    """Whether an applied null leaves the live value as it is: a granular map or list that has
    items (structured merge walks the live items, none of which the null names); a null
    where there is a scalar, an atomic value or nothing is a value, set as any other."""
    if where is None or not live:
        return False
    if is_map(live):
        return not shape.atomic_map(where)
    return isinstance(live, list) and shape.list_type(where)[0] in ("map", "set")


def _merge(live: Any, config: Any, where: Any, shape: Shape) -> Any:
    """The applied configuration merged into the live value, by the schema's structure."""
    if config is None and _keeps_live(live, where, shape):
        return json_copy(live)
    if is_map(config) and is_map(live) and not shape.atomic_map(where):
        result = dict(live)
        for key, value in config.items():
            result[key] = _merge(live.get(key, MISSING), value, shape.child(where, key), shape)
        return result
    if isinstance(config, list) and isinstance(live, list):
        kind, keys = shape.list_type(where)
        items = shape.items(where)
        if kind == "map" and keys:
            defaults = shape.node(where).key_defaults  # a key left out is keyed by its default

            def key_of(item: Any) -> str:
                if not isinstance(item, Mapping):
                    return json.dumps(item, sort_keys=True)
                found = [item[k] if k in item else defaults.get(k) for k in keys]
                return json.dumps(found, sort_keys=True)

            def merged(old: Any, new: Any) -> Any:
                if old is MISSING or new is MISSING:
                    return json_copy(new if old is MISSING else old)
                return _merge(old, new, items, shape)

            return _merged_list(live, config, key_of, merged)
        if kind == "set":
            return _merged_list(
                live,
                config,
                lambda item: json.dumps(item, sort_keys=True),
                lambda old, new: json_copy(old if new is MISSING else new),
            )
    return json_copy(config)


def _merged_list(
    live: list[Any],
    config: list[Any],
    key_of: Callable[[Any], str],
    merged: Callable[[Any, Any], Any],
) -> list[Any]:
    """A map-list's or set's live items and applied items together, in structured merge's
    order: the applied items in their order, each live item not applied where it was among
    them (``merged(live item, applied item)``, either :data:`MISSING`)."""
    lhs, rhs = [key_of(item) for item in live], [key_of(item) for item in config]
    in_live = dict(zip(lhs, live, strict=True))
    in_config = dict(zip(rhs, config, strict=True))
    shared = [key for key in rhs if key in in_live]
    next_shared = shared.pop(0) if shared else None
    done: set[str] = set()
    out: list[Any] = []
    left = right = 0
    while left < len(lhs) or right < len(rhs):
        if left < len(lhs) and right < len(rhs):
            key = lhs[left]
            if key == rhs[right]:
                done.add(key)
                out.append(merged(in_live.get(key, MISSING), in_config.get(key, MISSING)))
                left, right = left + 1, right + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if key in in_config and next_shared is not None and next_shared != key:
                left += 1  # applied too, but not the one wanted in this round
                continue
        if left < len(lhs):
            key = lhs[left]
            if key not in in_config:
                out.append(merged(live[left], MISSING))
                left += 1
                continue
            if key in done:
                left += 1
        if right < len(rhs):
            key = rhs[right]
            done.add(key)
            out.append(merged(in_live.get(key, MISSING), in_config.get(key, MISSING)))
            right += 1
            if next_shared is not None and next_shared == key:
                next_shared = shared.pop(0) if shared else None
    return out


def _conflict(conflicts: Sequence[tuple[Mapping[str, Any], Path]]) -> StatusError:
    """409 naming each manager whose fields the apply would change, managers in the order of
    their identifiers (as structured merge sorts them)."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_who(e)}",
               "field": path_text(p)} for e, p in conflicts]  # fmt: skip
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        text = f"Apply failed with 1 conflict: conflict with {_who(entry)}: {path_text(path)}"
    else:
        lines = []
        for key in sorted({_identifier(e) for e, _ in conflicts}):
            paths = [p for e, p in conflicts if _identifier(e) == key]
            entry = next(e for e, _ in conflicts if _identifier(e) == key)
            lines.append(f"conflicts with {_who(entry)}:")
            lines += [f"- {path_text(p)}" for p in paths]
        text = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(status_body(409, "Conflict", text, details={"causes": causes}))


def _identifier(entry: Mapping[str, Any]) -> str:
    """A manager's identifier, as kube-apiserver writes it: the entry's JSON without its time
    and fields (and an applier's API version), in ``ManagedFieldsEntry``'s field order."""
    kept: dict[str, Any] = {"manager": entry.get("manager"), "operation": entry.get("operation")}
    if entry.get("operation") != "Apply" and entry.get("apiVersion"):
        kept["apiVersion"] = entry["apiVersion"]
    if entry.get("subresource"):
        kept["subresource"] = entry["subresource"]
    return json.dumps({k: v for k, v in kept.items() if v}, separators=(",", ":"))


def _who(entry: Mapping[str, Any]) -> str:
    """A manager as conflicts name it (an updater with its API version)."""
    name = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        name = f"{name} with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        return f"{name} using {entry.get('apiVersion')}"
    return name


def _converted(
    kind: Kind, config: Mapping[str, Any], obj: Mapping[str, Any], write: Callable[[], Body]
) -> Body:
    """The write of an applied object; a built-in one that its Go type cannot hold (a replicas
    of 2.5, a quantity that is not one) refused as the field manager's conversion refuses it:
    500 with the converter's error, naming the configuration's own namespace and name (where
    the write, which decodes it, refuses it with 400).

    Raises:
        StatusError: 500, or as the write does.
    """
    try:
        return write()
    except StatusError as refused:
        if kind.custom or refused.body.get("code") != 400:
            raise
        try:
            decode(kind.group, kind.version, kind.kind, obj, unstructured=True)
        except StatusError as exc:
            raise _conversion_failure(kind, config, exc) from None
        raise


def _conversion_failure(kind: Kind, config: Mapping[str, Any], exc: StatusError) -> StatusError:
    """The field manager's 500 for the converter's refusal ``exc``."""
    gvk = f"{kind.api_version if kind.group else '/' + kind.version}, Kind={kind.kind}"
    metadata = config.get("metadata") or {}
    where = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
    message = (
        f"failed to convert new object ({where}; {gvk}) to proper version: unable to "
        f"convert unstructured object to {gvk}: {exc.body.get('message')}"
    )
    return StatusError(status_body(500, "", message, details=None))


def _null_emptied(merged: Any, gone: set[Path], shape: Shape) -> None:
    """A field that stays while everything in it went is null, not empty: structured merge
    rebuilds a list or map it removed from, and one left with nothing is no value."""
    for path in gone:
        field = path[:-1]
        if not field or field[-1][0] != "f" or _within(field, gone):
            continue
        holder, _ = value_at(merged, field[:-1], shape)
        name = field[-1][1]
        if is_map(holder) and type(holder.get(name)) in (list, dict) and not holder[name]:
            holder[name] = None


def _dangling(merged: Any, previous: set[Path], kept: set[Path], gone: set[Path],
              shape: Shape) -> set[Path]:  # fmt: skip
    """Structured merge's last pruning step (``addBackDanglingItems``): a declared field the
    applier held things in, that others' fields keep, goes whole (removed from ``merged``) if
    what is left of it once all but what is owned is pruned holds no field a field set finds
    (an empty set or map-list is none)."""
    keep = kept | named_prefixes(kept, shape)
    found: set[Path] = set()
    for path in sorted(named_prefixes(previous, shape) & keep, key=len):
        if path == _METADATA or _within(path, gone | found):
            continue  # (the metadata hold the name the configuration applies, the applier's)
        value, where = value_at(merged, path, shape)
        if is_map(value) and value and not _holds(value, where, path, keep, shape):
            remove_path(merged, path)
            found.add(path)
    return found


_METADATA: Path = (("f", "metadata"),)


def _holds(value: Mapping[str, Any], where: Any, path: Path, keep: set[Path], shape: Shape) -> bool:
    """Whether a kept (granular) map, pruned of all but the ``keep`` paths (a whole field when
    it is not kept, a list emptied to null as ``RemoveItems`` leaves it), still holds a field
    of its field set (``ToFieldSet``), or is null."""
    node = None if where is None else shape.node(where)
    removed = left = False  # anything pruned from it; anything that stays unseen by field sets
    for key, item in value.items():
        sub, at = shape.child(where, key), (*path, ("f", str(key)))
        named = node is not None and key in node.properties
        granular = isinstance(item, list) and shape.list_type(sub)[0] in ("set", "map")
        if granular and not item:
            left = True  # no field, not pruned
        elif is_map(item) and item and named and not shape.atomic_map(sub):
            if at not in keep:
                removed = True
            elif _holds(item, sub, at, keep, shape):
                return True
            else:
                left = True
        elif at in keep:
            return True  # a value, a null, an empty map, a list's kept items (or its null)
        else:
            removed = True
    return removed and not left  # pruned of everything: null


def _within(path: Path, prefixes: set[Path]) -> bool:
    """Whether ``path`` is one of ``prefixes`` or below one."""
    return any(path[:size] in prefixes for size in range(1, len(path) + 1))


BEFORE_FIRST_APPLY = "before-first-apply"
"""The manager of the fields of an object without ``managedFields`` when it is first applied."""


def _configuration(document: bytes, kind: Kind, ref: Ref) -> Body:
    try:
        body = applied_document(document)
    except GoYAMLError as exc:
        raise bad_request(f"error decoding YAML: error converting YAML to JSON: {exc}") from None
    if not isinstance(body, Mapping):
        raise bad_request("the applied configuration is not an object")
    if (body.get("apiVersion"), body.get("kind")) != (kind.api_version, kind.kind):
        group, _, version = str(body.get("apiVersion") or "").rpartition("/")
        raise bad_request(f"invalid object type: {group}/{version}, Kind={body.get('kind') or ''}")
    metadata = dict(body.get("metadata") or {})
    if (named := metadata.get("name", ref.name)) != ref.name:
        raise bad_request(f"the name of the object ({named or ''}) does not match the name on "
                          f"the URL ({ref.name})")  # fmt: skip
    metadata["name"] = ref.name
    # The configuration reaches the object through structured merge's typed values, which
    # write an integral float as an integer: `4.0` is `4` to the checks (a patch's is not).
    return unstructured_numbers({**body, "metadata": metadata})  # type: ignore[no-any-return]


def apply(
    store: Store,
    ref: Ref,
    *,
    document: bytes,
    manager: str,
    force: bool = False,
    subresource: str | None = None,
) -> tuple[int, Body]:
    """Server-side apply: create the object from the configuration if it is missing (201), else
    merge the configuration into it (200), with field ownership, conflicts and ``force``.

    On the ``status`` subresource, only the status changes (and its entry names the
    subresource); a missing object is not created there (404).

    Raises:
        StatusError: 400 (an undecodable body, another kind or name), 404 (no namespace, or
            no object to apply a subresource to),
            409 (a conflict with another manager's fields, without ``force``), 422 (no
            ``fieldManager``, or the object is invalid).
    """
    if not manager:
        message = "Required value: is required for apply patch"
        cause = {"reason": "FieldValueRequired", "message": message}
        raise invalid("PatchOptions", "meta.k8s.io", "", causes=[("fieldManager", cause)])
    kind = ref.kind
    config = _configuration(document, kind, ref)
    shape = shape_of(kind)
    mode = status_mode(kind, subresource)
    missing = (ref.namespace or "", ref.name) not in store.objects[(kind.group, kind.plural)]
    live = None if missing else shown(kind, store.objects[(kind.group, kind.plural)][
        (ref.namespace or "", ref.name)])  # fmt: skip
    entries = [] if live is None else entries_of(live)
    # A built-in object was decoded by its Go type: structured merge types it; a custom
    # resource may hold what its schema's checks let through (a list in a date-time string).
    untyped = [] if live is None or not kind.custom else smd_errors(kind, live, duplicates=False)
    if live is not None and not entries:
        # No one owns a field of it: its fields become those of "before-first-apply", an
        # update from the empty object, before the configuration is even read.
        if untyped:
            what = "failed to create manager for existing fields: failed to convert new object"
            raise smd_failure(what, kind, live, untyped, then=" to smd typed")
        entries = owners_after_update(kind, None, live, manager=BEFORE_FIRST_APPLY,
                                      subresource=subresource, now=store.now())  # fmt: skip
    entries = own_group_entries(kind.group, entries)  # (an Event's of the other API: gone)
    undeclared_applied_field(kind, document)
    if untyped:
        raise smd_failure("failed to create typed live object", kind, live or {}, untyped)
    applied = fields_of(config, shape, status=mode)
    if live is None and subresource is None:
        entries = [new_entry(kind, manager, "Apply", store.now(), None, applied)] if applied else []
        created = _converted(
            kind, config, config,
            lambda: writes.create(store, kind, config, namespace=ref.namespace, owners=entries,
                                  applied=True),
        )  # fmt: skip
        _keep_nulls(store, ref, config)
        return 201, created
    stored = store.find(kind, ref.namespace, ref.name)
    live = shown(kind, stored)
    sets = [from_fields_v1(entry.get("fieldsV1")) for entry in entries]
    owned = list(sets)  # replaced, never changed in place: ``sets`` stays as stored
    merged = _merge(live, config, shape.schema, shape)
    # What the apply changes is what comparing the live and merged objects finds modified or
    # added (structured merge's Updater.update: a null over an empty list is a change too).
    changing = changes(live, merged, shape, status=mode)[1]
    # A converted kind's managers of another version compare the objects in theirs.
    convert = conversions.other_versions(kind, stored, live)
    in_version = changed_by_version(
        kind, entries, live, merged, status=mode, convert=convert, taken=True
    )
    taking = [in_version.get(str(entry.get("apiVersion")), changing) for entry in entries]
    mine = next(
        (i for i, e in enumerate(entries) if same_owner(e, manager, "Apply", subresource)), None
    )
    conflicts = [(entry, path) for i, entry in enumerate(entries) if i != mine
                 for path in sorted(owned[i] & taking[i])]  # fmt: skip
    if conflicts and not force:
        raise _conflict(conflicts)
    if force:
        owned = [fields if i == mine else fields - taking[i] for i, fields in enumerate(owned)]
    previous = owned[mine] if mine is not None else set()
    others = set().union(*(f for i, f in enumerate(owned) if i != mine))
    # What it owned and no one owns now goes; a declared field that held what it owned goes
    # too unless it holds something owned still (structured merge's prune).
    kept = applied | others
    gone = (previous | named_prefixes(previous, shape)) - kept - named_prefixes(kept, shape)
    for path in sorted(gone, key=len):  # an item before its fields
        remove_path(merged, path)
    _null_emptied(merged, gone, shape)
    gone |= _dangling(merged, previous, kept, gone, shape)
    if gone:  # what is no longer there is no one's: others' fields in a removed item go too
        owned = [fields if i == mine else {p for p in fields if not _within(p, gone)}
                 for i, fields in enumerate(owned)]  # fmt: skip
    if mine is None:
        entries.append(new_entry(kind, manager, "Apply", store.now(), subresource, applied))
        owned.append(applied)
    else:
        owned[mine] = applied
        if previous != applied or changing:
            entries[mine]["time"] = store.now()
    new_entries = rebuilt(kind, entries, owned, sets)
    updated = _converted(
        kind, config, merged,
        lambda: writes.update(store, kind, stored, new=merged, subresource=subresource,
                              owners=new_entries, applied=True),
    )  # fmt: skip
    _keep_nulls(store, ref, merged)
    return 200, updated


def _keep_nulls(store: Store, ref: Ref, obj: Mapping[str, Any]) -> None:
    """A custom resource whose applied metadata ``ObjectMeta`` reads otherwise: kube-apiserver
    stores the apply's result as it is, and reads metadata through ``ObjectMeta`` (the CRD
    codec's coercion), so its next update is written whatever it changes, as the fake marks
    it."""
    if ref.kind.custom and read_otherwise(obj.get("metadata") or {}):
        key = (ref.kind.group, ref.kind.plural, ref.namespace or "", ref.name)
        store.unsettled.add(key)


def read_otherwise(metadata: Mapping[str, Any]) -> bool:
    """Whether ``ObjectMeta`` reads these metadata otherwise than they are: a field null,
    empty or ``""`` (every field of it is ``omitempty``), or a null label or annotation (read
    as ``""``)."""
    for key, value in metadata.items():
        if value is None or value == "" or value == {} or value == []:
            return True
        if key in ("labels", "annotations") and is_map(value) and None in value.values():
            return True
    return False
