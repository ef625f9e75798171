"""Regenerate FakeCluster's OpenAPI documents from Kubernetes' own OpenAPI v3 documents.

Usage::

    python scripts/fake_openapi.py [SPEC_DIR]

``SPEC_DIR`` is ``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module the local control
plane builds (found in the Go module cache under ``~/.cache/anyop/go/mod`` when not given).
For the group versions the fake serves (and their groups, and ``/api`` and ``/apis``), it keeps
each document whole (paths and schemas, with descriptions) but for what kube-apiserver does not
serve by default (the CBOR media types). Schemas shared by several documents are stored once
(a document's own variant, such as ``DeleteOptions``' list of kinds, beside it). The result is
written xz-compressed to ``src/anyop/testing/fake/data/``: the fake serves these documents at
``/openapi/v3`` and derives its catalog of built-in kinds from them.
"""

from __future__ import annotations

import json
import lzma
import re
import sys
from pathlib import Path
from typing import Any

GROUP_VERSIONS = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/coordination.k8s.io/v1",
    "apis/events.k8s.io/v1",
    "apis/rbac.authorization.k8s.io/v1",
    "apis/apiextensions.k8s.io/v1",
    "apis/admissionregistration.k8s.io/v1",
    "apis/authentication.k8s.io/v1",
    "apis/authorization.k8s.io/v1",
    "apis/policy/v1",
    "apis/networking.k8s.io/v1",
    "apis/discovery.k8s.io/v1",
    "apis/scheduling.k8s.io/v1",
    "apis/autoscaling/v1",
)
OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/openapi.json.xz"
_CBOR = re.compile(r"^application/(cbor|cbor-seq|apply-patch\+cbor)$")
_VERSION = re.compile(r"kubernetes@v(\d+)\.(\d+)")


def _default_dir() -> Path:
    cache = Path.home() / ".cache/anyop/go/mod/k8s.io"
    found = sorted(cache.glob("kubernetes@v*/api/openapi-spec/v3"))
    if not found:
        raise SystemExit(f"no k8s.io/kubernetes module under {cache}: build the control plane")
    return found[-1]


def _without_cbor(node: Any) -> Any:
    """The paths as kube-apiserver serves them without its CBOR feature gates."""
    if isinstance(node, dict):
        return {key: _without_cbor(value) for key, value in node.items() if not _CBOR.match(key)}
    if isinstance(node, list):
        return [_without_cbor(item) for item in node]
    return node


def _documents() -> list[str]:
    groups = {prefix.rsplit("/", 1)[0] for prefix in GROUP_VERSIONS if prefix.startswith("apis/")}
    return ["api", "apis", *GROUP_VERSIONS, *sorted(groups)]


def main(spec_dir: Path) -> None:
    source = spec_dir.parents[2].name
    version = _VERSION.search(source)
    data: dict[str, Any] = {
        "source": source,
        "info": {"title": "Kubernetes", "version": f"{version[1]}.{version[2]}" if version else ""},
        "schemas": {},
        "documents": {},
    }
    for prefix in _documents():
        document = json.loads((spec_dir / f"{prefix.replace('/', '__')}_openapi.json").read_text())
        components = document["components"]
        data.setdefault("securitySchemes", components.get("securitySchemes"))
        own: dict[str, Any] = {}
        for name, schema in components["schemas"].items():
            if data["schemas"].setdefault(name, schema) != schema:
                own[name] = schema
        data["documents"][prefix] = {
            "paths": _without_cbor(document["paths"]),
            "schemas": sorted(components["schemas"]),
            "own": own,
        }
    encoded = json.dumps(data, separators=(",", ":")).encode()
    OUT.write_bytes(lzma.compress(encoded, preset=9 | lzma.PRESET_EXTREME))
    print(
        f"{OUT}: {len(data['documents'])} documents, {len(data['schemas'])} schemas, "
        f"{len(encoded)} bytes of JSON, {OUT.stat().st_size} compressed"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else _default_dir())
