"""What kube-apiserver's Go code does to PersistentVolumeClaims beyond their schema, with its
messages.

Pure. ``ValidatePersistentVolumeClaimSpec`` as operators meet it: access modes, the storage
request, the class name, the volume mode; and ``ValidatePersistentVolumeClaimUpdate``: the
spec of a claim that is not bound may not change at all (refused with the diff of the internal
``PersistentVolumeClaimSpec``), nor may its volume mode. A new claim is ``Pending``, with the
``kubernetes.io/pvc-protection`` finalizer of the StorageObjectInUseProtection admission plugin.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.pod_rules import dns_subdomain_causes, invalid, required, unsupported
from anyop.testing.fake.pod_spec_diff import claim_spec_diff, with_sent_empties
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = ["PROTECTION", "claim_causes", "claim_update_causes"]

Cause = dict[str, str]

PROTECTION = "kubernetes.io/pvc-protection"
"""The finalizer that keeps a claim while a pod uses it (added to every new claim)."""

_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES = ("Block", "Filesystem")


def _spec(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    modes = list(spec.get("accessModes") or ())
    if not modes:
        message = "Required value: at least 1 access mode is required"
        yield "spec.accessModes", {"reason": "FieldValueRequired", "message": message}
    for mode in modes:
        if mode not in _MODES:
            yield unsupported("spec.accessModes", str(mode), _MODES)
    if "ReadWriteOncePod" in modes and any(m in _MODES and m != "ReadWriteOncePod" for m in modes):
        message = "Forbidden: may not use ReadWriteOncePod with other access modes"
        yield "spec.accessModes", {"reason": "FieldValueForbidden", "message": message}
    requests = (spec.get("resources") or {}).get("requests") or {}
    where = "spec.resources[storage]"
    if "storage" not in requests:
        yield required(where)
    else:
        try:
            positive = quantity_value(requests["storage"]) > 0
        except QuantityError:
            positive = True  # refused when decoded
        if not positive:
            yield invalid(where, go_quoted(str(requests["storage"])), "must be greater than zero")
    name = spec.get("storageClassName")
    if name:
        yield from dns_subdomain_causes(name, "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        yield unsupported("spec.volumeMode", str(mode), _VOLUME_MODES)


def claim_causes(claim: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a claim's spec (beyond its metadata's)."""
    return list(_spec(claim.get("spec") or {}))


def claim_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """What an update of a claim may not do (its spec is checked as a new one's besides;
    ``raw``: the update as sent, where what was sent empty shows as ``[]`` or ``{}``)."""
    before = dict(old.get("spec") or {})
    sent = raw.get("spec") if isinstance(raw, Mapping) else None
    after = dict(new.get("spec") or {})
    bound = (new.get("status") or {}).get("phase") == "Bound"
    if not before.get("volumeName"):
        before.pop("volumeName", None)
        if "volumeName" in after:
            before["volumeName"] = after["volumeName"]
    if before.get("storageClassName") is None and "storageClassName" in after:
        after.pop("storageClassName")  # a class given to a claim without: the default's
    if bound:
        for key in ("volumeAttributesClassName",):
            after.pop(key, None)
            if key in before:
                after[key] = before[key]
        requests = dict((after.get("resources") or {}).get("requests") or {})
        if "storage" in requests:
            requests["storage"] = ((before.get("resources") or {}).get("requests") or {}).get(
                "storage"
            )
            after["resources"] = {**(after.get("resources") or {}), "requests": requests}
    causes: list[tuple[str, Cause]] = []
    if after != before:
        detail = ("spec is immutable after creation except resources.requests and "
                  "volumeAttributesClassName for bound claims")  # fmt: skip
        shown = with_sent_empties(after, sent)  # Go's object holds them empty, not nil
        message = f"Forbidden: {detail}\n{claim_spec_diff(before, shown)}"
        causes.append(("spec", {"reason": "FieldValueForbidden", "message": message}))
    old_size, new_size = _storage(old), _storage(new)
    capacity = ((old.get("status") or {}).get("capacity") or {}).get("storage")
    shrunk = new_size < old_size  # a quantity left out is Go's zero: 0
    if shrunk and new_size <= (_value(capacity) or 0):
        message = "Forbidden: field can not be less than status.capacity"
        causes.append(("spec.resources.requests.storage",
                       {"reason": "FieldValueForbidden", "message": message}))  # fmt: skip
    old_mode = (old.get("spec") or {}).get("volumeMode")
    new_mode = (new.get("spec") or {}).get("volumeMode")
    if old_mode != new_mode:
        shown = go_quoted(str(new_mode)) if new_mode is not None else "null"
        causes.append(invalid("volumeMode", shown, "field is immutable"))
    return causes


def _value(quantity: Any) -> Any:
    if quantity is None:
        return None
    try:
        return quantity_value(quantity)
    except QuantityError:
        return None


def _storage(claim: Mapping[str, Any]) -> Any:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    return _value(requests.get("storage")) or 0
