"""Strategic merge patches' ``$patch`` directives as apimachinery's ``strategicpatch`` handles
them, and the errors it answers for those it does not take (a plain error: 500, no reason).

Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.testing.fake.go_json import go_printed
from anyop.testing.fake.statuses import StatusError, status_body

__all__ = ["check_map_directive", "special_elements"]

MARKER = "$patch"


def _failed(message: str) -> StatusError:
    return StatusError(status_body(500, "", message, details=None))


def _verb(directive: Any) -> str:
    """Go's ``%s`` of the directive's value."""
    if isinstance(directive, str):
        return directive
    if isinstance(directive, bool):
        return f"%!s(bool={'true' if directive else 'false'})"
    if isinstance(directive, (int, float)):
        return f"%!s(float64={go_printed(directive)})"
    return go_printed(directive)


def check_map_directive(patch: Mapping[str, Any]) -> None:
    """``handleDirectiveInMergeMap``: a map's ``$patch`` must be ``replace`` or ``delete``.

    Raises:
        StatusError: 500, ``unknown patch type: <it> in map: map[...]``.
    """
    directive = patch.get(MARKER)
    if directive not in ("replace", "delete"):
        raise _failed(f"unknown patch type: {_verb(directive)} in map: {go_printed(patch)}")


def special_elements(patch: Sequence[Any], key: str) -> tuple[list[Any], set[str], bool]:
    """``mergeSliceWithSpecialElements``: a merged list's patch without its directive items, the
    merge keys (as JSON) of the items it deletes, and whether it replaces the list.

    Raises:
        StatusError: 500, a deletion without the merge key, ``$patch: merge`` or another value.
    """
    rest: list[Any] = []
    gone: set[str] = set()
    replace = False
    for item in patch:
        if not isinstance(item, Mapping) or MARKER not in item:
            rest.append(item)
            continue
        directive = item[MARKER]
        if directive == "delete":
            if key not in item:
                raise _failed(f"map: {go_printed(item)} does not contain declared merge key: {key}")
            gone.add(json.dumps(item[key]))
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _failed("merging lists cannot yet be specified in the patch")
        else:
            raise _failed(f"unknown patch type: {_verb(directive)} in map: {go_printed(item)}")
    return rest, gone, replace
