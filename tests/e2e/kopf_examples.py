"""Kopf's own examples, as Kopf publishes them, run under anyop with ``import kopf`` meaning anyop.

The examples come from Kopf's source distribution (the version that the benchmarks compare with),
fetched once with pip and cached; none of their code is in this repository. A one-line ``kopf``
module on ``PYTHONPATH`` makes ``import kopf`` import anyop, as ``import anyop as kopf`` would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from bench.kopf_env import KOPF_VERSION

CACHE = Path.home() / ".cache" / "anyop" / "kopf-examples" / KOPF_VERSION
SHIM = "import sys\n\nimport anyop\n\nsys.modules[__name__] = anyop\n"


def kopf_examples() -> Path:
    """The folder of Kopf's examples (fetched on first use), or a skip where it cannot be had."""
    examples = CACHE / "examples"
    if examples.is_dir():
        return examples
    with tempfile.TemporaryDirectory() as tmp:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"kopf=={KOPF_VERSION}", "--no-deps",
             "--no-binary", ":all:", "--dest", tmp, "--quiet"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        archives = list(Path(tmp).glob("kopf-*.tar.gz"))
        if fetched.returncode or not archives:
            pytest.skip(f"Kopf's source distribution cannot be fetched: {fetched.stderr[-500:]}")
        with tarfile.open(archives[0]) as archive:
            prefix = f"kopf-{KOPF_VERSION}/examples/"
            members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
            CACHE.mkdir(parents=True, exist_ok=True)
            unpacked = Path(tempfile.mkdtemp(prefix="unpacked-", dir=CACHE))
            archive.extractall(unpacked, members=members, filter="data")
    try:  # another test process may have fetched them meanwhile: the first rename wins
        (unpacked / f"kopf-{KOPF_VERSION}" / "examples").rename(examples)
    except OSError:
        if not examples.is_dir():
            raise
    shutil.rmtree(unpacked, ignore_errors=True)
    return examples


def kopf_shim(folder: Path) -> Path:
    """A folder with ``kopf.py`` that makes ``import kopf`` import anyop."""
    (folder / "kopf.py").write_text(SHIM)
    return folder


def kopf_pythonpath(folder: Path) -> str:
    """``PYTHONPATH`` for a child: the shim's folder first, then the test's own path (so the
    child imports the anyop under test, not another one installed in the environment)."""
    return os.pathsep.join(filter(None, [str(kopf_shim(folder)), os.environ.get("PYTHONPATH")]))
