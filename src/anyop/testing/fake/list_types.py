"""``x-kubernetes-list-type`` ``set`` and ``map``: the duplicates apiextensions-apiserver's
``listtype.ValidateListSetsAndMaps`` refuses (422 ``FieldValueDuplicate`` at the second of
equal items, not at the ones after it).

Pure. A map list's items are compared by their keys (after defaulting), which the error shows
as Go marshals a map (``{"port":80,"protocol":"TCP"}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.crd_structural import field_invalid, shown
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.statuses import Cause

__all__ = ["list_type_causes"]

_UNSET = object()


def list_type_causes(
    value: list[Any], schema: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Cause]]:
    """The duplicates of a list whose schema makes it a set or a map."""
    match schema.get("x-kubernetes-list-type"):
        case "set":
            for index in _repeated(value):
                yield _duplicate(f"{path}[{index}]", value[index])
        case "map":
            yield from _map_causes(
                value, list(schema.get("x-kubernetes-list-map-keys") or ()), path
            )


def _map_causes(value: list[Any], keys: list[str], path: str) -> Iterator[tuple[str, Cause]]:
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, Mapping):
            yield field_invalid(f"{path}[{index}]", item,
                                "must be an object for an array of list-type map")  # fmt: skip
            return
    if len(value) <= 1:
        return
    if len(keys) == 1:
        singles = [(item or {}).get(keys[0], _UNSET) for item in value]
        for index in _repeated(singles):
            key = singles[index]
            yield _duplicate(f"{path}[{index}]", {} if key is _UNSET else {keys[0]: key})
        return
    compound = [
        {key: item[key] for key in keys if key in item} for item in (i or {} for i in value)
    ]
    for index in _repeated(compound):
        yield _duplicate(f"{path}[{index}]", compound[index])


def _repeated(values: list[Any]) -> list[int]:
    """``validateListSet``: the index of each value's second occurrence."""
    seen: dict[str, int] = {}
    found = []
    for index, item in enumerate(values):
        key = "<unset>" if item is _UNSET else json.dumps(item, sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            found.append(index)
    return found


def _duplicate(path: str, value: Any) -> tuple[str, Cause]:
    text = shown(value) if not isinstance(value, (Mapping, list)) else go_marshalled(value)
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    return path, {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {text}"}
