"""Regenerate FakeCluster's OpenAPI documents from Kubernetes' own OpenAPI v3 documents.

Usage::

    python scripts/fake_openapi.py [SPEC_DIR]

``SPEC_DIR`` is ``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module the local control
plane builds (found in the Go module cache under ``~/.cache/anyop/go/mod`` when not given).
For the group versions the fake serves (and their groups, and ``/api`` and ``/apis``), it keeps
each document whole (paths and schemas, with descriptions) but for what kube-apiserver does not
serve by default (the CBOR media types), and with the enums kube-apiserver adds to the fields of
enum types (and their descriptions' "Possible enum values"), which the v3 files lack: those come
from ``pkg/generated/openapi/zz_generated.openapi.go`` of the same module, the definitions the
API server is built with. Schemas shared by several documents are stored once
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
    "apis/certificates.k8s.io/v1",
    "apis/policy/v1",
    "apis/networking.k8s.io/v1",
    "apis/discovery.k8s.io/v1",
    "apis/scheduling.k8s.io/v1",
    "apis/autoscaling/v1",
    "apis/autoscaling/v2",
    "apis/storage.k8s.io/v1",
    "apis/node.k8s.io/v1",
    "apis/apiregistration.k8s.io/v1",
    "apis/flowcontrol.apiserver.k8s.io/v1",
    "apis/resource.k8s.io/v1",
)
OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/openapi.json.xz"
_CBOR = re.compile(r"^application/(cbor|cbor-seq|apply-patch\+cbor)$")
_VERSION = re.compile(r"kubernetes@v(\d+)\.(\d+)")
_FUNCTION = re.compile(r"^func schema_(\w+)\(ref common\.ReferenceCallback\)")
_PROPERTY = re.compile(r'^\t{5}"([^"]+)": \{$')
_ENUM = re.compile(r"^(\t+)Enum:\s+\[\]interface\{\}\{(.*)\},$")
_DESCRIPTION = re.compile(r'^\t{7}Description: "(.*)",$')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_NESTED = re.compile(r"^\t{7}(Items|AdditionalProperties): &spec\.")


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


def _mangled(name: str) -> str:
    """A schema's name as the generated Go code names its function (``io.k8s.api.core.v1.Pod``
    is ``k8sio_api_core_v1_Pod``)."""
    parts = name.split(".")
    if parts[:2] == ["io", "k8s"]:
        parts = ["k8sio", *parts[2:]]
    return "_".join(re.sub(r"[^A-Za-z0-9]", "_", part) for part in parts)


def _enums(generated: Path, names: set[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """The enums of the generated definitions: (schema, property) to the property's ``enum``
    (or its ``items``' or ``additionalProperties``') and its ``description``."""
    by_function = {_mangled(name): name for name in names}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    schema = prop = description = nested = ""
    for line in generated.read_text().splitlines():
        if match := _FUNCTION.match(line):
            schema, prop = by_function.get(match[1], ""), ""
        elif match := _PROPERTY.match(line):
            prop, description, nested = match[1], "", ""
        elif match := _DESCRIPTION.match(line):
            description = json.loads(f'"{match[1]}"')
        elif match := _NESTED.match(line):
            nested = match[1][0].lower() + match[1][1:]
        elif (match := _ENUM.match(line)) and schema and prop:
            values = [json.loads(f'"{value}"') for value in _STRING.findall(match[2])]
            entry = found.setdefault((schema, prop), {"description": description})
            entry[nested if len(match[1]) > 7 else "enum"] = values
    return found


def _with_enums(schema: dict[str, Any], name: str, enums: dict[tuple[str, str], Any]) -> Any:
    properties = schema.get("properties") or {}
    for prop, sub in properties.items():
        entry = enums.get((name, prop))
        if entry is None:
            continue
        if entry["description"]:
            sub["description"] = entry["description"]
        if "enum" in entry:
            sub["enum"] = entry["enum"]
        for nested in ("items", "additionalProperties"):
            if nested in entry and isinstance(sub.get(nested), dict):
                sub[nested]["enum"] = entry[nested]
    return schema


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
    documents = {
        prefix: json.loads((spec_dir / f"{prefix.replace('/', '__')}_openapi.json").read_text())
        for prefix in _documents()
    }
    names = {name for document in documents.values() for name in document["components"]["schemas"]}
    generated = spec_dir.parents[2] / "pkg/generated/openapi/zz_generated.openapi.go"
    enums = _enums(generated, names)
    for prefix, document in documents.items():
        components = document["components"]
        data.setdefault("securitySchemes", components.get("securitySchemes"))
        own: dict[str, Any] = {}
        for name, schema in components["schemas"].items():
            schema = _with_enums(schema, name, enums)
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
        f"{len(encoded)} bytes of JSON, {OUT.stat().st_size} compressed; {len(enums)} enums"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else _default_dir())
