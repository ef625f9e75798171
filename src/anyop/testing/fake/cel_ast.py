"""A CEL expression as cel-go's parser gives it to its checker, from cel-python's parse tree.

Pure. :func:`parsed` turns cel-python's (lark) tree of a rule into cel-go's expressions: each
with the offset where cel-go places it (an operator's, a call's ``(``, a select's ``.``, an
index's ``[``), macros (``has``, ``all``, ``exists``, ``exists_one``, ``map``, ``filter``, and
the two-variable ``all``, ``exists``, ``existsOne``, ``transformList``, ``transformMap`` and
``transformMapEntry``) expanded to comprehensions as cel-go's parser expands them.
:func:`syntax_error` words a parse failure as cel-go's ANTLR parser words the common ones.
"""

from __future__ import annotations

import ast as python_ast
import itertools
from dataclasses import dataclass, field
from typing import Any

import lark

__all__ = ["ACCU", "MAP_INSERT", "Expr", "parsed", "syntax_error"]

ACCU = "@result"
_BINARY = {"relation_lt": ("_<_", "<"), "relation_le": ("_<=_", "<="),
           "relation_gt": ("_>_", ">"), "relation_ge": ("_>=_", ">="),
           "relation_eq": ("_==_", "=="), "relation_ne": ("_!=_", "!="),
           "relation_in": ("@in", "in"), "addition_add": ("_+_", "+"),
           "addition_sub": ("_-_", "-"), "multiplication_mul": ("_*_", "*"),
           "multiplication_div": ("_/_", "/"), "multiplication_mod": ("_%_", "%")}  # fmt: skip
_PASS = {"conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
         "member", "primary", "paren_expr"}  # fmt: skip


@dataclass(eq=False)
class Expr:
    """One of cel-go's expressions: ``kind`` is ``lit``, ``ident``, ``select``, ``call``,
    ``list``, ``map``, ``struct`` or ``comp``."""

    kind: str
    pos: int
    id: int = 0
    value: Any = None  # a literal's (its CEL type's name in ``name``)
    name: str = ""  # an identifier's, a selected field's, a function's, a literal's type
    target: Expr | None = None  # a select's operand, a member call's receiver
    args: list[Expr] = field(default_factory=list)  # a call's, a list's items
    entries: list[tuple[Expr, Expr]] = field(default_factory=list)
    test_only: bool = False
    # a comprehension's parts
    iter_var: str = ""
    iter_var2: str = ""  # a two-variable comprehension's second (the value)
    accu_var: str = ""
    iter_range: Expr | None = None
    accu_init: Expr | None = None
    loop_cond: Expr | None = None
    loop_step: Expr | None = None
    result: Expr | None = None


