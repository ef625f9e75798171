"""The code blocks of docs/**/*.md, and the checks that tests/unit/test_docs_snippets.py runs.

A ```python block is compiled and executed in a fresh namespace (``__name__`` is not
``"__main__"``, so ``anyop.run()`` behind a main guard does not start), against a fresh default
registry. A block that is a fragment (top-level ``await``, names defined elsewhere) is preceded
by the line ``<!-- snippet: compile -->`` and only compiled. A block that quotes a test file of
the suite is preceded by ``<!-- snippet: quotes tests/...py -->``: it must equal that file, and
runs as that file (its ``__file__``). A ```bash block's ``anyop`` command lines are checked
against the typer app: every subcommand and option must exist.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
COMPILE_ONLY = "<!-- snippet: compile -->"
QUOTES = re.compile(r"^<!-- snippet: quotes (\S+) -->$")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
SHELL_OPERATORS = {"|", "||", "&", "&&", ";", "<", ">", ">>", "(", ")", "<<", "2>", "2>&1"}
COMMAND_STARTS = SHELL_OPERATORS | {"eval", "exec"}


@dataclass(frozen=True)
class Snippet:
    """One fenced code block: where it is, its language, its code, and whether to run it."""

    path: Path
    line: int
    language: str
    code: str
    compile_only: bool
    quotes: Path | None = None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets(language: str, paths: list[Path] | None = None) -> list[Snippet]:
    """Every fenced block of that language in docs/**/*.md (or ``paths``), in order."""
    found = []
    for path in sorted(DOCS.rglob("*.md")) if paths is None else paths:
        text = path.read_text()
        for match in FENCE.finditer(text):
            if match[1] == language:
                before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
                line = text.count("\n", 0, match.start()) + 1
                compile_only = before.strip() == COMPILE_ONLY
                quoted = QUOTES.match(before.strip())
                quotes = ROOT / quoted[1] if quoted else None
                found.append(Snippet(path, line, language, match[2], compile_only, quotes))
    return found


def compiled(snippet: Snippet) -> Any:
    """The block's code object; top-level ``await`` is allowed (it is never executed)."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if snippet.compile_only else 0
    return compile(snippet.code, snippet.name, "exec", flags=flags, dont_inherit=True)


def file_of(snippet: Snippet) -> Path:
    """The ``__file__`` the block runs as: the test file it quotes, or the page itself."""
    return snippet.quotes if snippet.quotes is not None else snippet.path


def command_lines(script: str) -> Iterator[list[str]]:
    """The ``anyop`` invocations of a shell script, as argument lists without the ``anyop``.

    Continuation lines are joined, comments dropped, and ``$( ... )`` and quotes around a
    command (``eval "$(anyop controlplane up)"``) looked into; a command ends at a shell
    operator (``|``, ``&&``, ``;``, ``>``...).
    """
    joined = re.sub(r"\\\n", " ", script)
    lines = []
    for line in joined.splitlines():
        lines += re.findall(r"\$\(([^()]*)\)", line)  # the commands inside $( ... )
        lines.append(re.sub(r"\$\([^()]*\)", " ", line))
    for line in lines:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote: the line is prose, not a command
            continue
        for start, token in enumerate(tokens):
            is_anyop = token == "anyop" or token.endswith("/anyop")
            if is_anyop and (start == 0 or tokens[start - 1] in COMMAND_STARTS):
                rest = tokens[start + 1 :]
                end = next((i for i, t in enumerate(rest) if t in SHELL_OPERATORS), None)
                yield rest[:end]


def cli_problems(args: list[str], command: Any) -> list[str]:
    """What in ``anyop ARGS`` the typer app does not know: subcommands, options, arguments.

    ``command`` is the click command of the app (``typer.main.get_command(anyop.cli.app)``).
    """
    path = ["anyop"]
    rest = list(args)
    while hasattr(command, "commands"):  # a group: options of its own, then a subcommand
        problems, rest = _options(rest, command, path, stop_at_positional=True)
        if problems or not rest:
            return problems
        name = rest.pop(0)
        if name not in command.commands:
            return [f"{' '.join(path)} has no command {name!r}"]
        path.append(name)
        command = command.commands[name]
    problems, rest = _options(rest, command, path, stop_at_positional=False)
    return problems


def _options(args: list[str], command: Any, path: list[str], *, stop_at_positional: bool) -> Any:
    """Check the options at the head of ``args``; returns the problems and what is left."""
    params = [p for p in command.params if getattr(p, "param_type_name", "") == "option"]
    takes_arguments = any(getattr(p, "param_type_name", "") == "argument" for p in command.params)
    known = {opt: p for p in params for opt in [*p.opts, *p.secondary_opts]}
    problems: list[str] = []
    rest = list(args)
    while rest:
        arg = rest[0]
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            if stop_at_positional:
                return problems, rest
            if not takes_arguments:
                problems.append(f"{' '.join(path)} takes no argument {arg!r}")
            rest.pop(0)
            continue
        rest.pop(0)
        name, has_value = (arg.split("=", 1)[0], True) if "=" in arg else (arg, False)
        if name in ("--help", "-h"):
            continue
        param = known.get(name)
        if param is None:
            problems.append(f"{' '.join(path)} has no option {name!r}")
        elif not (param.is_flag or param.count or has_value) and rest:
            rest.pop(0)  # the option's value
    return problems, rest
