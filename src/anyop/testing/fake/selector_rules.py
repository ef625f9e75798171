"""``ValidateLabelSelector``: the checks kube-apiserver makes of a label selector that an
object holds (a workload's, a budget's, a network policy's peers').

Pure: the errors come as ``(field, cause)`` pairs, in apimachinery's order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.object_meta import label_key_errors, label_value_errors

__all__ = ["label_selector_causes"]

Cause = dict[str, str]


def _invalid(field: str, value: str, detail: str) -> tuple[str, Cause]:
    message = f"Invalid value: {go_quoted(value)}: {detail}"
    return field, {"reason": "FieldValueInvalid", "message": message}


def label_selector_causes(selector: Any, path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateLabelSelector``: the labels to match (sorted, where Go walks a map), then each
    requirement's operator, values and key."""
    if not is_map(selector):
        return
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        for problem in label_key_errors(str(key)):
            yield _invalid(f"{path}.matchLabels", str(key), problem)
        for problem in label_value_errors(str(value)):
            yield _invalid(f"{path}.matchLabels", str(value), problem)
    for index, requirement in enumerate(selector.get("matchExpressions") or ()):
        if isinstance(requirement, Mapping):
            yield from _requirement(requirement, f"{path}.matchExpressions[{index}]")


def _requirement(requirement: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    operator = str(requirement.get("operator") or "")
    values = [str(value) for value in requirement.get("values") or ()]
    if operator in ("In", "NotIn"):
        if not values:
            detail = "must be specified when `operator` is 'In' or 'NotIn'"
            yield required_because(f"{where}.values", detail)
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            yield forbidden(f"{where}.values", detail)
    else:
        yield _invalid(f"{where}.operator", operator, "not a valid selector operator")
    key = str(requirement.get("key") or "")
    for problem in label_key_errors(key):
        yield _invalid(f"{where}.key", key, problem)
    for index, value in enumerate(values):
        for problem in label_value_errors(value):
            yield _invalid(f"{where}.values[{index}]", value, problem)
