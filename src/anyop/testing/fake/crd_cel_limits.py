"""What kube-apiserver refuses of a CRD's ``x-kubernetes-validations`` when the CRD is written.

Pure. :func:`crd_rule_causes` compiles each rule and ``messageExpression`` of each schema of a
CRD (apiextensions-apiserver's ``validation.go``, ``ValidateCustomResourceDefinitionOpenAPISchema``)
and lists its refusals: a syntax error, a type error (an undefined field, an undeclared name, no
overload), a rule that is not a bool or a ``messageExpression`` that is not a string, ``oldSelf``
where the schema cannot correlate it (under a list not of ``x-kubernetes-list-type: map``, or
a map of an unknown ``x-kubernetes-map-type``), ``optionalOldSelf`` without ``oldSelf``, an
estimated cost over the per-rule limit (10,000,000: the rule's cost times the times it can run
under the lists and maps above it) and rules whose costs add up to more than 100,000,000.
An update does not check the per-rule limit for a version whose schema it leaves as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.cel_ast import Expr, parsed, syntax_error
from anyop.testing.fake.cel_check import check
from anyop.testing.fake.cel_cost import MAX, estimated_cost
from anyop.testing.fake.cel_decls import Decl, decl_type, max_cardinality
from anyop.testing.fake.cel_optional import desugared, source_offset
from anyop.testing.fake.cel_signatures import UNKNOWN, decl_to_type, optional_of
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.statuses import Cause

__all__ = ["cel_issues", "compiled_cel", "crd_rule_causes"]

RULES = "x-kubernetes-validations"
RULE_LIMIT = 10_000_000  # StaticEstimatedCostLimit
CRD_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit
Causes = list[tuple[str, Cause]]
_HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
         "arrays, maps, and strings are declared)")  # fmt: skip


def _cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return f"{name} exceeds budget by factor of {shown} {_HINT}"


def _forbidden(path: str, message: str) -> tuple[str, Cause]:
    return path, {"reason": "FieldValueForbidden", "message": f"Forbidden: {message}"}


def _invalid(path: str, shown: str, detail: str) -> tuple[str, Cause]:
    return path, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def _go_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, escape)
    return text


def _rule_shown(rule: Mapping[str, Any]) -> str:
    """An internal ``ValidationRule`` as a field error shows it (as JSON)."""
    return _go_json({"Rule": str(rule.get("rule") or ""), "Message": str(rule.get("message") or ""),
                     "MessageExpression": str(rule.get("messageExpression") or ""),
                     "Reason": rule.get("reason"), "FieldPath": str(rule.get("fieldPath") or ""),
                     "OptionalOldSelf": rule.get("optionalOldSelf")})  # fmt: skip


def cel_issues(text: str, errors: list[tuple[int, str]]) -> str:
    """cel-go's ``Issues.String()``: each error with its line and a caret under its column
    (an empty text has no line: its column shows as 0, without them). ``text`` is the rule's
    own, the offsets of its :func:`~anyop.testing.fake.cel_optional.desugared` text."""
    if not text:
        return "\n".join(f"ERROR: <input>:1:0: {message}" for _, message in errors)
    shown = []
    for at, message in errors:
        offset = source_offset(text, at)
        line_no = text.count("\n", 0, offset) + 1
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        line = text[start : end if end >= 0 else len(text)]
        column = offset - start
        shown.append(f"ERROR: <input>:{line_no}:{column + 1}: {message}\n | {line}\n | "
                     f"{'.' * column}^")  # fmt: skip
    return "\n".join(shown)


def compiled_cel(text: str) -> tuple[Expr | None, str | None]:
    """A rule's expression, or cel-go's words for why it does not parse (``None``, ``None``:
    a form cel-python's grammar lacks, left to the server)."""
    try:
        from celpy.celparser import CELParseError, CELParser
    except ImportError:  # pragma: no cover - cel-python is a test dependency
        return None, None
    source, text = text, desugared(text)  # optional syntax as calls, which cel-python parses
    try:
        tree = CELParser().parse(text)
    except CELParseError:
        if any(form in text for form in ("?.", "[?", "{?", "?:", ".?")):
            return None, None  # optional syntax: cel-python has no grammar of it
        errors = syntax_error(text)
        if errors is None:  # worded otherwise than cel-go's ANTLR parser words it
            offset = _error_offset(text)
            errors = [(offset, "Syntax error: mismatched input")]
        return None, cel_issues(source, errors)
    try:
        return parsed(text, tree), None
    except (ValueError, AttributeError):  # pragma: no cover - a tree this module cannot read
        return None, None


def _error_offset(text: str) -> int:
    from celpy.celparser import CELParseError, CELParser

    try:
        CELParser().parse(text)
    except CELParseError as exc:
        line, column = (exc.line or 1), (exc.column or 1)
        starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
        return min(starts[min(line, len(starts)) - 1] + column - 1, len(text))
    return 0  # pragma: no cover - it did not parse


def _uses(expr: Expr, name: str) -> bool:
    stack = [expr]
    while stack:
        e = stack.pop()
        if e.kind == "ident" and e.name == name:
            return True
        stack.extend(x for x in (e.target, e.iter_range, e.accu_init, e.loop_cond, e.loop_step,
                                 e.result) if x is not None)  # fmt: skip
        stack.extend(e.args)
        stack.extend(part for entry in e.entries for part in entry)
    return False


class _Walk:
    def __init__(self, suppress: bool) -> None:
        self.suppress = suppress
        self.causes: Causes = []
        self.total = 0
        self.expensive: list[tuple[str, int]] = []

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, MAX)
        if cost < CRD_LIMIT // 100:
            return
        self.expensive.append((path, cost))
        self.expensive.sort(key=lambda item: -item[1])
        del self.expensive[4:]

    def node(self, schema: Any, path: str, count: int | None, root: bool,
             forbid: str | None) -> None:  # fmt: skip
        if not isinstance(schema, Mapping):
            return
        extra = schema.get("additionalProperties")
        inner = _inner(schema, count)
        if isinstance(extra, Mapping):
            self.node(extra, f"{path}.additionalProperties", inner, False, forbid)
        map_type = schema.get("x-kubernetes-map-type")
        for name, sub in (schema.get("properties") or {}).items():
            sub_forbid = forbid
            if sub_forbid is None and map_type not in (None, "granular", "atomic"):
                sub_forbid = path
            self.node(sub, f"{path}.properties[{name}]", inner, False, sub_forbid)
        items = schema.get("items")
        if isinstance(items, Mapping):
            sub_forbid = forbid
            if sub_forbid is None and schema.get("x-kubernetes-list-type") != "map":
                sub_forbid = path
            self.node(items, f"{path}.items", inner, False, sub_forbid)
        rules = schema.get(RULES)
        if rules:
            self.rules(schema, rules, path, count, root, forbid)

    def rules(self, schema: Mapping[str, Any], rules: list[Any], path: str, count: int | None,
              root: bool, forbid: str | None) -> None:  # fmt: skip
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        decl = decl_type(schema, root or embedded)
        if decl is None:
            return
        for index, rule in enumerate(rules):
            if isinstance(rule, Mapping):
                self.rule(rule, f"{path}.{RULES}[{index}]", decl, count, forbid)

    def rule(self, rule: Mapping[str, Any], where: str, decl: Decl, count: int | None,
             forbid: str | None) -> None:  # fmt: skip
        text = str(rule.get("rule") or "")
        if not text.strip():
            return
        self_type = decl_to_type(decl)
        old_type = optional_of(self_type) if rule.get("optionalOldSelf") else self_type
        expr, failure = compiled_cel(text)
        error: str | None = None
        cost = 0
        uses_old = False
        checked_ok = False
        if failure is not None:
            error = f"compilation failed: {failure}"
        elif expr is not None:
            checked = check(expr, self_type, old_type)
            output = checked.types.get(expr.id, UNKNOWN)
            if checked.errors:
                error = f"compilation failed: {cel_issues(text, checked.errors)}"
            elif output.kind not in ("bool", "unknown"):
                error = "cel expression must evaluate to a bool"
            else:
                uses_old = _uses(expr, "oldSelf")
                cost = estimated_cost(expr, decl, checked)
                checked_ok = True
        times = count if count is not None else max_cardinality(decl.min_size)
        total = min(cost * times, MAX) if cost else 0
        if not self.suppress and total > RULE_LIMIT:
            self.causes.append(
                _forbidden(f"{where}.rule", _cost_message("estimated rule cost", total, RULE_LIMIT))
            )
        self.observe(f"{where}.rule", total)
        if error is not None:
            self.causes.append(_invalid(f"{where}.rule", _rule_shown(rule), error))
        expression = str(rule.get("messageExpression") or "")
        if checked_ok and expression:
            self.message(rule, expression, where, decl, self_type, old_type)
        if uses_old:
            if forbid is not None:
                detail = f"oldSelf cannot be used on the uncorrelatable portion of the schema " \
                         f"within {forbid}"  # fmt: skip
                self.causes.append(_invalid(f"{where}.rule", go_quoted(text), detail))
        elif rule.get("optionalOldSelf") is not None:
            shown = json.dumps(rule.get("optionalOldSelf"))
            self.causes.append(
                _invalid(
                    f"{where}.optionalOldSelf",
                    shown,
                    "may not be set if oldSelf is not used in rule",
                )
            )

    def message(self, rule: Mapping[str, Any], text: str, where: str, decl: Decl,
                self_type: Any, old_type: Any) -> None:  # fmt: skip
        expr, failure = compiled_cel(text)
        error: str | None = None
        if failure is not None:
            error = f"messageExpression compilation failed: {failure}"
        elif expr is None:
            return
        else:
            checked = check(expr, self_type, old_type)
            output = checked.types.get(expr.id, UNKNOWN)
            if checked.errors:
                error = f"messageExpression compilation failed: {cel_issues(text, checked.errors)}"
            elif output.kind not in ("string", "unknown"):
                error = "messageExpression must evaluate to a string"
        if error is not None:
            self.causes.append(_invalid(f"{where}.messageExpression", _rule_shown(rule), error))
            return
        assert expr is not None
        cost = estimated_cost(expr, decl, checked)
        if not self.suppress and cost > RULE_LIMIT:
            message = _cost_message("estimated messageExpression cost", cost, RULE_LIMIT)
            self.causes.append(_forbidden(f"{where}.messageExpression", message))
        self.observe(f"{where}.messageExpression", cost)


