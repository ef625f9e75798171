"""Field selectors of handlers (``field_selector="status.phase=Running"``), as Kubernetes has them.

A selector is a comma-separated AND of terms ``path=value`` (or ``==``) and ``path!=value``. The
handler sees only the objects that match, whatever the server does: the terms are checked here
on every object. The terms that all the handlers of a resource share are also sent to the API
server with the watch (``fieldSelector``), so that other objects never reach the operator.

The server evaluates only the fields it knows: ``metadata.name`` and ``metadata.namespace``
everywhere, a built-in kind's own (``status.phase`` and ``spec.nodeName`` of Pods...), and a
custom resource's ``selectableFields``; it refuses any other field with a 400 error. Pure.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from anyop.handlers.selectors import DeclarationTypeError, DeclarationValueError

__all__ = ["FieldSelector", "parse_field_selector", "shared_field_selector"]

_TERM = re.compile(r"^\s*([A-Za-z0-9_.\-/]+?)\s*(==|!=|=)\s*(.*?)\s*$")

Term = tuple[str, str, str]
"""``(path, "=" or "!=", value)``."""


@dataclasses.dataclass(frozen=True)
class FieldSelector:
    """An AND of field terms; a field that is absent reads as an empty string, as in Kubernetes.

    Attributes:
        terms: The ``(path, operator, value)`` terms; the operator is ``=`` or ``!=``.
    """

    terms: frozenset[Term]

    def __str__(self) -> str:
        return ",".join(f"{path}{op}{value}" for path, op, value in sorted(self.terms))

    def matches(self, body: Mapping[str, Any]) -> bool:
        """Whether the object is selected."""
        return all((_text(body, path) == value) == (op == "=") for path, op, value in self.terms)


def _text(body: Mapping[str, Any], path: str) -> str:
    """The field's value as a selector compares it: a string; booleans as ``true``/``false``."""
    node: Any = body
    for key in path.split("."):
        node = node.get(key) if isinstance(node, Mapping) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(text: object, culprit: str = "field_selector") -> FieldSelector | None:
    """Read a ``field_selector=`` at declaration (``None`` for ``None``).

    Raises:
        DeclarationTypeError: It is not a string.
        DeclarationValueError: It is not ``path=value``/``path!=value`` terms.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise DeclarationTypeError(f"{culprit}: field_selector= must be a string, not {text!r}.")
    terms: set[Term] = set()
    for part in text.split(","):
        found = _TERM.match(part)
        if found is None or not found[1]:
            raise DeclarationValueError(
                f"{culprit}: field_selector= has a term that is not path=value or "
                f"path!=value: {part!r}."
            )
        path, op, value = found[1], found[2], found[3]
        terms.add((path, "!=" if op == "!=" else "=", value))
    return FieldSelector(frozenset(terms))


def shared_field_selector(selectors: Iterable[FieldSelector | None]) -> FieldSelector | None:
    """The terms that every one of these selectors has (``None``: some have none, or none)."""
    shared: frozenset[Term] | None = None
    for selector in selectors:
        if selector is None:
            return None
        shared = selector.terms if shared is None else shared & selector.terms
    return FieldSelector(shared) if shared else None
