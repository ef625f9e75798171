"""``x-kubernetes-validations``: CRD validation rules in CEL, evaluated with cel-python.

Pure. :func:`rule_causes` evaluates the rules of one schema node against a value (``self``) and,
on updates, the old value (``oldSelf``: rules that use it are transition rules, skipped when
there is no old value); a rule that does not hold gives kube-apiserver's cause:
``Invalid value: failed rule: <rule>`` (or what the rule's ``messageExpression`` gives, else its
``message``; a scalar's value is shown too: ``Invalid value: "b": ...``), on the node's path
plus the rule's ``fieldPath``, with the rule's ``reason``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_float, go_quoted
from anyop.testing.fake.statuses import Cause

__all__ = ["RULES", "CelUnavailable", "rule_causes"]

RULES = "x-kubernetes-validations"
_UNSET = object()
_MAX_MESSAGE = 5 * 1024  # bytes: celconfig.MaxEvaluatedMessageExpressionSizeBytes
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B))
)
"""What Go's ``strings.TrimSpace`` trims (Unicode's white space)."""
_REASON_TEXT = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


class CelUnavailable(RuntimeError):
    """A CRD has ``x-kubernetes-validations`` but cel-python is not installed."""


@functools.cache
def _program(rule: str) -> Any:
    try:
        import celpy
    except ImportError:  # pragma: no cover - cel-python is a test dependency
        raise CelUnavailable(
            "FakeCluster evaluates x-kubernetes-validations with cel-python: "
            "install it (pip install 'anyop[test]' or pip install cel-python)"
        ) from None
    from anyop.testing.fake.cel_comprehensions import Runner
    from anyop.testing.fake.cel_library import FUNCTIONS, rewritten
    from anyop.testing.fake.cel_optional import desugared

    environment = celpy.Environment(runner_class=Runner)
    text = desugared(rule)  # (``.?``: as calls)
    return environment.program(rewritten(environment.compile(text)), functions=FUNCTIONS)


_OPERATORS = ("lt", "le", "gt", "ge", "eq", "ne", "neg", "add", "radd", "sub", "rsub", "mul",
              "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod")  # fmt: skip


@functools.cache
def _float_for_int() -> type:
    """The CEL value of a float64 where the schema says integer: ``has()`` finds it, and a rule
    that uses it fails with kube-apiserver's error (an ``int`` subclass: Python asks it first
    when an ``int`` is on the left of an operator)."""
    from celpy import celtypes
    from celpy.evaluation import CELEvalError

    def refuse(*_: Any) -> Any:
        raise CELEvalError("invalid data, expected int, got float64")

    methods: dict[str, Any] = {f"__{name}__": refuse for name in _OPERATORS}
    methods["__hash__"] = celtypes.IntType.__hash__
    return type("FloatForInt", (celtypes.IntType,), methods)


def _cel(value: Any, schema: Mapping[str, Any]) -> Any:
    """A value as kube-apiserver gives it to CEL, by its schema: a float64 where the schema
    says integer (``2.0`` in a request's body) is an error, met when a rule reads it."""
    from celpy import celtypes
    from celpy.adapter import json_to_cel

    if type(value) is float and schema.get("type") == "integer":
        return _float_for_int()(int(value))  # integral: a fraction fails the schema's type first
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        extra = extra if isinstance(extra, Mapping) else {}
        return celtypes.MapType(
            {celtypes.StringType(k): _cel(v, properties.get(k, extra)) for k, v in value.items()}
        )
    if isinstance(value, list):
        items = schema.get("items")
        items = items if isinstance(items, Mapping) else {}
        return celtypes.ListType([_cel(item, items) for item in value])
    return json_to_cel(value)


def _activation(value: Any, old: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    from anyop.testing.fake.cel_library import NAMESPACES

    activation: dict[str, Any] = {**NAMESPACES, "self": _cel(value, schema)}
    if old is not _UNSET:
        activation["oldSelf"] = _cel(old, schema)
    return activation


def _holds(rule: str, activation: Mapping[str, Any]) -> tuple[bool, str]:
    from celpy.evaluation import CELEvalError

    try:
        result = _program(rule).evaluate(activation)
    except CELEvalError as exc:
        return False, str(exc.args[0] if exc.args else exc)
    if isinstance(result, CELEvalError):
        return False, str(result.args[0] if result.args else result)
    return bool(result), ""


def _message(expression: str, activation: Mapping[str, Any]) -> str | None:
    """What a broken rule's ``messageExpression`` says: its string, trimmed; ``None`` where
    kube-apiserver falls back to the rule's ``message`` (the expression fails, or gives no
    string, an empty one, one with a line break or one longer than 5 KiB)."""
    from celpy.evaluation import CELEvalError

    try:
        result = _program(expression).evaluate(activation)
    except CELEvalError:
        return None
    if not isinstance(result, str):  # a CELEvalError, or a value of another type
        return None
    text = result.strip(_GO_SPACE)
    if not text or "\n" in text or len(text.encode()) > _MAX_MESSAGE:
        return None
    return text


def rule_causes(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    *,
    old: Any = _UNSET,
    ratchet: bool = False,
    warned: list[str] | None = None,
) -> Iterator[tuple[str, Cause]]:
    """The causes of the rules of ``schema`` that ``value`` breaks. ``ratchet``: the value is
    as it was (see :mod:`~anyop.testing.fake.ratcheting`): a broken rule that does not use
    ``oldSelf`` is a warning (``<path>: <message>``, added to ``warned``), not a cause."""
    for rule in schema.get(RULES) or ():
        text = str(rule.get("rule", ""))
        if "oldSelf" in text and old is _UNSET and not rule.get("optionalOldSelf"):
            continue
        activation = _activation(value, old, schema)
        holds, error = _holds(text, activation)
        if holds:
            continue
        if error:  # the rule could not be evaluated: the node's type is shown, not its value
            kind = json.dumps(str(schema.get("type") or ""))
            detail = f"{error} evaluating rule: {rule.get('message') or text.strip()}"
            yield (path or "<nil>"), {"reason": "FieldValueInvalid",
                                      "message": f"Invalid value: {kind}: {detail}"}  # fmt: skip
            continue
        expression = rule.get("messageExpression")
        worded = _message(str(expression), activation) if expression else None
        detail = worded or str(rule.get("message") or f"failed rule: {text}")
        where = path + str(rule.get("fieldPath") or "")
        reason = str(rule.get("reason") or "FieldValueInvalid")
        label = _REASON_TEXT.get(reason, "Invalid value")
        shown = f"{label}: {detail}"
        if reason == "FieldValueInvalid" and not isinstance(value, (Mapping, list)):
            printed = go_quoted(value) if isinstance(value, str) else json.dumps(value)
            printed = go_float(value) if isinstance(value, float) else printed
            shown = f"{label}: {printed}: {detail}"
        if ratchet and "oldSelf" not in text:
            if warned is not None:
                warned.append(f"{where or '<nil>'}: {shown}")
            continue
        yield (where or "<nil>"), {"reason": reason, "message": shown}


def unset() -> Any:
    """The marker of "no old value" (a create)."""
    return _UNSET
