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
from anyop.testing.fake.cel_optional import ENTRIES, INDEX, SELECT
from anyop.testing.fake.cel_signatures import (
    BINDERS,
    DYN,
    ERROR,
    GLOBAL_ONLY,
    GLOBAL_ONLY_OVERLOADS,
    GLOBAL_TOO,
    MARKED,
    MEMBER,
    MEMBER_ONLY,
    NAMESPACES,
    OPTIONAL_MACROS,
    PRIMS,
    RESULT_OF,
    SIGNATURES,
    UNKNOWN,
    VAGUE,
    T,
    decl_to_type,
    optional_of,
)

__all__ = ["Checked", "check", "check_with"]


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
    if actual.kind in VAGUE or param.kind == "dyn":
        return True
    if param.kind == "param":
        name = param.decl.kind if param.decl else ""
        seen = bound.get(name)
        if seen is None or seen.kind in VAGUE:
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
    if a.kind in VAGUE or b.kind in VAGUE or "null_type" in (a.kind, b.kind):
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
    def __init__(self, variables: dict[str, T], structs: tuple[str, ...] = ()) -> None:
        self.out = Checked()
        self.scopes: list[dict[str, T]] = [variables]
        self.structs = structs

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
            return PRIMS[e.name]
        if e.kind == "ident":
            found = self.lookup(e.name)
            if found is not None:
                return found
            if e.name in PRIMS or e.name in ("list", "map", "null_type", "dyn"):
                return PRIMS["type"]
            return self.error(e, f"undeclared reference to '{e.name}' (in container '')")
        if e.kind == "select":
            return self.select(e)
        if e.kind == "list":
            items = [self.check(item) for item in e.args]
            known = [item for item in items if item.kind not in VAGUE]
            if known and all(_same(known[0], item) for item in known):
                return T("list", (known[0],))
            return T("list", (DYN if known or not items else UNKNOWN,))  # ([]: list(dyn))
        if e.kind == "map":
            keys = [self.check(key) for key, _ in e.entries]
            values = [self.check(value) for _, value in e.entries]
            key = keys[0] if keys and all(_same(keys[0], k) for k in keys) else DYN
            value = values[0] if values and all(_same(values[0], v) for v in values) else DYN
            return T("map", (key, value))  # ({}: map(dyn, dyn))
        if e.kind == "comp":
            return self.comprehension(e)
        if e.kind == "struct":  # a message: of its type, where the environment has it
            for _, initial in e.entries:
                self.check(initial)
            declared = e.name in self.structs or e.name.partition(".")[0] in self.structs
            return T(e.name) if declared else UNKNOWN
        if e.kind == "call":
            return self.call(e)
        return UNKNOWN

    def select(self, e: Expr) -> T:
        assert e.target is not None
        operand = self.check(e.target)
        if e.test_only:
            found = self.field(e, operand, e.name)
            return found if found.kind == "error" else PRIMS["bool"]
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
        elif operand.kind in VAGUE:
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
        value = item = iterated  # (a vague range's)
        if iterated.kind in ("list", "map"):
            item = iterated.params[0]
            value = item if iterated.kind == "list" else iterated.params[1]
            if e.iter_var2 and iterated.kind == "list":
                item = PRIMS["int"]  # a two-variable one's: the index, and the element
        elif iterated.kind not in VAGUE:
            message = f"expression of type '{iterated}' cannot be range of a comprehension "
            value = item = self.error(e.iter_range, message + "(must be list, map, or dynamic)")
        accu = self.check(e.accu_init)
        self.scopes.append({e.accu_var: accu})
        self.scopes.append({e.iter_var: item, **({e.iter_var2: value} if e.iter_var2 else {})})
        self.check(e.loop_cond)
        step = self.check(e.loop_step)
        self.scopes.pop()
        if step.kind not in VAGUE:
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
            return RESULT_OF.get(name, UNKNOWN)
        if name == ENTRIES and target is not None and target.kind in ("list", "map"):
            return self.optional_entries(target, e.args)
        receiver = self.check(target) if target is not None else None
        if target is not None and name in BINDERS:  # cel-go's extensions' macros
            return self.binder(e)
        if receiver is not None and name in OPTIONAL_MACROS and len(e.args) == 2:
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
        if table is not None and name in MARKED:  # (a call of the other kind matches none)
            return self.overloaded(e, name, table, receiver, args)
        if (
            table is None
            or (member and name not in MEMBER)
            or (not member and name in MEMBER - GLOBAL_TOO)
        ):
            return self.library(e, receiver, args)
        if member and name in GLOBAL_ONLY:
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
            if overload in (MEMBER_ONLY if receiver is None else GLOBAL_ONLY_OVERLOADS):
                continue  # (a library's member function called globally, or the other way)
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
        return found if found.kind in ("optional", *VAGUE) else UNKNOWN

    def optional_entries(self, literal: Expr, args: list[Expr]) -> T:
        """A list or map literal with optional entries (``[a, ?b]``, ``{?k: v}``): each
        optional entry's value must be an optional (one of another known type is refused, as
        cel-go refuses it); the literal is of unknown type (and cost)."""
        marks = str(args[0].value)[1:-1] if args and args[0].kind == "lit" else ""
        values = literal.args if literal.kind == "list" else [v for _, v in literal.entries]
        keys = [self.check(key) for key, _ in literal.entries]
        for value, mark in zip(values, marks, strict=False):
            found = self.check(value)
            if mark == "?" and found.kind not in ("optional", *VAGUE):
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
        return PRIMS["bool"] if e.name in ("all", "exists", "existsOne", "exists_one") else UNKNOWN

    def library(self, e: Expr, receiver: T | None, args: list[T]) -> T:
        """A function of Kubernetes' libraries (or cel-go's extensions): its result's type
        where it is known, no errors."""
        if e.name in ("sum", "min", "max") and receiver is not None and receiver.kind == "list":
            return receiver.params[0]
        if e.name in ("split", "findAll"):
            return T("list", (PRIMS["string"],))
        return RESULT_OF.get(e.name, UNKNOWN)


def check(expr: Expr, self_type: T, old_type: T) -> Checked:
    """Type-check a rule's expression with ``self`` (and ``oldSelf``) of the given types."""
    return check_with(expr, {"self": self_type, "oldSelf": old_type})


def check_with(expr: Expr, variables: dict[str, T], *, structs: tuple[str, ...] = ()) -> Checked:
    """Type-check an expression whose variables are of the given types (a DRA device
    selector's: ``device``); ``structs``: the message types it may build (a mutating admission
    policy's ``Object`` and its fields' ``Object.spec``..., ``JSONPatch``), each of its own
    type (another is of unknown type)."""
    checker = _Checker(dict(variables), structs)
    checker.check(expr)
    checker.out.errors.sort(key=lambda error: error[0])
    return checker.out


def is_accumulator(name: str) -> bool:
    """Whether a name is a comprehension's accumulator."""
    return name in (ACCU, "__result__")
