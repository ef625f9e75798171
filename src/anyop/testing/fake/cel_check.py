"""cel-go's type checker, for the CEL a CRD's rules use: what kube-apiserver refuses when a CRD
is written (an undeclared name, an undefined field, an operator or function given types it has
no overload for), with cel-go's messages.

Pure. :func:`check` gives each expression of a rule its type and each call the overloads it
matches (which :mod:`~anyop.testing.fake.cel_cost` prices), and lists the errors. What this
module does not know (a function of Kubernetes' libraries it has no signature of, a namespaced
call, ``oldSelf`` of an ``optionalOldSelf`` rule) has the type ``unknown``: nothing is refused
for it, and an expression of that type is taken for the type its rule needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from anyop.testing.fake.cel_ast import ACCU, Expr
from anyop.testing.fake.cel_decls import Decl
from anyop.testing.fake.cel_optional import ENTRIES, INDEX, SELECT

__all__ = ["Checked", "T", "check", "check_with", "decl_to_type", "optional_of"]


@dataclass(frozen=True, eq=False)
class T:
    """A CEL type: ``kind`` a primitive's name, ``list``, ``map``, ``optional`` (its value's
    type the parameter), ``object`` (``decl``), ``dyn``, ``type``, ``param`` (an overload's type
    parameter), ``error`` or ``unknown``."""

    kind: str
    params: tuple[T, ...] = ()
    decl: Decl | None = None

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.params[0]})"
        if self.kind == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if self.kind == "optional":
            return f"optional_type({self.params[0]})"
        if self.kind == "object" and self.decl is not None:
            return self.decl.name
        return _NAMES.get(self.kind, self.kind)


_NAMES = {"timestamp": "google.protobuf.Timestamp", "duration": "google.protobuf.Duration"}
DYN, UNKNOWN, ERROR = T("dyn"), T("unknown"), T("error")
_PRIMS = {name: T(name) for name in ("int", "uint", "double", "bool", "string", "bytes",
                                      "null_type", "timestamp", "duration", "type")}  # fmt: skip
_VAGUE = ("dyn", "unknown", "error", "param")
NAMESPACES = ("sets", "optional", "format", "strings", "lists", "ip", "math", "base64", "cel",
              "url", "quantity", "semver")  # fmt: skip


def optional_of(value: T) -> T:
    """The optional of a type (``optional_type(int)``)."""
    return T("optional", (value,))


def decl_to_type(decl: Decl) -> T:
    """A schema node's CEL type."""
    if decl.kind == "list" and decl.elem is not None:
        return T("list", (decl_to_type(decl.elem),))
    if decl.kind == "map" and decl.elem is not None:
        return T("map", (_PRIMS["string"], decl_to_type(decl.elem)))
    if decl.kind == "object":
        return T("object", decl=decl)
    if decl.kind == "dyn":
        return DYN
    return _PRIMS[decl.kind]


def _spec(text: str) -> T:
    text = text.strip()
    if text in ("A", "B"):
        return T("param", decl=Decl(text))
    if text.startswith("list("):
        return T("list", (_spec(text[5:-1]),))
    if text.startswith("optional("):
        return optional_of(_spec(text[9:-1]))
    if text.startswith("map("):
        key, _, value = text[4:-1].partition(",")
        return T("map", (_spec(key), _spec(value)))
    return DYN if text == "dyn" else _PRIMS[text]


def _overloads(*rows: str) -> list[tuple[str, list[T], T]]:
    """``id: param, param -> result`` rows."""
    table = []
    for row in rows:
        name, _, rest = row.partition(":")
        params, _, result = rest.partition("->")
        table.append((name.strip(), [_spec(p) for p in params.split(";") if p.strip()],
                      _spec(result)))  # fmt: skip
    return table


_NUMERIC = ("int", "uint", "double")
_ORDERED = (*_NUMERIC, "string", "bytes", "bool", "timestamp", "duration")
_COMPARE = [f"{a}_{b}: {a}; {b} -> bool" for a in _ORDERED for b in _ORDERED
            if a == b or (a in _NUMERIC and b in _NUMERIC)]  # fmt: skip
