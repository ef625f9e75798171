"""The defaults of a CRD's schema, checked as apiextensions-apiserver's ``ValidateDefaults``
(``pkg/apiserver/schema/defaulting``) checks them: a default must have no field its schema
prunes, and must be valid for its schema.

Pure. Defaults inside an object's metadata, apiVersion and kind are forbidden before these
checks (:mod:`.crd_schema_checks`); a default's CEL rules are not evaluated here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.schemas import value_causes
from anyop.testing.fake.statuses import Cause

__all__ = ["default_causes"]

_META = ("metadata", "apiVersion", "kind")


def default_causes(schema: Mapping[str, Any], path: str) -> list[tuple[str, Cause]]:
    """The errors of the defaults of a structural schema (its root is a resource's)."""
    return list(_walk(schema, path, inside_meta=False, resource=True))


def _walk(
    s: Mapping[str, Any], path: str, *, inside_meta: bool, resource: bool
) -> Iterator[tuple[str, Cause]]:
    embedded = resource or bool(s.get("x-kubernetes-embedded-resource"))
    if embedded:
        inside_meta = False
    if "default" in s and not inside_meta:
        value = s["default"]
        if _has_unknown(value, s, root=embedded):
            yield field_invalid(f"{path}.default", value, "must not have unknown fields")
        yield from value_causes(value, s, f"{path}.default")
    if isinstance(s.get("items"), Mapping):
        yield from _walk(s["items"], f"{path}.items", inside_meta=inside_meta, resource=False)
    for key, sub in sorted((s.get("properties") or {}).items()):
        if isinstance(sub, Mapping):
            meta = inside_meta or (embedded and key in _META)
            yield from _walk(sub, f"{path}.properties[{key}]", inside_meta=meta, resource=False)


def _has_unknown(value: Any, s: Mapping[str, Any], *, root: bool = False) -> bool:
    """Whether pruning would drop anything of ``value``."""
    if isinstance(value, list):
        items = s.get("items")
        return isinstance(items, Mapping) and any(_has_unknown(item, items) for item in value)
    if not isinstance(value, Mapping):
        return False
    properties: Mapping[str, Any] = s.get("properties") or {}
    additional = s.get("additionalProperties")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if sub is None:
            if preserve or additional is True or (root and key in _META):
                continue
            return True
        if isinstance(sub, Mapping) and _has_unknown(
            item, sub, root=bool(sub.get("x-kubernetes-embedded-resource"))
        ):
            return True
    return False
