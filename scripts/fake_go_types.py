"""Regenerate FakeCluster's table of Go type names from the Go definitions of the built-in kinds.

Usage::

    python scripts/fake_go_types.py [MODULE_DIR]

kube-apiserver reads a built-in object into its Go struct, and the OpenAPI documents do not say
everything that struct does. This reads the Go structs of the ``k8s.io/api``,
``k8s.io/apimachinery``, ``k8s.io/apiextensions-apiserver`` and ``k8s.io/kube-aggregator``
modules the local control plane
builds (found in the Go module cache under ``~/.cache/anyop/go/mod/k8s.io`` when not given) and
writes to ``src/anyop/testing/fake/data/go_types.json.gz``, for the vendored definitions:

- ``types``: a field's named Go type where the schema does not refer to it (its decoding
  errors name it: ``... Go struct field ServicePort.spec.ports.protocol of type v1.Protocol``);
- ``underlying``: what those named types are (a converter's error names the kind);
- ``order``: a struct's fields in their Go order, where it is not the documents' alphabetical
  one (the converter of a patch's result meets them in that order);
- ``omitempty``: a struct's ``omitempty`` scalar fields, whose zero value Go leaves out;
- ``nulls``: a struct's slices and maps that are not ``omitempty``: Go writes ``null`` for
  their nil value (and the storage's protobuf keeps an empty one as nil);
- ``inline``: the fields a struct has from an embedded one, by its name (Go's decoding errors
  name it in the field's path: ``spec.rules.IngressRuleValue.http``);
- ``internal``: the layout of the internal ``PodSpec`` and ``PersistentVolumeClaimSpec``
  (``k8s.io/kubernetes``'s ``pkg/apis/core``), which a refused update shows a diff of.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data"
_STRUCT = re.compile(r"^type (\w+) struct \{$")
_NAMED = re.compile(r"^type (\w+) (=\s*)?([^{=\s][^{]*?)\s*(//.*)?$")
_FIELD = re.compile(r'^\t(\w+)\s+(\S+)\s+`json:"([^",]*)(,omitempty)?')
_GO_FIELD = re.compile(r"^\t(\w+)\s+([^\s/`]+)\s*(`.*)?(//.*)?$")
_EMBEDDED = re.compile(r"^\t\*?([\w.]+)\s*(`.*)?(//.*)?$")
_IMPORT = re.compile(r'^\s*(\w+\s+)?"([^"]+)"$')
_BUILTIN = {"string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8",
            "uint16", "uint32", "uint64", "float32", "float64", "byte", "rune", "any"}  # fmt: skip


def _module(root: Path, name: str) -> Path:
    found = sorted(root.glob(f"{name}@v*"))
    if not found:
        sys.exit(f"no {name} module under {root}")
    return found[-1]


def _package_dir(root: Path, definition: str) -> Path | None:
    """The Go package of an OpenAPI definition's prefix (``io.k8s.api.core.v1``)."""
    parts = definition.split(".")
    if definition.startswith("io.k8s.api."):
        return _module(root, "api") / "/".join(parts[3:])
    if definition.startswith("io.k8s.apimachinery."):
        return _module(root, "apimachinery") / "/".join(parts[3:])
    if definition.startswith("io.k8s.apiextensions-apiserver."):
        return _module(root, "apiextensions-apiserver") / "/".join(parts[3:])
    if definition.startswith("io.k8s.kube-aggregator."):
        return _module(root, "kube-aggregator") / "/".join(parts[3:])
    return None