_STRINGS = {"matches": "matches_string", "startsWith": "starts_with_string",
            "endsWith": "ends_with_string", "contains": "contains_string"}  # fmt: skip
SIGNATURES: dict[str, list[tuple[str, list[T], T]]] = {
    "_+_": _overloads("add_int64: int; int -> int", "add_uint64: uint; uint -> uint",
                      "add_double: double; double -> double",
                      "add_string: string; string -> string", "add_bytes: bytes; bytes -> bytes",
                      "add_list: list(A); list(A) -> list(A)",
                      "add_timestamp_duration: timestamp; duration -> timestamp",
                      "add_duration_timestamp: duration; timestamp -> timestamp",
                      "add_duration_duration: duration; duration -> duration"),
    "_-_": _overloads("subtract_int64: int; int -> int", "subtract_uint64: uint; uint -> uint",
                      "subtract_double: double; double -> double",
                      "subtract_timestamp_timestamp: timestamp; timestamp -> duration",
                      "subtract_timestamp_duration: timestamp; duration -> timestamp",
                      "subtract_duration_duration: duration; duration -> duration"),
    **{op: _overloads(*(f"{name}_{t}: {t}; {t} -> {t}" for t in types)) for op, name, types in (
        ("_*_", "multiply", _NUMERIC), ("_/_", "divide", _NUMERIC),
        ("_%_", "modulo", ("int", "uint")))},
    "-_": _overloads("negate_int64: int -> int", "negate_double: double -> double"),
    "!_": _overloads("logical_not: bool -> bool"),
    "_&&_": _overloads("logical_and: bool; bool -> bool"),
    "_||_": _overloads("logical_or: bool; bool -> bool"),
    "_?_:_": _overloads("conditional: bool; A; A -> A"),
    "_==_": _overloads("equals: A; A -> bool"),
    "_!=_": _overloads("not_equals: A; A -> bool"),
    **{op: _overloads(*(f"less_{row}" if op in ("_<_", "_<=_") else f"greater_{row}"
                        for row in _COMPARE)) for op in ("_<_", "_<=_", "_>_", "_>=_")},
    "@in": _overloads("in_list: A; list(A) -> bool", "in_map: A; map(A, B) -> bool"),
    "_[_]": _overloads("index_list: list(A); int -> A", "index_map: map(A, B); A -> B"),
    "@not_strictly_false": _overloads("not_strictly_false: bool -> bool"),
    "size": _overloads("size_string: string -> int", "size_bytes: bytes -> int",
                       "size_list: list(A) -> int", "size_map: map(A, B) -> int"),
    **{name: _overloads(f"{oid}: string; string -> bool") for name, oid in _STRINGS.items()},
    "int": _overloads("int64_to_int64: int -> int", "uint64_to_int64: uint -> int",
                      "double_to_int64: double -> int", "string_to_int64: string -> int",
                      "timestamp_to_int64: timestamp -> int"),
    "uint": _overloads("uint64_to_uint64: uint -> uint", "int64_to_uint64: int -> uint",
                       "double_to_uint64: double -> uint", "string_to_uint64: string -> uint"),
    "double": _overloads("double_to_double: double -> double", "int64_to_double: int -> double",
                         "uint64_to_double: uint -> double",
                         "string_to_double: string -> double"),
    "string": _overloads(*(f"{t}_to_string: {t} -> string" for t in (
        "int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration"))),
    "bool": _overloads("bool_to_bool: bool -> bool", "string_to_bool: string -> bool"),
    "bytes": _overloads("bytes_to_bytes: bytes -> bytes", "string_to_bytes: string -> bytes"),
    "duration": _overloads("duration_to_duration: duration -> duration",
                           "string_to_duration: string -> duration"),
    "timestamp": _overloads("timestamp_to_timestamp: timestamp -> timestamp",
                            "string_to_timestamp: string -> timestamp",
                            "int64_to_timestamp: int -> timestamp"),
    "dyn": _overloads("to_dyn: A -> dyn"),
    # the optional types' (cel-go's ``cel.OptionalTypes``, every version: kube-apiserver's)
    "hasValue": _overloads("optional_hasValue: optional(A) -> bool"),
    "value": _overloads("optional_value: optional(A) -> A"),
    "or": _overloads("optional_or_optional: optional(A); optional(A) -> optional(A)"),
    "orValue": _overloads("optional_orValue_value: optional(A); A -> A"),
    "first": _overloads("list_first: list(A) -> optional(A)"),
    "last": _overloads("list_last: list(A) -> optional(A)"),
    "unwrapOpt": _overloads("optional_unwrapOpt: list(optional(A)) -> list(A)"),
    "optional.of": _overloads("optional_of: A -> optional(A)"),
    "optional.ofNonZeroValue": _overloads("optional_ofNonZeroValue: A -> optional(A)"),
    "optional.none": _overloads("optional_none: -> optional(A)"),
    "optional.unwrap": _overloads("optional_unwrap: list(optional(A)) -> list(A)"),
    "_[?_]": _overloads("list_optindex_optional_int: list(A); int -> optional(A)",
                        "optional_list_optindex_optional_int: optional(list(A)); int -> "
                        "optional(A)",
                        "map_optindex_optional_value: map(A, B); A -> optional(B)",
                        "optional_map_optindex_optional_value: optional(map(A, B)); A -> "
                        "optional(B)"),
}  # fmt: skip
"""Standard CEL's functions (cel-go's ``checker/decls``) and the optional types', by name:
``(overload, params, result)``; a member call's receiver is its first parameter."""
SIGNATURES["_[_]"] += _overloads(
    "optional_list_index_int: optional(list(A)); int -> optional(A)",
    "optional_map_index_value: optional(map(A, B)); A -> optional(B)",
)
_OPTIONAL_MEMBERS = {"hasValue", "value", "or", "orValue", "first", "last", "unwrapOpt"}
_MEMBER = {"size", *_STRINGS, *_OPTIONAL_MEMBERS}
_GLOBAL_ONLY = {"int", "uint", "double", "string", "bool", "bytes", "duration", "timestamp",
                "dyn"}  # fmt: skip
