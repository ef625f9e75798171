"""Regenerate FakeCluster's protobuf descriptors of built-in kinds from Kubernetes' ``.proto``.

Usage::

    pip install grpcio-tools   # only to regenerate; FakeCluster needs only ``protobuf``
    python scripts/fake_protobuf.py [MODULE_CACHE]

``MODULE_CACHE`` is the Go module cache's ``k8s.io`` folder (``~/.cache/anyop/go/mod/k8s.io``
when not given), where building the local control plane left the ``k8s.io/api``,
``k8s.io/apimachinery``, ``k8s.io/apiextensions-apiserver`` and ``k8s.io/kube-aggregator``
modules. protoc compiles the
``generated.proto`` of every group version the fake serves (those of ``data/openapi.json.xz``)
with their imports; the descriptor set is written as JSON, gzipped, to
``src/anyop/testing/fake/data/protobuf.json.gz``, with what the ``.proto`` files do not say and
the Go types do (their ``json`` and ``protobuf`` struct tags): the JSON names that differ from the
protobuf ones (``$ref``, ``x-kubernetes-*``, ``""`` for embedded structs that JSON inlines), and
the fields whose zero value Go's JSON keeps (pointers, fields without ``omitempty``). kubectl
and other Go clients send built-in kinds in this encoding;
:mod:`anyop.testing.fake.protobuf_bodies` reads them with it.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/anyop/testing/fake/data/protobuf.json.gz"
_VERSION = re.compile(r"@v(\d+)\.(\d+)\.(\d+)$")
_STRUCT = re.compile(r"^type (\w+) struct \{")
_FIELD = re.compile(
    r"^\s+(?:\w+\s+)?(?P<type>[\w.*\[\]]+)\s+`[^`]*json:\"(?P<json>[^\"]*)\"[^`]*"
    r"protobuf:\"[^\"]*name=(?P<proto>\w+)[^`]*`"
)


def _newest(cache: Path, module: str) -> Path:
    found = [path for path in cache.glob(f"{module}@v*") if _VERSION.search(path.name)]
    if not found:
        raise SystemExit(f"no {module} module under {cache}: build the local control plane first")
    return max(found, key=lambda path: tuple(int(n) for n in _VERSION.search(path.name).groups()))  # type: ignore[union-attr]


def _proto_of(group: str, version: str) -> str:
    """The import path of a group version's ``generated.proto``."""
    if group == "apiextensions.k8s.io":
        return f"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/{version}/generated.proto"
    if group == "apiregistration.k8s.io":
        return f"k8s.io/kube-aggregator/pkg/apis/apiregistration/{version}/generated.proto"
    folder = "core" if not group else group.split(".")[0]
    return f"k8s.io/api/{folder}/{version}/generated.proto"


def _group_versions() -> list[tuple[str, str]]:
    """The group versions of the fake's catalog (``scripts/fake_openapi.py`` writes it)."""
    catalog = json.loads(lzma.decompress((OUT.parent / "openapi.json.xz").read_bytes()))
    found = []
    for prefix in catalog["documents"]:
        parts = prefix.split("/")  # "api/v1", "apis/<group>/<version>"; not "api", "apis/<group>"
        if parts[0] == "api" and len(parts) == 2:
            found.append(("", parts[1]))
        elif parts[0] == "apis" and len(parts) == 3:
            found.append((parts[1], parts[2]))
    return found


def _go_fields(folder: Path) -> dict[str, dict[str, tuple[str, bool]]]:
    """Per Go struct of a package: protobuf field name to its JSON name (``""`` for an embedded
    struct whose fields JSON inlines) and whether Go's JSON keeps its zero value (a pointer, or no
    ``omitempty``)."""
    structs: dict[str, dict[str, tuple[str, bool]]] = {}
    for source in sorted(folder.glob("*.go")):
        if source.name.endswith("_test.go"):
            continue
        fields: dict[str, tuple[str, bool]] | None = None
        for line in source.read_text().splitlines():
            if match := _STRUCT.match(line):
                fields = structs.setdefault(match[1], {})
            elif line.startswith("}"):
                fields = None
            elif fields is not None and (match := _FIELD.match(line)):
                name, _, options = match["json"].partition(",")
                keeps_zero = match["type"].startswith("*") or "omitempty" not in options
                fields[match["proto"]] = (name, keeps_zero)  # "" for an inlined struct
    return structs


def _json_rules(
    descriptors: list[dict[str, object]], include: Path
) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """The JSON names that differ from the protobuf ones, and the fields that keep their zero
    values, per message (by full name)."""
    renamed: dict[str, dict[str, str]] = {}
    keeping: dict[str, list[str]] = {}
    for file in descriptors:
        go_package = str(file.get("options", {}).get("goPackage", ""))  # type: ignore[attr-defined]
        if not go_package.startswith("k8s.io/"):
            continue
        module, _, rest = go_package.removeprefix("k8s.io/").partition("/")
        structs = _go_fields(include / module / rest)
        for message in file.get("messageType", []):  # type: ignore[attr-defined]
            full = f"{file['package']}.{message['name']}"
            fields = structs.get(message["name"], {})
            names = {proto: name for proto, (name, _) in fields.items() if name not in (proto, "-")}
            kept = sorted(proto for proto, (_, keeps) in fields.items() if keeps)
            if names:
                renamed[full] = names
            if kept:
                keeping[full] = kept
    return renamed, keeping


def main(argv: list[str]) -> None:
    from google.protobuf import descriptor_pb2, json_format
    from grpc_tools import protoc

    cache = Path(argv[0]) if argv else Path.home() / ".cache/anyop/go/mod/k8s.io"
    modules = ("api", "apimachinery", "apiextensions-apiserver", "kube-aggregator")
    with tempfile.TemporaryDirectory() as scratch:
        include = Path(scratch) / "k8s.io"
        include.mkdir()
        for module in modules:
            (include / module).symlink_to(_newest(cache, module))
        protos = sorted({_proto_of(group, version) for group, version in _group_versions()})
        out = Path(scratch) / "set.pb"
        args = ["protoc", f"-I{scratch}", "--include_imports", f"--descriptor_set_out={out}"]
        if protoc.main([*args, *protos]) != 0:
            raise SystemExit("protoc failed")
        descriptors = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
        files = json_format.MessageToDict(descriptors)["file"]
        renamed, keeping = _json_rules(files, include)
    document = {
        "source": ", ".join(_newest(cache, module).name for module in modules),
        "files": files,
        "jsonNames": renamed,
        "keepsZero": keeping,
    }
    text = json.dumps(document, separators=(",", ":"), sort_keys=True)
    OUT.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"{OUT.relative_to(ROOT)}: {len(protos)} group versions, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