def _inner(schema: Mapping[str, Any], count: int | None) -> int | None:
    """``childContext``'s cardinality: times the most elements of a list or map."""
    if count is None:
        return None
    kind = schema.get("type")
    most: Any = 1
    if kind == "object" and "additionalProperties" in schema:
        most = schema.get("maxProperties")
    elif kind == "array":
        most = schema.get("maxItems")
    if not isinstance(most, int):
        return None
    return min(count * max(most, 0), MAX) if count else 0


def _schemas(spec: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(version, path, schema) of each schema, as the internal version holds them: one at
    ``spec.validation`` when every version has the same."""
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
    if versions and all(s == schemas[0] for s in schemas):
        return [(str(versions[0].get("name")), "spec.validation.openAPIV3Schema", schemas[0])]
    return [(str(v.get("name")), f"spec.versions[{i}].schema.openAPIV3Schema", s)
            for i, (v, s) in enumerate(zip(versions, schemas, strict=True))]  # fmt: skip


def _has_rules(schema: Any) -> bool:
    return RULES in json.dumps(schema) if schema else False


def crd_rule_causes(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> Causes:
    """The refusals of a CRD's rules (``old``: the stored CRD of an update)."""
    spec = crd.get("spec") or {}
    unchanged: dict[str, Any] = {}
    if old is not None:
        unchanged = {name: schema for name, _, schema in _schemas(old.get("spec") or {})}
        versions = [str(v.get("name")) for v in (old.get("spec") or {}).get("versions") or ()]
        for version in versions:  # a schema at spec.validation is every version's
            if version not in unchanged and len(unchanged) == 1:
                unchanged[version] = next(iter(unchanged.values()))
    causes: Causes = []
    for version, path, schema in _schemas(spec):
        if not _has_rules(schema):
            continue
        walk = _Walk(suppress=version in unchanged and unchanged[version] == schema)
        walk.node(schema, path, 1, True, None)
        causes += walk.causes
        if walk.total > CRD_LIMIT:
            causes += [_forbidden(where, "contributed to estimated rule cost total exceeding "
                                  "cost limit for entire OpenAPIv3 schema")
                       for where, _ in walk.expensive]  # fmt: skip
            causes.append(_forbidden(path, _cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                walk.total, CRD_LIMIT)))  # fmt: skip
    return causes