_RESULTS = {
    "bool": ("isSorted", "isQuantity", "isGreaterThan", "isLessThan", "isURL", "isIP", "isCIDR",
             "isSemver", "isInteger", "containsIP", "containsCIDR", "isCanonical",
             "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
             "isGlobalUnicast"),
    "string": ("lowerAscii", "upperAscii", "trim", "replace", "substring", "join", "charAt",
               "format", "quote", "getScheme", "getHost", "getHostname", "getPort",
               "getEscapedPath", "find"),
    "int": ("indexOf", "lastIndexOf", "compareTo", "asInteger", "sign", "prefixLength",
            "family", "major", "minor", "patch", "getFullYear", "getMonth", "getDayOfYear",
            "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes", "getSeconds",
            "getMilliseconds"),
}  # fmt: skip
_OPTIONAL_MACROS = {"optMap", "optFlatMap"}
_BINDERS = {"all", "exists", "existsOne", "exists_one", "map", "filter", "transformList",
            "transformMap", "transformMapEntry", "sortBy"}  # fmt: skip
_RESULT_OF = {name: _PRIMS[kind] for kind, names in _RESULTS.items() for name in names}
_RESULT_OF["validate"] = T("optional", (T("list", (_PRIMS["string"],)),))  # a format's errors


@dataclass
class Checked:
    """A rule checked: each expression's type and each call's overloads, by expression id;
    the errors (offset, message) in cel-go's order."""

    types: dict[int, T] = field(default_factory=dict)
    overloads: dict[int, list[str]] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)


