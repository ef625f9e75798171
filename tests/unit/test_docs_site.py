"""The documentation site as built: no reST role shows literally, names link to their pages,
and options typed as ``**options: Unpack[...]`` are listed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const|type):(?:<code>|`)")

pytestmark = pytest.mark.slow
pytest.importorskip("mkdocstrings_handlers.python", reason="the docs tools are the [docs] extra")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` as scripts/test builds it."""
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def text_of(page: Path) -> str:
    return re.sub(r"<[^>]+>", "", page.read_text())


def test_no_page_shows_a_raw_rest_role(site: Path) -> None:
    raw = {
        str(page.relative_to(site)): RAW_ROLE.findall(page.read_text())
        for page in site.rglob("*.html")
    }
    assert {page: found for page, found in raw.items() if found} == {}


def test_a_role_in_a_docstring_is_a_link_to_the_object(site: Path) -> None:
    on = (site / "reference" / "on" / "index.html").read_text()
    assert re.search(
        r'<a [^>]*href="\.\./handlers/#anyop\.Requeue"[^>]*><code>Requeue</code></a>', on
    )
    kube = (site / "reference" / "kube" / "index.html").read_text()
    assert re.search(r'<a [^>]*href="#anyop\.kube\.auth\.Vault"[^>]*><code>Vault</code></a>', kube)


def test_unpacked_options_are_listed_with_their_types(site: Path) -> None:
    page = text_of(site / "reference" / "on" / "index.html")
    reconcile = page[page.index("reconcile(") :]
    options = reconcile[reconcile.index("**options takes the fields of ReconcileOptions") :][:3000]
    for name in ("owns", "labels", "resync", "finalizer", "registry"):
        assert re.search(rf"\b{name}\b", options), name
