"""`anyop run` on operator code that cannot be loaded: one clean line, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def anyop_run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "anyop", "run", *args, "-n", "demo", "--standalone"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


@pytest.mark.parametrize(
    ("code", "line", "error"),
    [
        ("import anyop\n\ndef broken(:\n    pass\n", 3, "SyntaxError: invalid syntax"),
        ("import anyop\nif True:\nprint('x')\n", 3, "IndentationError: expected an indented block"),
    ],
)
def test_a_syntax_error_in_the_operator_file_is_one_line(
    tmp_path: Path, code: str, line: int, error: str
) -> None:
    (tmp_path / "op.py").write_text(code)
    result = anyop_run("op.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(f"anyop: {tmp_path / 'op.py'}:{line}: {error}")


def test_a_syntax_error_in_a_module_it_imports_names_that_module(tmp_path: Path) -> None:
    (tmp_path / "op.py").write_text("import helpers\n")
    (tmp_path / "helpers.py").write_text("x = = 1\n")
    result = anyop_run("op.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == f"anyop: {tmp_path / 'helpers.py'}:1: SyntaxError: invalid syntax\n"


def test_a_syntax_error_in_a_module_run_with_m_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken_op.py").write_text("\n\nreturn 1 +\n")
    result = anyop_run("-m", "broken_op", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert f"{tmp_path / 'broken_op.py'}:3: SyntaxError: " in result.stderr
