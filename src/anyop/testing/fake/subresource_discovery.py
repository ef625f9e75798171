"""The discovery entries of a built-in resource's subresources other than ``status`` and
``scale`` (which :class:`~anyop.testing.fake.kinds.Kind` lists itself): ``pods/log``,
``pods/eviction``, ``serviceaccounts/token``, ``certificatesigningrequests/approval``...

Pure. They come from the vendored OpenAPI documents' paths, as kube-apiserver lists what it
installs: each HTTP method of a subresource's path is a verb (``POST`` is ``create``, ``PUT``
``update``), and its kind (with its group and version where they are not the resource's) is its
operations' ``x-kubernetes-group-version-kind``. Discovery lists them whether or not the fake
answers them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.openapi_catalog import catalog

__all__ = ["subresource_entries"]

_OWN = ("status", "scale")
_PATH = re.compile(
    r"^/apis?/(?:(?P<group>[^/]+)/)?(?P<version>v[^/]+)(?:/namespaces/\{namespace\})?"
    r"/(?P<plural>[^/{]+)/\{name\}/(?P<sub>[^/{]+)$"
)
_VERBS = {"get": "get", "post": "create", "put": "update", "patch": "patch", "delete": "delete"}


@functools.cache
def _entries() -> Mapping[tuple[str, str, str], tuple[dict[str, Any], ...]]:
    found: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for prefix, document in catalog().data["documents"].items():
        for path, item in document["paths"].items():
            match = _PATH.match(path)
            if match is None or match["sub"] in _OWN or "/watch/" in path:
                continue
            group = "" if prefix.startswith("api/") else match["group"] or ""
            key = (group, match["version"], match["plural"])
            entry = found.setdefault(key, {}).setdefault(
                match["sub"],
                {
                    "name": f"{match['plural']}/{match['sub']}",
                    "singularName": "",
                    "namespaced": "{namespace}" in path,
                    "verbs": set(),
                },
            )
            for method, operation in item.items():
                if method not in _VERBS or not isinstance(operation, Mapping):
                    continue
                entry["verbs"].add(_VERBS[method])
                gvk = operation.get("x-kubernetes-group-version-kind") or {}
                if gvk and "kind" not in entry:
                    entry["kind"] = gvk.get("kind", "")
                    if (gvk.get("group", ""), gvk.get("version", "")) != (group, key[1]):
                        entry["group"], entry["version"] = gvk.get("group", ""), gvk["version"]
    return {
        key: tuple(
            {**entry, "verbs": sorted(entry["verbs"])} for _, entry in sorted(subresources.items())
        )
        for key, subresources in found.items()
    }


def subresource_entries(group: str, version: str, plural: str) -> Iterator[dict[str, Any]]:
    """The entries of a built-in resource's other subresources, in order of their names."""
    for entry in _entries().get((group, version, plural), ()):
        yield {
            key: entry[key]
            for key in ("name", "singularName", "namespaced", "group", "version", "kind", "verbs")
            if key in entry
        } | {"verbs": list(entry["verbs"])}