class _Builder:
    def __init__(self, text: str) -> None:
        self.text = text
        self.ids = itertools.count(1)

    def new(self, kind: str, pos: int, **kw: Any) -> Expr:
        return Expr(kind, pos, next(self.ids), **kw)

    def after(self, node: Any, symbol: str) -> int:
        """The offset of ``symbol`` after a parse node (an operator after its left operand)."""
        start = node.meta.end_pos if isinstance(node, lark.Tree) else node.end_pos
        found = self.text.find(symbol, start)
        return found if found >= 0 else start

    def build(self, node: Any) -> Expr:
        if isinstance(node, lark.Token):  # pragma: no cover - the grammar wraps tokens
            return self.new("ident", node.start_pos or 0, name=str(node))
        data = str(node.data)
        kids = [kid for kid in node.children if kid is not None]
        if data == "expr":
            if len(kids) == 1:
                return self.build(kids[0])
            pos = self.after(kids[0], "?")
            args = [self.build(kid) for kid in kids]
            return self.new("call", pos, name="_?_:_", args=args)
        if data in ("conditionalor", "conditionaland") and len(kids) == 2:
            symbol = "||" if data == "conditionalor" else "&&"
            pos = self.after(kids[0], symbol)
            name = "_||_" if symbol == "||" else "_&&_"
            return self.new("call", pos, name=name, args=[self.build(kids[0]), self.build(kids[1])])
        if data in ("relation", "addition", "multiplication") and len(kids) == 2:
            operator = kids[0]
            function, symbol = _BINARY[str(operator.data)]
            left = operator.children[0]
            pos = self.after(left, symbol)
            args = [self.build(left), self.build(kids[1])]
            return self.new("call", pos, name=function, args=args)
        if data == "unary" and len(kids) == 2:
            not_ = kids[0].data == "unary_not"
            pos = self.text.rfind("!" if not_ else "-", 0, kids[1].meta.start_pos)
            return self.new("call", pos, name="!_" if not_ else "-_", args=[self.build(kids[1])])
        if data in _PASS:
            return self.build(kids[0])
        if data == "member_dot":
            operand, ident = kids
            pos = self.after(operand, ".")
            return self.new("select", pos, name=str(ident), target=self.build(operand))
        if data == "member_dot_arg":
            operand, ident, *rest = kids
            pos = self.text.find("(", ident.end_pos)
            args = [self.build(kid) for kid in rest[0].children] if rest else []
            return self.call(pos, str(ident), self.build(operand), args)
        if data == "member_index":
            operand, index = kids
            pos = self.after(operand, "[")
            return self.new("call", pos, name="_[_]", args=[self.build(operand), self.build(index)])
        if data == "member_object":  # ``Type{field: value}``: its type's name, its fields
            pos = self.after(kids[0], "{")
            named = kids[0]
            name = self.text[named.meta.start_pos : named.meta.end_pos].strip()
            inits = kids[1].children if len(kids) > 1 else []
            entries = []
            for token, value in zip(inits[::2], inits[1::2], strict=True):
                key = self.new("lit", token.start_pos or pos, value=str(token), name="string")
                entries.append((key, self.build(value)))
            return self.new("struct", pos, name=name, entries=entries)
        if data in ("ident_arg", "dot_ident_arg"):
            ident, *rest = kids
            pos = self.text.find("(", ident.end_pos)
            args = [self.build(kid) for kid in rest[0].children] if rest else []
            name = ("." if data == "dot_ident_arg" else "") + str(ident)
            return self.call(pos, name, None, args)
        if data in ("ident", "dot_ident"):
            token = kids[0]
            return self.new("ident", node.meta.start_pos or 0, name=str(token))
        if data == "list_lit":
            items = [self.build(kid) for kid in kids[0].children] if kids else []
            return self.new("list", node.meta.start_pos, args=items)
        if data == "map_lit":
            parts = [self.build(kid) for kid in kids[0].children] if kids else []
            entries = list(zip(parts[0::2], parts[1::2], strict=True))
            return self.new("map", node.meta.start_pos, entries=entries)
        if data == "literal":
            return self.literal(kids[0])
        raise ValueError(f"unexpected CEL parse node {data}")  # pragma: no cover

    def literal(self, token: lark.Token) -> Expr:
        text, kind = str(token), str(token.type)
        pos = token.start_pos or 0
        if kind == "BOOL_LIT":
            return self.new("lit", pos, value=text == "true", name="bool")
        if kind == "NULL_LIT":
            return self.new("lit", pos, value=None, name="null_type")
        if kind == "UINT_LIT":
            return self.new("lit", pos, value=int(text[:-1], 0), name="uint")
        if kind == "INT_LIT":
            return self.new("lit", pos, value=int(text, 0), name="int")
        if kind == "FLOAT_LIT":
            return self.new("lit", pos, value=float(text), name="double")
        raw = kind == "BYTES_LIT"
        body = text[1:] if raw else text
        try:
            value: Any = python_ast.literal_eval(body)
        except (ValueError, SyntaxError):
            value = body.strip("'\"")
        if raw:
            size = len(value.encode()) if isinstance(value, str) else len(value)
            return self.new("lit", pos, value=size, name="bytes")
        return self.new("lit", pos, value=str(value), name="string")

    def call(self, pos: int, name: str, target: Expr | None, args: list[Expr]) -> Expr:
        macro = self.macro(pos, name, target, args)
        if macro is not None:
            return macro
        return self.new("call", pos, name=name, target=target, args=args)

    def macro(self, pos: int, name: str, target: Expr | None, args: list[Expr]) -> Expr | None:
        if name == "has" and target is None and len(args) == 1 and args[0].kind == "select":
            selected = args[0]
            return self.new("select", pos, name=selected.name, target=selected.target,
                            test_only=True)  # fmt: skip
        if target is None or len(args) not in (2, 3, 4) or args[0].kind != "ident":
            return None
        if name in _TWO_VARIABLES and len(args) in _TWO_VARIABLES[name] and args[1].kind == "ident":
            return self.two_variables(pos, name, target, args)
        if name not in ("all", "exists", "exists_one", "map", "filter") or len(args) == 4:
            return None
        if len(args) == 3 and name != "map":
            return None
        variables = (args[0].name,)
        if name in ("all", "exists", "exists_one"):
            return self.comprehension(pos, target, variables, *self.quantifier(pos, name, args[1]))
        m = _Parts(self, pos)
        value = args[-1] if name == "map" else args[0]
        step = m.op("_+_", m.accu(), self.new("list", pos, args=[value]))
        if name == "filter" or len(args) == 3:
            step = m.op("_?_:_", args[1], step, m.accu())
        return self.comprehension(pos, target, variables, self.new("list", pos),
                                  m.lit(True, "bool"), step, m.accu())  # fmt: skip

    def quantifier(self, pos: int, name: str, predicate: Expr) -> tuple[Expr, Expr, Expr, Expr]:
        """The accumulator's start, the loop's condition and step, and the result of ``all``,
        ``exists`` or ``exists_one`` (``existsOne``) of a predicate."""
        m = _Parts(self, pos)
        if name == "all":
            return (m.lit(True, "bool"), m.op("@not_strictly_false", m.accu()),
                    m.op("_&&_", m.accu(), predicate), m.accu())  # fmt: skip
        if name == "exists":
            return (m.lit(False, "bool"), m.op("@not_strictly_false", m.op("!_", m.accu())),
                    m.op("_||_", m.accu(), predicate), m.accu())  # fmt: skip
        step = m.op("_?_:_", predicate, m.op("_+_", m.accu(), m.lit(1, "int")), m.accu())
        return m.lit(0, "int"), m.lit(True, "bool"), step, m.op("_==_", m.accu(), m.lit(1, "int"))

    def comprehension(
        self, pos: int, target: Expr, variables: tuple[str, ...], init: Expr, cond: Expr,
        step: Expr, result: Expr,
    ) -> Expr:  # fmt: skip
        second = variables[1] if len(variables) > 1 else ""
        return self.new("comp", pos, iter_var=variables[0], iter_var2=second, accu_var=ACCU,
                        iter_range=target, accu_init=init, loop_cond=cond, loop_step=step,
                        result=result)  # fmt: skip

    def two_variables(self, pos: int, name: str, target: Expr, args: list[Expr]) -> Expr:
        """cel-go's two-variable comprehensions (``ext.TwoVarComprehensions``): an index or a
        key, and a value."""
        variables = (args[0].name, args[1].name)
        if name in ("all", "exists", "existsOne", "exists_one"):
            quantifier = "exists_one" if name == "existsOne" else name
            parts = self.quantifier(pos, quantifier, args[2])
            return self.comprehension(pos, target, variables, *parts)
        m = _Parts(self, pos)
        made = args[-1]
        step: Expr
        if name == "transformList":
            init = self.new("list", pos)
            step = m.op("_+_", m.accu(), self.new("list", pos, args=[made]))
        elif name == "transformMap":
            key = self.new("ident", pos, name=args[0].name)
            init, step = self.new("map", pos), m.op(MAP_INSERT, m.accu(), key, made)
        else:
            init, step = self.new("map", pos), m.op(MAP_INSERT, m.accu(), made)
        if len(args) == 4:
            step = m.op("_?_:_", args[2], step, m.accu())
        return self.comprehension(pos, target, variables, init, m.lit(True, "bool"), step,
                                  m.accu())  # fmt: skip


