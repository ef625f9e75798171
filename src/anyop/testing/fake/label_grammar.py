"""The grammar of label selectors, as apimachinery's ``labels.Parse`` reads them.

Pure. Its lexer and recursive descent follow ``pkg/labels/selector.go`` step by step, so that a
malformed selector gets kube-apiserver's message (``unable to parse requirement: found '',
expected: ',', ')' or identifier``). The keys and values are not validated as label keys and
values (the API server also refuses over-long or odd ones: ``a/b/c``, ``-x``); ``gt``/``lt``
values must be integers, as ``NewRequirement`` wants.
"""

from __future__ import annotations

import dataclasses
import enum
import re

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import label_key_errors, label_value_errors

__all__ = ["Requirement", "SelectorSyntaxError", "parse_requirements"]


class SelectorSyntaxError(ValueError):
    """A selector that does not parse; the message is apimachinery's."""


class Token(enum.Enum):
    """The lexer's tokens."""

    ERROR = "error"
    END = "end"
    CLOSED_PAR = ")"
    COMMA = ","
    DOES_NOT_EXIST = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GREATER_THAN = ">"
    IDENTIFIER = "identifier"
    IN = "in"
    LESS_THAN = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN_PAR = "("


_LITERALS = {token.value: token for token in Token if token.value not in ("error", "end",
                                                                         "identifier")}  # fmt: skip
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_OPERATORS = {Token.IN: "in", Token.EQUALS: "=", Token.DOUBLE_EQUALS: "==",
              Token.GREATER_THAN: "gt", Token.LESS_THAN: "lt", Token.NOT_IN: "notin",
              Token.NOT_EQUALS: "!="}  # fmt: skip
_BINARY = "in, notin, =, ==, !=, gt, lt"


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One requirement: ``operator`` is ``exists``, ``!``, ``in``, ``notin``, ``=``, ``==``,
    ``!=``, ``gt`` or ``lt``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


def _lex(text: str) -> list[tuple[Token, str]]:
    """Every token of the text, the end included (``Lexer.Lex`` until EndOfStringToken)."""
    found, position = [], 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position >= len(text):
            found.append((Token.END, ""))
            return found
        if text[position] in _SPECIAL:
            item, position = _special(text, position)
        else:
            end = position
            while end < len(text) and text[end] not in _SPECIAL | _WHITESPACE:
                end += 1
            word = text[position:end]
            item, position = (_LITERALS.get(word, Token.IDENTIFIER), word), end
        found.append(item)