def _bind(param: T, actual: T, bound: dict[str, T]) -> bool:
    if actual.kind == "unknown":  # what depends on it is unknown too, not ``dyn``
        for inner in _params_of(param):
            bound.setdefault(inner, UNKNOWN)
        return True
    if actual.kind in _VAGUE or param.kind == "dyn":
        return True
    if param.kind == "param":
        name = param.decl.kind if param.decl else ""
        seen = bound.get(name)
        if seen is None or seen.kind in _VAGUE:
            bound[name] = actual
            return True
        return _same(seen, actual)
    if actual.kind == "null_type":  # (cel-go's null is assignable to fewer: not refused here)
        return True
    if param.kind != actual.kind:
        return False
    return all(_bind(p, a, bound) for p, a in zip(param.params, actual.params, strict=False))


def _params_of(t: T) -> list[str]:
    """The names of the type parameters in a type (``A`` of ``optional(list(A))``)."""
    if t.kind == "param":
        return [t.decl.kind if t.decl else ""]
    return [name for inner in t.params for name in _params_of(inner)]


def _same(a: T, b: T) -> bool:
    if a.kind in _VAGUE or b.kind in _VAGUE or "null_type" in (a.kind, b.kind):
        return True
    if a.kind != b.kind:
        return False
    if a.kind == "object":
        return a.decl is b.decl or (a.decl is not None and b.decl is not None
                                    and a.decl.name == b.decl.name)  # fmt: skip
    return all(_same(x, y) for x, y in zip(a.params, b.params, strict=False))


def _substitute(result: T, bound: dict[str, T]) -> T:
    if result.kind == "param":
        return bound.get(result.decl.kind if result.decl else "", DYN)
    if result.params:
        return T(result.kind, tuple(_substitute(p, bound) for p in result.params), result.decl)
    return result


