"""Label and field selectors: parsed from query parameters, matched against objects.

Pure. A malformed selector raises a 400 :class:`~anyop.testing.fake.statuses.StatusError`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.statuses import bad_request

__all__ = ["Selector", "parse_field_selector", "parse_label_selector"]

Predicate = Callable[[Mapping[str, Any]], bool]

_FIELDS = ("metadata.name", "metadata.namespace")
_SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


@dataclasses.dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements on an object; empty matches everything."""

    requirements: tuple[Predicate, ...] = ()

    def __call__(self, body: Mapping[str, Any]) -> bool:
        return all(requirement(body) for requirement in self.requirements)

    def __and__(self, other: Selector) -> Selector:
        return Selector(self.requirements + other.requirements)


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _labels(body: Mapping[str, Any]) -> Mapping[str, str]:
    return (body.get("metadata") or {}).get("labels") or {}


def _label_requirement(term: str) -> Predicate:
    if match := _SET.match(term):
        key, operator, values = match.group(1), match.group(2), match.group(3)
        choices = frozenset(value.strip() for value in values.split(",") if value.strip())
        if operator == "in":
            return lambda body: _labels(body).get(key) in choices
        return lambda body: _labels(body).get(key) not in choices
    if match := _EQUALITY.match(term):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda body: _labels(body).get(key) != value
        return lambda body: _labels(body).get(key) == value
    if match := _EXISTS.match(term):
        negated, key = match.group(1) == "!", match.group(2)
        return lambda body: (key in _labels(body)) != negated
    raise bad_request(f"unable to parse requirement: found '{term.strip()}'")


def parse_label_selector(text: str | None) -> Selector:
    """Parse a ``labelSelector``: ``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``.

    Raises:
        StatusError: 400, the selector cannot be parsed.
    """
    if not text:
        return Selector()
    if text.count("(") != text.count(")"):
        raise bad_request("unable to parse requirement: found '', expected: ',' or ')'")
    return Selector(tuple(_label_requirement(term) for term in _split(text)))


def _field(body: Mapping[str, Any], path: str) -> str:
    value: Any = body
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def _field_requirement(term: str, fields: tuple[str, ...]) -> Predicate:
    match = _EQUALITY.match(term)
    if match is None:
        raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")
    path, operator, value = match.groups()
    if path not in fields:
        known = ", ".join(f'"{field}"' for field in fields)
        raise bad_request(f'"{path}" is not a known field selector: only {known}')
    if operator == "!=":
        return lambda body: _field(body, path) != value
    return lambda body: _field(body, path) == value


def parse_field_selector(text: str | None, *, fields: tuple[str, ...] = ()) -> Selector:
    """Parse a ``fieldSelector`` on ``metadata.name``, ``metadata.namespace`` and the kind's own
    selectable ``fields`` (e.g. an Event's ``involvedObject.name``).

    Raises:
        StatusError: 400, the selector cannot be parsed or names another field.
    """
    if not text:
        return Selector()
    known = (*_FIELDS, *fields)
    return Selector(tuple(_field_requirement(term, known) for term in text.split(",") if term))
