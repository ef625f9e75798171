"""The ``anyop`` command line's own answers: what needs no cluster."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import anyop
from anyop.cli import app


def test_version_prints_the_installed_version_and_exits_0() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"anyop {anyop.__version__}\n"
    assert anyop.__version__ == importlib.metadata.version("anyop")


def test_version_is_answered_by_python_m_anyop_before_any_command_is_parsed() -> None:
    cmd = [sys.executable, "-m", "anyop", "--version", "run", "--no-such-option"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (0, f"anyop {anyop.__version__}\n")


def test_the_anyop_console_script_prints_the_version() -> None:
    script = shutil.which("anyop", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("anyop is not installed with its console script here")
    result = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, f"anyop {anyop.__version__}\n")


def test_run_names_a_module_that_cannot_be_imported() -> None:
    cmd = [sys.executable, "-m", "anyop", "run", "-m", "anyop_no_such_module", "-n", "x"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "Cannot import the operator module 'anyop_no_such_module'" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shards", "3"], "only 'auto' is supported"),
        (["--shards", "auto", "--leader-election"], "Either --shards or --leader-election"),
    ],
)
def test_run_refuses_shards_it_cannot_honour(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["run", "nowhere.py", *args, "-A"])
    assert result.exit_code == 2
    assert message in result.output


def test_serve_refuses_sharding_with_leader_election_or_with_bad_timings() -> None:
    """Refused before any Lease is taken (and before any request: there is no cluster)."""
    import anyop
    from anyop.engine.operator.serve import _check_sharding
    from anyop.engine.resource.serve_resource import ResourceScope
    from anyop.errors import ConfigError
    from anyop.kube.resources import Resource

    registry = anyop.OperatorRegistry()
    settings = anyop.OperatorSettings()
    settings.sharding.enabled = True
    settings.leadership.enabled = True
    scope = ResourceScope(None, Resource("", "v1", "-"), None, registry, settings)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="exclude each other"):
        _check_sharding(scope)
    settings.leadership.enabled = False
    settings.sharding.renew_deadline = 20
    with pytest.raises(ConfigError, match="renew_deadline"):
        _check_sharding(scope)