class _Package:
    """The named types and struct fields of one Go package, as far as the decoder names them."""

    def __init__(self, directory: Path) -> None:
        self.name = directory.name
        self.named: dict[str, str] = {}  # a non-struct named type, or an alias: its expression
        self.aliases: set[str] = set()
        self.structs: dict[str, dict[str, str]] = {}  # JSON name -> Go type expression
        self.layouts: dict[str, list[tuple[str, str]]] = {}  # (Go name or "", Go type), in order
        self.json_names: dict[str, dict[str, str]] = {}  # Go name -> JSON name
        self.omitted: dict[str, set[str]] = {}  # JSON names of omitempty fields
        self.imports: dict[str, str] = {}  # what a file calls a package -> its name
        for path in sorted(directory.glob("*.go")):
            if not path.name.endswith("_test.go"):
                self._read(path.read_text().splitlines())

    def _read(self, lines: list[str]) -> None:
        struct: dict[str, str] | None = None
        layout: list[tuple[str, str]] = []
        names: dict[str, str] = {}
        omitted: set[str] = set()
        in_imports = False
        for line in lines:
            if line.startswith("import ("):
                in_imports = True
                continue
            if in_imports:
                if line.startswith(")"):
                    in_imports = False
                elif m := _IMPORT.match(line):
                    path = m.group(2)
                    alias = (m.group(1) or "").strip() or path.rsplit("/", 1)[-1]
                    self.imports[alias] = path.rsplit("/", 1)[-1]
                continue
            if struct is not None:
                if line.startswith("}"):
                    struct = None
                    continue
                if (m := _FIELD.match(line)) and m.group(3):
                    struct[m.group(3)] = m.group(2)
                    names[m.group(1)] = m.group(3)
                    if m.group(4):
                        omitted.add(m.group(3))
                if m := _GO_FIELD.match(line):
                    layout.append((m.group(1), m.group(2)))
                elif m := _EMBEDDED.match(line):
                    layout.append(("", m.group(1)))
                continue
            if m := _STRUCT.match(line):
                struct = self.structs.setdefault(m.group(1), {})
                layout = self.layouts.setdefault(m.group(1), [])
                names = self.json_names.setdefault(m.group(1), {})
                omitted = self.omitted.setdefault(m.group(1), set())
            elif (m := _NAMED.match(line)) and not m.group(3).startswith("interface"):
                self.named[m.group(1)] = m.group(3)
                if m.group(2):
                    self.aliases.add(m.group(1))

    def go_string(self, expression: str) -> str:
        """A type expression as Go's reflection prints it (after the decoder's indirection)."""
        expression = expression.removeprefix("*")
        if expression.startswith("[]"):
            inner = self.go_string(expression[2:])
            return "[]uint8" if inner == "uint8" else f"[]{inner}"
        if expression.startswith("map["):
            depth, index = 0, 3
            for index in range(3, len(expression)):
                depth += {"[": 1, "]": -1}.get(expression[index], 0)
                if depth == 0:
                    break
            key, value = expression[4:index], expression[index + 1 :]
            return f"map[{self.go_string(key)}]{self.go_string(value)}"
        if expression in _BUILTIN:
            return {"byte": "uint8", "rune": "int32", "any": "interface {}"}.get(
                expression, expression
            )
        if "." in expression:
            alias, _, name = expression.partition(".")
            return f"{self.imports.get(alias, alias)}.{name}"
        if expression in self.aliases:
            return self.go_string(self.named[expression])
        return f"{self.name}.{expression}"


def _is_scalar(package: _Package, expression: str) -> bool:
    """Whether a field's type is a string, number or boolean (or named one): Go leaves its zero
    value out under ``omitempty`` (a pointer's it keeps)."""
    while expression in package.named:
        expression = package.named[expression]
    return expression in _BUILTIN - {"any"}


def _is_collection(package: _Package, expression: str) -> bool:
    """Whether a field's type is a slice or a map (or a named one): Go writes ``null`` for its
    nil value where the field is not ``omitempty``."""
    while expression in package.named:
        expression = package.named[expression]
    return expression.startswith(("[]", "map["))


def _from_schema(schema: dict[str, Any]) -> str:
    """The Go type the fake derives from a list's schema alone: ``[]`` and its items' name."""
    items = schema.get("items") or {}
    ref = str(items.get("$ref") or (items.get("allOf") or [{}])[0].get("$ref", ""))
    ref = ref.rpartition("/")[2]
    package, _, name = ref.rpartition(".")
    return f"[]{package.rpartition('.')[2]}.{name}" if ref else ""