class _Checker:
    def __init__(self, variables: dict[str, T]) -> None:
        self.out = Checked()
        self.scopes: list[dict[str, T]] = [variables]

    def lookup(self, name: str) -> T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def check(self, e: Expr) -> T:
        found = self.visit(e)
        self.out.types[e.id] = found
        return found

    def error(self, e: Expr, message: str, *, at: int | None = None) -> T:
        self.out.errors.append((e.pos if at is None else at, message))
        return ERROR

    def visit(self, e: Expr) -> T:
        if e.kind == "lit":
            return _PRIMS[e.name]
        if e.kind == "ident":
            found = self.lookup(e.name)
            if found is not None:
                return found
            if e.name in _PRIMS or e.name in ("list", "map", "null_type", "dyn"):
                return _PRIMS["type"]
            return self.error(e, f"undeclared reference to '{e.name}' (in container '')")
        if e.kind == "select":
            return self.select(e)
        if e.kind == "list":
            items = [self.check(item) for item in e.args]
            known = [item for item in items if item.kind not in _VAGUE]
            if known and all(_same(known[0], item) for item in known):
                return T("list", (known[0],))
            return T("list", (DYN if known else UNKNOWN,))
        if e.kind == "map":
            keys = [self.check(key) for key, _ in e.entries]
            values = [self.check(value) for _, value in e.entries]
            key = keys[0] if keys and all(_same(keys[0], k) for k in keys) else DYN
            value = values[0] if values and all(_same(values[0], v) for v in values) else DYN
            return T("map", (key if keys else UNKNOWN, value if values else UNKNOWN))
        if e.kind == "comp":
            return self.comprehension(e)
        if e.kind == "call":
            return self.call(e)
        return UNKNOWN

    def select(self, e: Expr) -> T:
        assert e.target is not None
        operand = self.check(e.target)
        if e.test_only:
            found = self.field(e, operand, e.name)
            return found if found.kind == "error" else _PRIMS["bool"]
        return self.field(e, operand, e.name)

    def field(
        self, e: Expr, operand: T, name: str, *, optional: bool = False, at: int | None = None
    ) -> T:
        """A field's type (cel-go's ``checkSelectField``): of an optional's value, and then
        an optional too, as an optional selection's (``optional``; its errors ``at`` its
        dot)."""
        if operand.kind == "optional":
            operand, optional = operand.params[0], True
        if operand.kind == "object" and operand.decl is not None:
            found = operand.decl.fields.get(name)
            if found is None:
                return self.error(e, f"undefined field '{name}'", at=at)
            result = decl_to_type(found)
        elif operand.kind == "map":
            result = operand.params[1]
        elif operand.kind in _VAGUE:
            return operand if operand.kind != "dyn" or not optional else optional_of(DYN)
        else:
            return self.error(e, f"type '{operand}' does not support field selection", at=at)
        return optional_of(result) if optional else result

    def comprehension(self, e: Expr) -> T:
        assert e.iter_range is not None
        assert e.accu_init is not None
        assert e.loop_cond is not None
        assert e.loop_step is not None
        assert e.result is not None
        iterated = self.check(e.iter_range)
        if iterated.kind in ("list", "map"):
            item = iterated.params[0]
        elif iterated.kind in _VAGUE:
            item = iterated
        else:
            item = self.error(e.iter_range, f"expression of type '{iterated}' cannot be range "
                              "of a comprehension (must be list, map, or dynamic)")  # fmt: skip
        accu = self.check(e.accu_init)
        self.scopes.append({e.accu_var: accu})
        self.scopes.append({e.iter_var: item})
        self.check(e.loop_cond)
        step = self.check(e.loop_step)
        self.scopes.pop()
        if step.kind not in _VAGUE:
            self.scopes[-1][e.accu_var] = step
        found = self.check(e.result)
        self.scopes.pop()
        return found

    def call(self, e: Expr) -> T:
        name = e.name
        target = e.target
        if (
            target is not None
            and target.kind == "ident"
            and self.lookup(target.name) is None
            and target.name in NAMESPACES  # a namespaced function (sets.contains...)
        ):
            args = [self.check(arg) for arg in e.args]
            self.out.types[target.id] = UNKNOWN
            table = SIGNATURES.get(f"{target.name}.{name}")
            if table is not None:  # (optional.of...: a global function of its own)
                return self.overloaded(e, f"{target.name}.{name}", table, None, args)
            return _RESULT_OF.get(name, UNKNOWN)
        if name == ENTRIES and target is not None and target.kind in ("list", "map"):
            return self.optional_entries(target, e.args)
        receiver = self.check(target) if target is not None else None
        if target is not None and name in _BINDERS:  # cel-go's extensions' macros
            return self.binder(e)
        if receiver is not None and name in _OPTIONAL_MACROS and len(e.args) == 2:
            return self.optional_macro(e, receiver)
        args = [self.check(arg) for arg in e.args]
        if receiver is not None and name == SELECT:  # ``x.?f``
            if not (e.args and e.args[0].kind == "lit" and e.args[0].name == "string"):
                return UNKNOWN
            dot = e.pos - len(SELECT) - 1  # (the call's position is its parenthesis')
            return self.field(e, receiver, str(e.args[0].value), optional=True, at=dot)
        if receiver is not None and name == INDEX:  # ``x[?k]``: cel-go's global ``_[?_]``
            return self.overloaded(e, "_[?_]", SIGNATURES["_[?_]"], None, [receiver, *args])
        table = SIGNATURES.get(name)
        member = target is not None
        if (
            table is None
            or (member and name not in _MEMBER)
            or (not member and name in _MEMBER - {"size"})
        ):
            return self.library(e, receiver, args)
        if member and name in _GLOBAL_ONLY:
            return UNKNOWN
        return self.overloaded(e, name, table, receiver, args)

    def overloaded(
        self,
        e: Expr,
        name: str,
        table: list[tuple[str, list[T], T]],
        receiver: T | None,
        args: list[T],
    ) -> T:
        """A call's type by the overloads its operands match; none: cel-go's error."""
        operands = [receiver, *args] if receiver is not None else args
        if any(t.kind == "error" for t in operands):
            return ERROR
        matched: list[str] = []
        results: list[T] = []
        for overload, params, result in table:
            if len(params) != len(operands):
                continue
            bound: dict[str, T] = {}
            if all(_bind(p, a, bound) for p, a in zip(params, operands, strict=True)):
                matched.append(overload)
                results.append(_substitute(result, bound))
        if not matched:
            if any(t.kind == "unknown" for t in operands):
                return UNKNOWN
            shown = ", ".join(str(t) for t in args)
            signature = f"{receiver}.({shown})" if receiver is not None else f"({shown})"
            return self.error(e, f"found no matching overload for '{name}' applied to "
                              f"'{signature}'")  # fmt: skip
        self.out.overloads[e.id] = matched
        if len(results) == 1 or all(_same(results[0], r) for r in results):
            return results[0]
        return DYN

    def optional_macro(self, e: Expr, receiver: T) -> T:
        """``x.optMap(v, f)`` (an optional of ``f``'s value) and ``x.optFlatMap(v, f)`` (``f``,
        an optional), ``v`` the optional's value; of what this module does not know the type
        of (or no optional), of unknown type."""
        variable, body = e.args
        value = receiver.params[0] if receiver.kind == "optional" else UNKNOWN
        self.scopes.append({variable.name: value} if variable.kind == "ident" else {})
        found = self.check(body)
        self.scopes.pop()
        if receiver.kind != "optional" or found.kind == "error":
            return UNKNOWN if found.kind != "error" else ERROR
        if e.name == "optMap":
            return optional_of(found)
        return found if found.kind in ("optional", *_VAGUE) else UNKNOWN

    def optional_entries(self, literal: Expr, args: list[Expr]) -> T:
        """A list or map literal with optional entries (``[a, ?b]``, ``{?k: v}``): each
        optional entry's value must be an optional (one of another known type is refused, as
        cel-go refuses it); the literal is of unknown type (and cost)."""
        marks = str(args[0].value)[1:-1] if args and args[0].kind == "lit" else ""
        values = literal.args if literal.kind == "list" else [v for _, v in literal.entries]
        keys = [self.check(key) for key, _ in literal.entries]
        for value, mark in zip(values, marks, strict=False):
            found = self.check(value)
            if mark == "?" and found.kind not in ("optional", *_VAGUE):
                self.error(value, f"expected type 'optional_type({found})' but found '{found}'")
        del keys  # (checked for their errors)
        self.out.types[literal.id] = UNKNOWN
        return UNKNOWN

    def binder(self, e: Expr) -> T:
        """A macro of two variables (``all(k, v, p)``, ``transformList(i, v, f)``...) or one
        this module does not expand: its variables are of unknown types."""
        names = {arg.name: UNKNOWN for arg in e.args[:-1] if arg.kind == "ident"}
        self.scopes.append(names)
        for arg in e.args:
            self.check(arg)
        self.scopes.pop()
        return _PRIMS["bool"] if e.name in ("all", "exists", "existsOne", "exists_one") else UNKNOWN

    def library(self, e: Expr, receiver: T | None, args: list[T]) -> T:
        """A function of Kubernetes' libraries (or cel-go's extensions): its result's type
        where it is known, no errors."""
        if e.name in ("sum", "min", "max") and receiver is not None and receiver.kind == "list":
            return receiver.params[0]
        if e.name in ("split", "findAll"):
            return T("list", (_PRIMS["string"],))
        return _RESULT_OF.get(e.name, UNKNOWN)


def check(expr: Expr, self_type: T, old_type: T) -> Checked:
    """Type-check a rule's expression with ``self`` (and ``oldSelf``) of the given types."""
    return check_with(expr, {"self": self_type, "oldSelf": old_type})


def check_with(expr: Expr, variables: dict[str, T]) -> Checked:
    """Type-check an expression whose variables are of the given types (a DRA device
    selector's: ``device``)."""
    checker = _Checker(dict(variables))
    checker.check(expr)
    checker.out.errors.sort(key=lambda error: error[0])
    return checker.out


def is_accumulator(name: str) -> bool:
    """Whether a name is a comprehension's accumulator."""
    return name in (ACCU, "__result__")
