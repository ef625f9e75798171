"""A virtualenv with Kopf, for side-by-side benchmarks (never imported by anyop itself).

It lives in the cache (``~/.cache/anyop/bench/kopf-<version>``, or under ``ANYOP_CACHE_DIR``) and
is created on first use from the package index the machine's pip is configured for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KOPF_VERSION = "1.45.2"


def kopf_command() -> list[str]:
    """``kopf`` from its own venv, installed there first if missing."""
    cache = Path(os.environ.get("ANYOP_CACHE_DIR", Path.home() / ".cache" / "anyop"))
    venv = cache / "bench" / f"kopf-{KOPF_VERSION}"
    kopf = venv / "bin" / "kopf"
    if not kopf.exists():
        print(f"[bench] installing kopf {KOPF_VERSION} into {venv}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, f"kopf=={KOPF_VERSION}"], check=True)
    return [str(kopf)]
