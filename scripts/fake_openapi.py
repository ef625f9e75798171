"""Regenerate FakeCluster's catalog of built-in kinds from Kubernetes' OpenAPI v3 documents.

Usage::

    python scripts/fake_openapi.py [SPEC_DIR]

``SPEC_DIR`` is ``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module the local control
plane builds (found in the Go module cache under ``~/.cache/anyop/go/mod`` when not given). The
catalog keeps, for the group versions operators meet, each resource's kind, scope, verbs and
subresources (from the paths) and the schemas of the kinds (from the components, without
descriptions), and is written gzipped to ``src/anyop/testing/fake/data/``.
"""

from __future__ import annotations

import gzip
import json
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
OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/openapi.json.gz"
_DROPPED = ("description", "example")
_MEMBER = re.compile(
    r"^(?P<base>.*?)(?:/namespaces/\{namespace\})?/(?P<plural>[^/{]+)"
    r"(?:/\{name\}(?:/(?P<sub>[^/{]+))?)?$"
)


def _default_dir() -> Path:
    cache = Path.home() / ".cache/anyop/go/mod/k8s.io"
    found = sorted(cache.glob("kubernetes@v*/api/openapi-spec/v3"))
    if not found:
        raise SystemExit(f"no k8s.io/kubernetes module under {cache}: build the control plane")
    return found[-1]


def _stripped(node: Any) -> Any:
    if isinstance(node, dict):
        refs = node.get("allOf")
        if isinstance(refs, list) and len(refs) == 1 and isinstance(refs[0].get("$ref"), str):
            node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": refs[0]["$ref"]}
        result = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "$ref" and isinstance(value, str):
                value = value.rsplit("/", 1)[-1]
            result[key] = _stripped(value)
        return result
    if isinstance(node, list):
        return [_stripped(item) for item in node]
    return node


def _resources(document: dict[str, Any], prefix: str) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    for path, item in document["paths"].items():
        if "/watch/" in path or not path.startswith(f"/{prefix}/"):
            continue
        match = _MEMBER.match(path)
        if match is None or match["base"] != f"/{prefix}":
            continue
        for operation in item.values():
            if not isinstance(operation, dict) or "x-kubernetes-action" not in operation:
                continue
            gvk = operation.get("x-kubernetes-group-version-kind") or {}
            entry = resources.setdefault(
                match["plural"], {"kind": "", "namespaced": False, "verbs": [], "subresources": {}}
            )
            namespaced = "{namespace}" in path
            entry["namespaced"] |= namespaced
            action = operation["x-kubernetes-action"]
            if match["sub"]:
                sub = entry["subresources"].setdefault(
                    match["sub"], {"kind": gvk.get("kind", ""), "verbs": []}
                )
                sub["verbs"] = sorted({*sub["verbs"], action})
                continue
            entry["kind"] = entry["kind"] or gvk.get("kind", "")
            verb = {"put": "update", "post": "create"}.get(action, action)
            watch = ("watch",) if verb == "list" else ()
            entry["verbs"] = sorted({*entry["verbs"], verb, *watch})
    return resources


def main(spec_dir: Path) -> None:
    catalog: dict[str, Any] = {
        "source": str(spec_dir.parents[2].name),
        "groupVersions": {},
        "schemas": {},
    }
    for prefix in GROUP_VERSIONS:
        document = json.loads((spec_dir / f"{prefix.replace('/', '__')}_openapi.json").read_text())
        catalog["groupVersions"][prefix.removeprefix("api/").removeprefix("apis/")] = _resources(
            document, prefix
        )
        for name, schema in document["components"]["schemas"].items():
            catalog["schemas"].setdefault(name, _stripped(schema))
    data = json.dumps(catalog, separators=(",", ":"), sort_keys=True).encode()
    OUT.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{OUT}: {len(catalog['schemas'])} schemas, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else _default_dir())
