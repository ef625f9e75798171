"""YAML bodies as kube-apiserver reads them: Go's ``sigs.k8s.io/yaml`` (YAML 1.1 by go-yaml),
then converted to JSON.

Pure. PyYAML reads YAML 1.1 too, but not as go-yaml does in these ways, each of which
:func:`load` follows go-yaml in:

- ``y`` and ``n`` are booleans; a timestamp is a string (go-yaml makes a ``time.Time`` only for
  a field of that type); ``!!binary`` is its bytes as a string.
- A number is what Go's ``strconv`` parses: ``0o17``, ``1e3`` and ``.5e1`` are numbers, and
  ``1:20`` (a base-60 number to PyYAML) is a string.
- What JSON cannot hold is refused as the conversion refuses it: ``.inf`` and ``.nan``
  (``json: unsupported value: +Inf``), a null key, a list or map as a key.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from anyop.testing.fake.go_json import go_float, go_printed, go_syntax

__all__ = ["GoYAMLError", "load", "load_all"]

_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_GO_INT = re.compile(
    r"""^[-+]?(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+
    |0(?:_?[0-7])*|[1-9](?:_?[0-9])*)$""",
    re.VERBOSE,
)
"""An integer as ``strconv.ParseInt(text, 0, 64)`` reads it (with a base prefix, underscores)."""
_GO_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
"""go-yaml's ``yamlStyleFloat``: what it hands to ``strconv.ParseFloat``."""
_SPECIAL_FLOAT = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class GoYAMLError(ValueError):
    """A YAML body kube-apiserver refuses; the message is its own (``yaml: ...``, ``json: ...``)."""


class _GoLoader(yaml.SafeLoader):
    """PyYAML's safe loader, resolving and constructing scalars as go-yaml does."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping, its keys as go-yaml takes them: a list or map refused."""
        if isinstance(node, MappingNode):
            self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict, set)):
                raise GoYAMLError(f"yaml: invalid map key: {_go_syntax(key)}")
            value = self.construct_object(value_node, deep=True)
            mapping[_key(key, value)] = value  # as text at once: 1 and true are two keys
        return mapping


_GoLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_GoLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN")
)
_GoLoader.add_implicit_resolver(_INT_TAG, _GO_INT, list("-+0123456789"))
_GoLoader.add_implicit_resolver(_FLOAT_TAG, _GO_FLOAT, list("-+.0123456789"))
_GoLoader.add_implicit_resolver(_FLOAT_TAG, _SPECIAL_FLOAT, list("-+."))
_GoLoader.yaml_constructors = dict(yaml.SafeLoader.yaml_constructors)


def _scalar(loader: yaml.SafeLoader, node: Node) -> str:
    assert isinstance(node, ScalarNode)
    return str(loader.construct_scalar(node))


def _bool(loader: yaml.SafeLoader, node: Node) -> bool:
    return _scalar(loader, node).lower() in ("y", "yes", "true", "on")


def _int(loader: yaml.SafeLoader, node: Node) -> int | float:
    text = _scalar(loader, node).replace("_", "")
    sign, digits = (text[0], text[1:]) if text[:1] in "+-" else ("", text)
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "01234567":
        value = int(digits, 8)  # a leading 0: octal, as in C
    else:
        value = int(digits, 0)
    value = -value if sign == "-" else value
    return value if -(2**63) <= value < 2**64 else float(value)  # beyond uint64: a float64


def _float(loader: yaml.SafeLoader, node: Node) -> float:
    text = _scalar(loader, node)
    if _SPECIAL_FLOAT.match(text):
        return float(text.lower().replace(".", ""))
    return float(text)


def _binary(loader: yaml.SafeLoader, node: Node) -> str:
    text = "".join(_scalar(loader, node).split())
    try:
        return base64.b64decode(text, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        raise GoYAMLError(f"yaml: !!binary value contains invalid base64 data: {text}") from None


_GoLoader.add_constructor("tag:yaml.org,2002:bool", _bool)
_GoLoader.add_constructor(_INT_TAG, _int)
_GoLoader.add_constructor(_FLOAT_TAG, _float)
_GoLoader.add_constructor("tag:yaml.org,2002:timestamp", _scalar)
_GoLoader.add_constructor("tag:yaml.org,2002:binary", _binary)


def load(body: bytes | str) -> Any:
    """A YAML document as kube-apiserver reads it into JSON.

    Raises:
        GoYAMLError: It is not YAML, or not one JSON can hold; the message is kube-apiserver's
            where known (else PyYAML's problem, after ``yaml: line N:``).
    """
    return _jsonable(_read(lambda: yaml.load(body, Loader=_GoLoader)))


def load_all(text: bytes | str) -> list[Any]:
    """The documents of a YAML stream (``---`` between them) as kubectl reads them.

    Raises:
        GoYAMLError: As :func:`load`.
    """
    documents = _read(lambda: list(yaml.load_all(text, Loader=_GoLoader)))
    return [_jsonable(document) for document in documents]


def _read(reading: Callable[[], Any]) -> Any:
    try:
        return reading()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = str(getattr(exc, "problem", None) or exc)
        if alias := re.fullmatch(r"found undefined alias '?([^']*)'?", problem):
            raise GoYAMLError(f"yaml: unknown anchor '{alias[1]}' referenced") from None
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise GoYAMLError(f"yaml: {where}{problem}") from None


def _jsonable(value: Any) -> Any:
    """The document itself, refused where JSON cannot hold it (its keys are text already)."""
    if isinstance(value, float) and not math.isfinite(value):
        shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        raise GoYAMLError(f"json: unsupported value: {shown}")
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        _jsonable(item)
    return value


def _key(key: Any, value: Any) -> str:
    """A map's key as the conversion to JSON writes it (``1: a`` is ``"1": "a"``)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_float(key)
    kind = "%!s(<nil>)" if key is None else type(key).__name__
    shown = "<nil>" if key is None else go_printed(key)
    message = f"unsupported map key of type: {kind}, key: {shown}, value: {_go_syntax(value)}"
    raise GoYAMLError(message)


def _go_syntax(value: Any) -> str:
    return go_syntax(value, map_type="map[interface {}]interface {}")