def _special(text: str, position: int) -> tuple[tuple[Token, str], int]:
    """The longest operator of special symbols from ``position`` (``scanSpecialSymbol``)."""
    buffer, last, end = "", None, position
    while end < len(text) and text[end] in _SPECIAL:
        buffer += text[end]
        if buffer in _LITERALS:
            last, end = (_LITERALS[buffer], buffer), end + 1
        elif last is not None:
            break
        else:
            end += 1
    if last is None:
        return (Token.ERROR, f"error expected: keyword found '{buffer}'"), end
    return last, position + len(last[1])


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[Token, str]:
        token, literal = self.items[self.position]
        if values and token in (Token.IN, Token.NOT_IN):
            token = Token.IDENTIFIER
        return token, literal

    def consume(self, values: bool = True) -> tuple[Token, str]:
        found = self.lookahead(values)
        self.position += 1
        return found

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self.lookahead()
            if token == Token.END:
                return requirements
            if token not in (Token.IDENTIFIER, Token.DOES_NOT_EXIST):
                raise SelectorSyntaxError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self.requirement())
            except SelectorSyntaxError as error:
                raise SelectorSyntaxError(f"unable to parse requirement: {error}") from None
            token, literal = self.consume()
            if token == Token.END:
                return requirements
            if token != Token.COMMA:
                raise SelectorSyntaxError(f"found '{literal}', expected: ',' or 'end of string'")
            after, literal = self.lookahead()
            if after not in (Token.IDENTIFIER, Token.DOES_NOT_EXIST):
                raise SelectorSyntaxError(f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negated = self.lookahead()[0] == Token.DOES_NOT_EXIST
        if negated:
            self.consume()
        token, key = self.consume()
        if token != Token.IDENTIFIER:
            raise SelectorSyntaxError(f"found '{key}', expected: identifier")
        if problems := label_key_errors(key):  # the parser's own check, with no field path
            raise SelectorSyntaxError(
                f"<nil>: Invalid value: {go_quoted(key)}: {'; '.join(problems)}"
            )
        if negated:  # whatever follows: "!a=b" fails after the requirement, as in Go
            return _checked(Requirement(key, "!"))
        if self.lookahead()[0] in (Token.END, Token.COMMA):
            return _checked(Requirement(key, "exists"))
        token, literal = self.consume(values=False)
        if token not in _OPERATORS:
            raise SelectorSyntaxError(f"found '{literal}', expected: {_BINARY}")
        operator = _OPERATORS[token]
        values = self.values() if operator in ("in", "notin") else self.exact_value()
        return _checked(Requirement(key, operator, tuple(sorted(values))))

    def values(self) -> set[str]:
        token, literal = self.consume()
        if token != Token.OPEN_PAR:
            raise SelectorSyntaxError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead()
        if token == Token.CLOSED_PAR:
            self.consume()
            return {""}
        if token not in (Token.IDENTIFIER, Token.COMMA):
            raise SelectorSyntaxError(f"found '{literal}', expected: ',', ')' or identifier")
        found = self.identifiers()
        if self.consume()[0] != Token.CLOSED_PAR:
            raise SelectorSyntaxError(f"found '{literal}', expected: ')'")
        return found

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            token, literal = self.consume()
            if token == Token.IDENTIFIER:
                found.add(literal)
                after, next_literal = self.lookahead()
                if after == Token.CLOSED_PAR:
                    return found
                if after != Token.COMMA:
                    raise SelectorSyntaxError(f"found '{next_literal}', expected: ',' or ')'")
            elif token == Token.COMMA:
                if not found:
                    found.add("")
                after = self.lookahead()[0]
                if after == Token.CLOSED_PAR:
                    found.add("")
                    return found
                if after == Token.COMMA:
                    found.add("")
            else:
                raise SelectorSyntaxError(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in (Token.END, Token.COMMA):
            return {""}
        token, literal = self.consume()
        if token == Token.IDENTIFIER:
            return {literal}
        raise SelectorSyntaxError(f"found '{literal}', expected: identifier")


def _checked(requirement: Requirement) -> Requirement:
    """The requirement, if ``labels.NewRequirement`` takes it (its key checked before): label
    values, and integers for ``gt`` and ``lt``; else its errors, as Go aggregates them.

    Raises:
        SelectorSyntaxError: What is wrong with it.
    """
    key, values = requirement.key, requirement.values
    errors = []
    if requirement.operator in ("gt", "lt"):
        errors += [
            f"values[{index}]: Invalid value: {go_quoted(value)}: for 'Gt', 'Lt' operators, "
            "the value must be an integer"
            for index, value in enumerate(values)
            if not _is_int64(value)
        ]
    for index, value in enumerate(values):
        if problems := label_value_errors(value):
            where = f"values[{index}][{key}]"
            errors.append(f"{where}: Invalid value: {go_quoted(value)}: {'; '.join(problems)}")
    unique = list(dict.fromkeys(errors))
    if len(unique) > 1:
        raise SelectorSyntaxError(f"[{', '.join(unique)}]")
    if unique:
        raise SelectorSyntaxError(unique[0])
    return requirement


def _is_int64(text: str) -> bool:
    """Whether Go's ``strconv.ParseInt(text, 10, 64)`` takes it."""
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None and -(2**63) <= int(text) < 2**63


def parse_requirements(text: str) -> list[Requirement]:
    """The requirements of a label selector, sorted by key (as ``labels.Parse`` sorts them).

    Raises:
        SelectorSyntaxError: It does not parse (with apimachinery's message).
    """
    return sorted(_Parser(text).parse(), key=lambda requirement: requirement.key)