def _internal(root: Path) -> dict[str, Any]:
    """The layout of kube-apiserver's internal ``PodSpec`` and ``PersistentVolumeClaimSpec``
    (``pkg/apis/core``, untagged: their JSON shows every field by its Go name, in order), of
    the internal structs and named types they reach, and the ``v1`` JSON name of each Go field
    of the same-named ``v1`` structs (an embedded struct's promoted): the refusal of a change
    to a Pod's or a claim's spec shows a diff of them."""
    internal = _Package(_module(root, "kubernetes") / "pkg/apis/core")
    external = _Package(_module(root, "api") / "core/v1")
    structs: dict[str, list[tuple[str, str]]] = {}
    named: dict[str, str] = {}
    names: dict[str, dict[str, str]] = {}
    waiting = ["PodSpec", "PersistentVolumeClaimSpec"]
    while waiting:
        name = waiting.pop()
        if name in structs or name in named:
            continue
        if name in internal.layouts:
            structs[name] = internal.layouts[name]
            names[name] = _promoted(external, name)
            expressions = [expression for _, expression in structs[name]]
        elif name in internal.named:
            named[name] = internal.named[name]
            expressions = [named[name]]
        else:
            continue
        for expression in expressions:
            waiting += [t for t in re.findall(r"[\w.]+", expression) if "." not in t]
    return {"structs": structs, "named": named, "json": names}


def _promoted(package: _Package, struct: str) -> dict[str, str]:
    """A struct's JSON names by Go name, the fields of an embedded struct of its own package
    promoted."""
    found = dict(package.json_names.get(struct) or {})
    for go_name, expression in package.layouts.get(struct) or ():
        embedded = expression.lstrip("*")
        if not go_name and "." not in embedded and embedded != struct:
            found.update(_promoted(package, embedded))
    return found


def _chains(package: _Package, embedded: str) -> dict[str, str]:
    """The JSON fields an embedded struct gives, each with the embedded structs it comes
    through (``RuleWithOperations.Rule``)."""
    found = {key: embedded for key in (package.json_names.get(embedded) or {}).values()}
    for go_name, expression in package.layouts.get(embedded) or ():
        inner = expression.lstrip("*")
        if not go_name and "." not in inner and inner != embedded:
            found.update({k: f"{embedded}.{v}" for k, v in _chains(package, inner).items()})
    return found


def main(root: Path) -> None:
    raw = lzma.decompress((DATA / "openapi.json.xz").read_bytes())
    schemas: dict[str, Any] = json.loads(raw)["schemas"]
    packages: dict[Path, _Package] = {}
    table: dict[str, dict[str, str]] = {}
    order: dict[str, list[str]] = {}
    underlying: dict[str, str] = {}
    empty: dict[str, list[str]] = {}
    nulls: dict[str, list[str]] = {}
    inline: dict[str, dict[str, str]] = {}
    for definition, schema in sorted(schemas.items()):
        prefix, _, struct = definition.rpartition(".")
        directory = _package_dir(root, prefix)
        if directory is None or not directory.is_dir():
            continue
        package = packages.get(directory) or packages.setdefault(directory, _Package(directory))
        fields = package.structs.get(struct) or {}
        properties = schema.get("properties") or {}
        declared = [key for key in fields if key in properties]
        if len(declared) > 1 and declared != sorted(declared):
            order[definition] = declared
        for go_name, expression in package.layouts.get(struct) or ():
            if go_name:
                continue  # an embedded struct: its fields are promoted, under its name
            embedded = expression.lstrip("*")
            if "." in embedded:
                continue  # another package's (meta/v1's TypeMeta): not in the documents
            for key, chain in _chains(package, embedded).items():
                if key in properties:
                    inline.setdefault(definition, {})[key] = chain
        for key in sorted(package.omitted.get(struct) or ()):
            if key in properties and _is_scalar(package, fields[key]):
                empty.setdefault(definition, []).append(key)
        omitted = package.omitted.get(struct) or set()
        for key in fields:
            if key in properties and key not in omitted and _is_collection(package, fields[key]):
                nulls.setdefault(definition, []).append(key)
        for key, sub in (schema.get("properties") or {}).items():
            if key not in fields or "$ref" in sub or "allOf" in sub:
                continue  # a referred schema is named by its reference already
            named = package.go_string(fields[key])
            if "." in named and named != _from_schema(sub):
                table.setdefault(definition, {})[key] = named
                bare = fields[key].lstrip("*[]")
                if bare in package.named and bare not in package.aliases:
                    underlying[named.lstrip("[]")] = package.go_string(package.named[bare])
    target = DATA / "go_types.json.gz"
    document = {
        "types": table,
        "underlying": underlying,
        "order": order,
        "omitempty": empty,
        "nulls": nulls,
        "inline": inline,
        "internal": _internal(root),
    }
    text = json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n"
    target.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(
        f"{target}: {sum(map(len, table.values()))} fields of {len(table)} definitions, "
        f"the field order of {len(order)}"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".cache/anyop/go/mod/k8s.io")
