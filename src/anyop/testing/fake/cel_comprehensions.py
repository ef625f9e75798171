"""cel-go's two-variable comprehensions (ext.TwoVarComprehensions, in kube-apiserver's CEL
environment since 1.32) for cel-python: ``all``, ``exists``, ``existsOne`` (``exists_one``)
with an index or key and a value, ``transformList``, ``transformMap`` and ``transformMapEntry``
(with an optional filter); and the optional types' macros, ``optMap`` and ``optFlatMap``.

:class:`Runner` is cel-python's interpreting runner whose evaluator reads these macros (on a
list: the index and the element; on a map: the key and the value) and leaves the others to
cel-python. An error in the expression is the result unless ``all`` finds a false or
``exists`` a true, as cel-go's comprehensions answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import lark
from celpy import InterpretedRunner, celtypes
from celpy.evaluation import CELEvalError, Context, Evaluator

from anyop.testing.fake.cel_kinds import Optional

__all__ = ["Runner"]

_QUANTIFIERS = {"all", "exists", "existsOne", "exists_one"}
_TRANSFORMS = {"transformList", "transformMap", "transformMapEntry"}
_OPTIONAL_MACROS = {"optMap", "optFlatMap"}


def _name(tree: Any) -> str | None:
    """The identifier an argument is (``k`` in ``all(k, v, ...)``), else ``None``."""
    idents = list(tree.find_data("ident")) if isinstance(tree, lark.Tree) else []
    if len(idents) != 1 or not isinstance(tree, lark.Tree):
        return None
    token = idents[0].children[0]
    return str(token) if isinstance(token, lark.Token) else None


def _pairs(target: Any) -> Iterable[tuple[Any, Any]] | None:
    if isinstance(target, list):
        return [(celtypes.IntType(i), item) for i, item in enumerate(target)]
    if isinstance(target, Mapping):
        return [(key, target[key]) for key in target]
    return None


def _quantified(name: str, results: Iterable[Any]) -> Any:
    error: Any = None
    count = 0
    for result in results:
        if isinstance(result, CELEvalError):
            error = error or result
            if name in ("existsOne", "exists_one"):
                return result
            continue
        if not isinstance(result, celtypes.BoolType):
            return CELEvalError("no such overload")
        if name == "all" and not result:
            return celtypes.BoolType(False)
        if name == "exists" and result:
            return celtypes.BoolType(True)
        count += bool(result)
    if error is not None:
        return error
    if name == "all":
        return celtypes.BoolType(True)
    return celtypes.BoolType(count == 1) if name != "exists" else celtypes.BoolType(False)


def _transformed(
    name: str, pairs: Iterable[tuple[Any, Any]], keep: Callable[..., Any] | None,
    give: Callable[..., Any],
) -> Any:  # fmt: skip
    made_list: list[Any] = []
    made_map: dict[Any, Any] = {}
    for key, value in pairs:
        if keep is not None:
            kept = keep(key, value)
            if isinstance(kept, CELEvalError):
                return kept
            if not isinstance(kept, celtypes.BoolType):
                return CELEvalError("no such overload")
            if not kept:
                continue
        result = give(key, value)
        if isinstance(result, CELEvalError):
            return result
        if name == "transformList":
            made_list.append(result)
        elif name == "transformMap":
            made_map[key] = result
        elif not isinstance(result, Mapping):
            return CELEvalError("no such overload")
        else:
            for entry, entry_value in result.items():
                if entry in made_map:
                    return CELEvalError(f"insert failed: key {entry} already exists")
                made_map[entry] = entry_value
    if name == "transformList":
        return celtypes.ListType(made_list)
    return celtypes.MapType(made_map)


class _Evaluator(Evaluator):
    """cel-python's evaluator, with the two-variable comprehensions."""

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _Evaluator(ast, activation=self.activation)

    def member_dot_arg(self, tree: lark.Tree[Any]) -> Any:
        method = tree.children[1]
        args = tree.children[2].children if len(tree.children) == 3 else []
        name = str(method) if isinstance(method, lark.Token) else ""
        if name in _OPTIONAL_MACROS and len(args) == 2:
            return self.optional_macro(name, tree.children[0], args)
        wanted = (3,) if name in _QUANTIFIERS else (3, 4) if name in _TRANSFORMS else ()
        if len(args) not in wanted:
            return super().member_dot_arg(tree)
        first, second = _name(args[0]), _name(args[1])
        if first is None or second is None:
            return CELEvalError(f"{name}() variable names must be simple identifiers")
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        pairs = _pairs(target)
        if pairs is None:
            return CELEvalError("no such overload")
        steps = [self.sub_evaluator(ast=arg) for arg in args[2:]]

        def step(evaluator: Evaluator) -> Callable[[Any, Any], Any]:
            def run(key: Any, value: Any) -> Any:
                try:
                    return evaluator.evaluate({first: key, second: value})
                except CELEvalError as exc:
                    return exc

            return run

        runs = [step(evaluator) for evaluator in steps]
        if name in _QUANTIFIERS:
            return _quantified(name, (runs[0](key, value) for key, value in pairs))
        keep = runs[0] if len(runs) == 2 else None
        return _transformed(name, pairs, keep, runs[-1])

    def optional_macro(self, name: str, target: Any, args: list[Any]) -> Any:
        """``x.optMap(v, f)``: ``optional.of(f)`` with ``v`` the value of ``x``, or none;
        ``x.optFlatMap(v, f)``: ``f`` (an optional), or none."""
        variable = _name(args[0])
        if variable is None:
            return CELEvalError(f"{name}() variable name must be a simple identifier")
        held = self.visit(target)
        if isinstance(held, CELEvalError):
            return held
        if not isinstance(held, Optional):
            return CELEvalError("no such overload")
        if not held.present:
            return Optional()
        try:
            result = self.sub_evaluator(ast=args[1]).evaluate({variable: held.value})
        except CELEvalError as exc:
            return exc
        if isinstance(result, CELEvalError) or name == "optFlatMap":
            return result
        return Optional(result, True)


class Runner(InterpretedRunner):
    """cel-python's interpreting runner, with the two-variable comprehensions."""

    def evaluate(self, context: Context) -> Any:
        return _Evaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)