class _Parts:
    """The expressions a macro's expansion is made of, at the macro's position."""

    def __init__(self, builder: _Builder, pos: int) -> None:
        self.builder, self.pos = builder, pos

    def accu(self) -> Expr:
        return self.builder.new("ident", self.pos, name=ACCU)

    def lit(self, value: Any, kind: str) -> Expr:
        return self.builder.new("lit", self.pos, value=value, name=kind)

    def op(self, function: str, *operands: Expr) -> Expr:
        return self.builder.new("call", self.pos, name=function, args=list(operands))


_TWO_VARIABLES = {
    "all": (3,),
    "exists": (3,),
    "existsOne": (3,),
    "exists_one": (3,),
    "transformList": (3, 4),
    "transformMap": (3, 4),
    "transformMapEntry": (3, 4),
}
MAP_INSERT = "cel.@mapInsert"
"""The function a ``transformMap``'s step inserts with."""


def parsed(text: str, tree: lark.Tree[Any]) -> Expr:
    """cel-go's expression of a rule from cel-python's parse tree of it."""
    return _Builder(text).build(tree)


_OPERAND_START = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
                  "NUM_UINT, STRING, BYTES, IDENTIFIER}")  # fmt: skip


def syntax_error(text: str) -> list[tuple[int, str]] | None:
    """cel-go's syntax errors (offset, message) of a rule cel-python cannot parse, for the
    forms worded here: no expression at all, an operand missing at the end, a ``)`` missing at
    the end, a lone ``=``; ``None``: another form (worded otherwise)."""
    stripped = text.rstrip()
    end = len(text)
    if not stripped:
        return [(end, f"Syntax error: mismatched input '<EOF>' expecting {_OPERAND_START}")]
    if stripped.count("(") > stripped.count(")") and stripped[-1:] not in "([{,+-*/%!<>=&|?:":
        return [(end, "Syntax error: missing ')' at '<EOF>'")]
    for symbol in ("==", "!=", "<=", ">=", "&&", "||", "+", "*", "/", "%", "<", ">", "?", ":"):
        if stripped.endswith(symbol):
            return [(end, f"Syntax error: mismatched input '<EOF>' expecting {_OPERAND_START}")]
    return None
