"""``x-kubernetes-embedded-resource: true``: an object of a custom resource that is itself an
object of the API (a template). apiextensions-apiserver keeps its ``apiVersion``, ``kind`` and
``metadata`` through pruning, coerces them (``schemaobjectmeta.Coerce``: its metadata as an
``ObjectMeta``, what that does not know or cannot decode dropped, an apiVersion or kind that is
not a string dropped) and checks them (``schemaobjectmeta.Validate``: both required, the
metadata as ``ValidateObjectMeta`` checks it with names that are path segments).

Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.field_errors import path_segment_errors, required_because
from anyop.testing.fake.go_json import go_float, go_marshalled
from anyop.testing.fake.object_meta import (
    DNS_1035,
    DNS_1035_HINT,
    dns_label_errors,
    metadata_causes,
)
from anyop.testing.fake.statuses import Cause

__all__ = ["EMBEDDED", "META_FIELDS", "coerced", "embedded_causes", "malformed"]

EMBEDDED = "x-kubernetes-embedded-resource"
META_FIELDS = ("apiVersion", "kind", "metadata")

_STRINGS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
            "creationTimestamp", "deletionTimestamp")  # fmt: skip
_INTEGERS = ("generation", "deletionGracePeriodSeconds")
_STRING_MAPS = ("labels", "annotations")
_LISTS = ("ownerReferences", "finalizers", "managedFields")


def coerced(value: Mapping[str, Any]) -> dict[str, Any]:
    """An embedded object's meta fields as apiextensions-apiserver decodes them."""
    result = dict(value)
    for key in ("apiVersion", "kind"):
        if key in result and not isinstance(result[key], str):
            del result[key]
    if isinstance(result.get("metadata"), Mapping):
        result["metadata"] = _object_meta(result["metadata"])
    return result


def _object_meta(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata through Go's ``ObjectMeta`` and back: unknown and malformed fields dropped,
    empty ones left out (``omitempty``), a zero creation time removed."""
    kept: dict[str, Any] = {}
    for key, item in metadata.items():
        if item and _decodes(key, item):
            kept[key] = dict(item) if isinstance(item, Mapping) else item
    return kept


def _decodes(key: str, item: Any) -> bool:
    """Whether ``ObjectMeta``'s field ``key`` decodes ``item`` (roughly: by its JSON type)."""
    if key in _STRINGS:
        return isinstance(item, str)
    if key in _INTEGERS:
        return isinstance(item, int) and not isinstance(item, bool)
    if key in _STRING_MAPS:
        return isinstance(item, Mapping) and all(isinstance(t, str) for t in item.values())
    if key in _LISTS and isinstance(item, list):
        return key != "finalizers" or all(isinstance(text, str) for text in item)
    return False


def embedded_causes(value: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``validateEmbeddedResource``."""
    prefix = f"{path}." if path else ""
    for key in ("apiVersion", "kind"):
        if key not in value:
            yield required_because(f"{prefix}{key}")
    api_version = value.get("apiVersion")
    if isinstance(api_version, str):
        if not api_version:
            yield field_invalid(f"{prefix}apiVersion", api_version, "must not be empty")
        elif api_version.count("/") > 1:
            detail = f"unexpected GroupVersion string: {api_version}"
            yield field_invalid(f"{prefix}apiVersion", api_version, detail)
    kind = value.get("kind")
    if isinstance(kind, str):
        if not kind:
            yield field_invalid(f"{prefix}kind", kind, "must not be empty")
        else:
            errors = ["must be no more than 63 characters"] if len(kind) > 63 else []
            if not DNS_1035.match(kind.lower()):
                errors.append(DNS_1035_HINT)
            if errors:
                detail = "may have mixed case, but should otherwise match: " + ",".join(errors)
                yield field_invalid(f"{prefix}kind", kind, detail)
    metadata = value.get("metadata")
    if isinstance(metadata, Mapping):
        yield from _metadata(metadata, f"{prefix}metadata")


def _metadata(metadata: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateObjectMeta`` with ``IsPathSegmentName`` names (an empty name is "fakename")."""
    generate = str(metadata.get("generateName") or "")
    if generate:
        for error in path_segment_errors(generate):
            if error.startswith("may not contain"):
                yield field_invalid(f"{path}.generateName", generate, error)
    name = str(metadata.get("name") or "") or "fakename"
    for error in path_segment_errors(name):
        yield field_invalid(f"{path}.name", name, error)
    namespace = str(metadata.get("namespace") or "")
    if namespace:
        for error in dns_label_errors(namespace):
            yield field_invalid(f"{path}.namespace", namespace, error)
    for field, cause in metadata_causes(metadata, creating=True):
        yield f"{path}{field.removeprefix('metadata')}", cause


_GO_TYPES = {
    **dict.fromkeys(_STRINGS[:6], "string"),
    **dict.fromkeys(_INTEGERS, "int64"),
    **dict.fromkeys(_STRING_MAPS, "map[string]string"),
    "finalizers": "[]string",
    "ownerReferences": "[]v1.OwnerReference",
    "managedFields": "[]v1.ManagedFieldsEntry",
}
_JSON_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array",
               dict: "object"}  # fmt: skip


def malformed(value: Any, schema: Mapping[str, Any], path: str = "") -> str | None:
    """The error of the first embedded resource whose metadata does not decode as an
    ``ObjectMeta`` (``<path>.metadata: Invalid value: {...}: json: cannot unmarshal ...``):
    kube-apiserver refuses such a body (400) as it decodes it."""
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            if (found := malformed(item, schema["items"], f"{path}[{index}]")) is not None:
                return found
        return None
    if not isinstance(value, Mapping):
        return None
    meta = value.get("metadata") if schema.get(EMBEDDED) else None
    if isinstance(meta, Mapping) and (error := _unmarshal_error(meta)) is not None:
        return f"{path}.metadata: Invalid value: {go_marshalled(meta)}: {error}"
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key, additional if isinstance(additional, Mapping) else None)
        if isinstance(sub, Mapping):
            where = f"{path}.{key}" if path else key
            if (found := malformed(item, sub, where)) is not None:
                return found
    return None


def _unmarshal_error(metadata: Mapping[str, Any]) -> str | None:
    """``json.Unmarshal`` of the metadata into an ``ObjectMeta``: its first type error (its
    fields in the order Go marshals a map, by name; a wrong member of a label map or a
    finalizer list is named as a string's)."""
    for key in sorted(metadata):
        item, go_type = metadata[key], _GO_TYPES.get(key)
        if go_type is None or item is None:
            continue
        if go_type == "int64" and isinstance(item, float) and not item.is_integer():
            return f"json: cannot unmarshal number {go_float(item)} into {_field(key)} int64"
        if _decodes(key, item):
            continue
        members = item.values() if isinstance(item, dict) else item
        if go_type in ("map[string]string", "[]string") and isinstance(item, (dict, list)):
            if go_type.startswith("map") != isinstance(item, dict):
                return _type_error(item, key, go_type)
            bad = next((v for v in members if v is not None and not isinstance(v, str)), None)
            if bad is not None:
                return _type_error(bad, key, "string")
            continue
        return _type_error(item, key, go_type)
    return None


def _field(key: str) -> str:
    return f"Go struct field ObjectMeta.{key} of type"


def _type_error(value: Any, key: str, go_type: str) -> str:
    named = _JSON_TYPES.get(type(value), "object")
    return f"json: cannot unmarshal {named} into {_field(key)} {go_type}"
