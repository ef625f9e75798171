"""Regenerate FakeCluster's table of the kinds kube-apiserver's scheme knows, from its Go code.

Usage::

    python scripts/fake_scheme.py [MODULE_DIR]

kube-apiserver decodes a built-in object's body by the kind and version the body names (the
URL's where it names none), then converts it to the internal type of the URL's kind: a body of
a kind its scheme does not know, or of a type that does not convert, is refused (400), and so is
one of another version of the same internal type. This reads the ``install`` packages of
``k8s.io/kubernetes``'s ``pkg/apis`` (the legacy scheme's groups, their versions and their
internal types) and the ``k8s.io/api`` packages they register, in the Go module cache under
``~/.cache/anyop/go/mod/k8s.io`` when not given, and writes
``src/anyop/testing/fake/data/scheme.json``:

- ``groups``: each API group (``""`` for the core group), its internal package's name and each
  internal kind's Go type (``apps.Deployment``; the ``extensions`` group's Deployment is
  ``apps.Deployment`` too);
- ``versions``: each registered group version (``apps/v1beta1``) and its kinds;
- ``meta``: the kinds every group version has (``metav1.AddToGroupVersion``'s), and the
  unversioned ones, known in any version.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/scheme.json"
_IMPORT = re.compile(r'^\s*(\w+\s+)?"([^"]+)"$', re.MULTILINE)
_ADD = re.compile(r"utilruntime\.Must\((\w+)\.AddToScheme\(scheme\)\)")
_KNOWN = re.compile(r"AddKnownTypes\(SchemeGroupVersion,(.*?)\n\t\)", re.DOTALL)
_TYPE = re.compile(r"&(?:(\w+)\.)?(\w+)\{\}")
_GROUP = re.compile(r'^const GroupName = "([^"]*)"', re.MULTILINE)
_PACKAGE = re.compile(r"^package (\w+)", re.MULTILINE)
_BUILDER = re.compile(r"localSchemeBuilder\s*=\s*&(\w+)\.SchemeBuilder")
_OPTIONS = re.compile(r"var optionsTypes = \[\]runtime\.Object\{(.*?)\n\}", re.DOTALL)
_UNVERSIONED = re.compile(r"AddUnversionedTypes\(Unversioned,(.*?)\)\n", re.DOTALL)


def _module(root: Path, name: str) -> Path:
    found = sorted(root.glob(f"{name}@v*"))
    if not found:
        raise SystemExit(f"{name} is not in {root}: build the local control plane first")
    return found[-1]


def _imports(text: str) -> dict[str, str]:
    """Each import's name (its alias, or its path's last part) to its path."""
    found = {}
    for alias, path in _IMPORT.findall(text):
        found[alias.strip() or path.rsplit("/", 1)[1]] = path
    return found


def _known(text: str, own: str) -> dict[str, str]:
    """The kinds ``addKnownTypes`` registers, each to its Go type (``pkg.Kind``)."""
    found: dict[str, str] = {}
    for block in _KNOWN.findall(text):
        for package, kind in _TYPE.findall(block):
            found[kind] = f"{package or own}.{kind}"
    return found


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".cache/anyop/go/mod/k8s.io"
    kubernetes, api = _module(root, "kubernetes"), _module(root, "api")
    meta_text = (_module(root, "apimachinery") / "pkg/apis/meta/v1/register.go").read_text()
    options = [kind for _, kind in _TYPE.findall(_OPTIONS.findall(meta_text)[0])]
    unversioned = [kind for _, kind in _TYPE.findall(_UNVERSIONED.findall(meta_text)[0])]
    groups: dict[str, dict[str, object]] = {}
    versions: dict[str, list[str]] = {}
    for install in sorted((kubernetes / "pkg/apis").glob("*/install/install.go")):
        folder = install.parent.parent
        register = (folder / "register.go").read_text()
        group = _GROUP.findall(register)[0]
        package = _PACKAGE.findall(register)[0]
        groups[group] = {"package": package, "kinds": _known(register, package)}
        text = install.read_text()
        imports = _imports(text)
        for name in _ADD.findall(text):
            path = imports[name]
            version = path.rsplit("/", 1)[1]
            if path == f"k8s.io/kubernetes/pkg/apis/{folder.name}":
                continue  # the internal version
            versioned = kubernetes / path.removeprefix("k8s.io/kubernetes/") / "register.go"
            builder = _BUILDER.findall(versioned.read_text())
            external = _imports(versioned.read_text())[builder[0]]
            kinds = _known((api / external.removeprefix("k8s.io/api/") / "register.go")
                           .read_text(), version)  # fmt: skip
            versions[f"{group}/{version}" if group else version] = sorted(kinds)
    document = {
        "source": kubernetes.name,
        "groups": groups,
        "versions": versions,
        "meta": {"options": ["WatchEvent", *options], "unversioned": unversioned},
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(groups)} groups, {len(versions)} versions)")


if __name__ == "__main__":
    main()
