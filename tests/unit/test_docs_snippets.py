"""Every code block in docs/ runs or is checked: Python is executed, ``anyop`` commands exist.

Python blocks are executed in a fresh namespace against a fresh default registry (a decorator
with a wrong option fails there, as it would in an operator); blocks marked
``<!-- snippet: compile -->`` are only compiled. Shell blocks' ``anyop`` command lines are
checked against the typer app (``anyop.cli``): a renamed option or command fails here. The API
reference names every public name, and every public class and function has a docstring.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from tests.unit.docs_snippets import (
    DOCS,
    Snippet,
    cli_problems,
    command_lines,
    compiled,
    file_of,
    snippets,
)

import anyop
import anyop.kube
import anyop.testing
from anyop.cli import app

PYTHON = snippets("python")
BASH = snippets("bash")
FRAGMENTS_AT_MOST = 12
KUBE_MODULES = sorted(info.name for info in pkgutil.iter_modules(anyop.kube.__path__))


@pytest.fixture
def fresh_registry() -> Iterator[anyop.OperatorRegistry]:
    """A new default registry for one snippet, and the old one back after it."""
    before = anyop.get_default_registry()
    registry = anyop.OperatorRegistry()
    anyop.set_default_registry(registry)
    try:
        yield registry
    finally:
        anyop.set_default_registry(before)


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.name for s in PYTHON])
def test_python_snippet_runs(snippet: Snippet, fresh_registry: anyop.OperatorRegistry) -> None:
    code = compiled(snippet)
    if snippet.compile_only:
        return
    if snippet.quotes is not None:
        assert snippet.quotes.read_text() == snippet.code, f"it no longer quotes {snippet.quotes}"
    namespace: dict[str, Any] = {"__name__": "docs_snippet", "__file__": str(file_of(snippet))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a third-party import's, not ours
        exec(code, namespace)


def test_fragments_that_are_only_compiled_are_few() -> None:
    fragments = [s.name for s in PYTHON if s.compile_only]
    assert len(fragments) <= FRAGMENTS_AT_MOST, fragments


def test_the_docs_have_code_to_test() -> None:
    assert len(PYTHON) >= 40
    assert sum(1 for s in BASH for _ in command_lines(s.code)) >= 20


@pytest.mark.parametrize("snippet", BASH, ids=[s.name for s in BASH])
def test_anyop_commands_in_shell_snippets_exist(snippet: Snippet) -> None:
    command = typer.main.get_command(app)
    problems = [
        f"anyop {' '.join(args)}: {problem}"
        for args in command_lines(snippet.code)
        for problem in cli_problems(args, command)
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("anyop run app.py --namespaces demo", "has no option '--namespaces'"),
        ("anyop runn app.py", "has no command 'runn'"),
        ("anyop controlplane up --no-kontrollers", "has no option '--no-kontrollers'"),
        ('eval "$(anyop controlplane up --bare-metal)"', "has no option '--bare-metal'"),
        ("anyop version extra", "takes no argument 'extra'"),
    ],
)
def test_the_command_checker_finds_a_wrong_command(line: str, problem: str) -> None:
    command = typer.main.get_command(app)
    found = [p for args in command_lines(line) for p in cli_problems(args, command)]
    assert len(found) == 1
    assert problem in found[0]


@pytest.mark.parametrize(
    "line",
    [
        "anyop run app.py -n demo --backend trio --log-prefix  # a comment --nonsense",
        "anyop run app.py --no-log-prefix --liveness=http://0.0.0.0:8080/healthz | tee log",
        'anyop freeze -P default -n my-ns -t 600 -m "migrating"',
        'eval "$(.venv/bin/anyop controlplane up --no-controllers)"',
        "anyop --version",
        "kubectl get anyoppeering default -o yaml  # not an anyop command",
    ],
)
def test_the_command_checker_accepts_real_commands(line: str) -> None:
    command = typer.main.get_command(app)
    commands = list(command_lines(line))
    assert len(commands) == (0 if line.startswith("kubectl") else 1)
    assert [p for args in commands for p in cli_problems(args, command)] == []


def reference_targets() -> set[str]:
    """The objects that the API reference renders (``::: dotted.name`` lines)."""
    text = "\n".join(p.read_text() for p in (DOCS / "reference").rglob("*.md"))
    return set(re.findall(r"^::: ([\w.]+)\s*$", text, flags=re.MULTILINE))


@pytest.mark.parametrize(
    ("module", "prefix"),
    [(anyop, "anyop."), (anyop.on, "anyop.on."), (anyop.testing, "anyop.testing.")],
)
def test_the_api_reference_renders_every_public_name(module: Any, prefix: str) -> None:
    targets = reference_targets()
    names = [name for name in module.__all__ if name != "__version__"]
    missing = [name for name in names if f"{prefix}{name}" not in targets]
    assert missing == []


def test_the_api_reference_renders_every_module_of_anyop_kube() -> None:
    targets = reference_targets()
    missing = [name for name in KUBE_MODULES if f"anyop.kube.{name}" not in targets]
    assert missing == []


def public_objects() -> Iterator[tuple[str, Any]]:
    """Every class and function that anyop, anyop.on, anyop.testing and anyop.kube export."""
    modules = [anyop, anyop.on, anyop.testing]
    modules += [importlib.import_module(f"anyop.kube.{name}") for name in KUBE_MODULES]
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isroutine(value):
                yield f"{module.__name__}.{name}", value


def own_docstring(value: Any) -> str:
    """The object's own docstring: not inherited, and not the one dataclasses make up."""
    text = (value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__) or ""
    return "" if text.startswith(f"{value.__name__}(") else text.strip()


def test_every_public_class_and_function_has_a_docstring() -> None:
    undocumented = [name for name, value in public_objects() if not own_docstring(value)]
    assert undocumented == []


def test_the_docstring_check_sees_a_missing_docstring() -> None:
    class Bare:
        pass

    def bare() -> None:
        pass

    assert own_docstring(Bare) == ""
    assert own_docstring(bare) == ""
    assert own_docstring(anyop.serve) != ""
