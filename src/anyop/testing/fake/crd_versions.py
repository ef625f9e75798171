"""A deprecated version of a CRD: every request to it is warned (apiextensions-apiserver's
``crdInfo`` warnings): with the version's ``deprecationWarning``, or its default
(``defaultDeprecationWarning``): ``<group>/<version> <Kind> is deprecated; use <group>/<the
served, not deprecated version of highest priority above it> <Kind>``.

Pure but for reading the CRD from the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.kinds import CRD_KIND, Kind
from anyop.testing.fake.served_discovery import version_key
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Store

__all__ = ["custom_deprecation", "deprecation_of"]


def custom_deprecation(store: Store, kind: Kind) -> str | None:
    """The warning of a request to a custom kind's version, if it is deprecated."""
    if not kind.custom or not kind.crd:
        return None
    try:
        crd = store.find(CRD_KIND, None, kind.crd)
    except StatusError:
        return None
    return deprecation_of(crd.get("spec") or {}, kind.version)


def deprecation_of(spec: Mapping[str, Any], name: str) -> str | None:
    """The warning of version ``name`` of a CRD's ``spec``, if it is deprecated."""
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    version = next((v for v in versions if v.get("name") == name), None)
    if version is None or not version.get("deprecated"):
        return None
    if version.get("deprecationWarning") is not None:
        return str(version["deprecationWarning"])
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    message = f"{group}/{name} {kind} is deprecated"
    newer = [str(v.get("name")) for v in versions if v.get("served") and not v.get("deprecated")
             and version_key(str(v.get("name"))) < version_key(name)]  # fmt: skip
    if newer:
        message += f"; use {group}/{min(newer, key=version_key)} {kind}"
    return message
