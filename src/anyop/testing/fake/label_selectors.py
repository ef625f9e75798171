"""Label and field selectors: parsed from query parameters, matched against objects.

Pure. A malformed selector raises a 400 :class:`~anyop.testing.fake.statuses.StatusError`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.field_labels import FieldLabels
from anyop.testing.fake.label_grammar import Requirement, SelectorSyntaxError, parse_requirements
from anyop.testing.fake.statuses import bad_request

__all__ = [
    "Selector",
    "parse_field_selector",
    "parse_label_selector",
    "selects",
]

Predicate = Callable[[Mapping[str, Any]], bool]

_EQUALITY = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")


@dataclasses.dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements on an object; empty matches everything."""

    requirements: tuple[Predicate, ...] = ()
    exact: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The fields a field selector requires exactly (its first ``=`` or ``==`` term on each,
    as ``RequiresExactMatch`` finds them), by the field they are converted to."""

    def __call__(self, body: Mapping[str, Any]) -> bool:
        return all(requirement(body) for requirement in self.requirements)

    def __and__(self, other: Selector) -> Selector:
        return Selector(self.requirements + other.requirements, {**other.exact, **self.exact})


def _labels(body: Mapping[str, Any]) -> Mapping[str, str]:
    return (body.get("metadata") or {}).get("labels") or {}


def _matcher(requirement: Requirement) -> Predicate:
    """A requirement as ``labels.Requirement.Matches`` decides it."""
    key, operator, values = requirement.key, requirement.operator, set(requirement.values)

    def matches(body: Mapping[str, Any]) -> bool:
        labels = _labels(body)
        match operator:
            case "exists":
                return key in labels
            case "!":
                return key not in labels
            case "in" | "=" | "==":
                return key in labels and labels[key] in values
            case "notin" | "!=":
                return key not in labels or labels[key] not in values
        return key in labels and _compares(labels[key], operator, requirement.values)

    return matches


def _compares(label: str, operator: str, values: tuple[str, ...]) -> bool:
    if re.fullmatch(r"[+-]?[0-9]+", label) is None:  # Go's ParseInt: no spaces, no "_"
        return False
    have, bound = int(label), int(values[0])
    return have > bound if operator == "gt" else have < bound


def parse_label_selector(text: str | None) -> Selector:
    """Parse a ``labelSelector``: ``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``.

    Raises:
        StatusError: 400, the selector cannot be parsed.
    """
    if not text:
        return Selector()
    try:
        requirements = parse_requirements(text)
    except SelectorSyntaxError as error:
        raise bad_request(str(error)) from None
    return Selector(tuple(_matcher(requirement) for requirement in requirements))


def _field_requirement(term: str, labels: FieldLabels) -> tuple[Predicate, str, str | None]:
    """A term's predicate, the field it names and, for ``=`` and ``==``, the value."""
    match = _EQUALITY.match(term)
    if match is None:
        raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")
    label, operator, wanted = match.groups()
    field = labels.labels.get(label)
    if field is None:
        raise bad_request(labels.refused(label))
    get = labels.getter(field)
    if operator == "!=":
        return (lambda body: get(body) != wanted), field, None
    return (lambda body: get(body) == wanted), field, wanted


def parse_field_selector(text: str | None, labels: FieldLabels) -> Selector:
    """Parse a ``fieldSelector`` on the fields the kind's field label conversion takes.

    Raises:
        StatusError: 400, the selector cannot be parsed or names another field.
    """
    if not text:
        return Selector()
    terms = [_field_requirement(term, labels) for term in text.split(",") if term]
    exact: dict[str, str] = {}
    for _, field, wanted in terms:
        if wanted is not None:
            exact.setdefault(field, wanted)
    return Selector(tuple(predicate for predicate, _, _ in terms), exact)


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether labels match a structured label selector (``matchLabels``/``matchExpressions``)."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or ()
        present = key in labels
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and present and labels.get(key) in values:
            return False
        if (operator == "Exists") != present and operator in ("Exists", "DoesNotExist"):
            return False
    return True
