"""What the write path does to a CustomResourceDefinition beyond what it does to any object:
its ``v1`` defaults and the status its strategy makes (:func:`crd_prepared`), its names
accepted and its kinds served once created (:func:`establish`) and served anew once updated
(:func:`serve_anew`), its custom resources taken with it once deleted
(:func:`delete_instances`).

Sync: the last three write to the store (for :mod:`anyop.testing.fake.writes`).
"""

from __future__ import annotations

from typing import Any

from anyop.testing.fake import crd_deletion
from anyop.testing.fake.kinds import CRD_KIND, Kind, kinds_of_crd
from anyop.testing.fake.store import Store

__all__ = ["crd_prepared", "delete_instances", "establish", "serve_anew"]

Body = dict[str, Any]
_NAMES_ORDER = ("plural", "singular", "shortNames", "kind", "listKind", "categories")
"""The accepted names' fields in ``CustomResourceDefinitionNames``' order."""


def _defaulted_names(names: Body) -> Body:
    """The names with their ``v1`` defaults (singular and list kind), filled in place."""
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    return names


def establish(store: Store, crd: Body) -> None:
    """Accept a CRD's names and serve its kinds, as the API server's CRD controllers do."""
    names = _defaulted_names(dict((crd.get("spec") or {}).get("names") or {}))
    names = {key: names[key] for key in _NAMES_ORDER if key in names}
    now = store.now()
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    stored = store.find(CRD_KIND, None, crd["metadata"]["name"])
    established = {**stored, "status": {**stored.get("status", {}), "conditions": conditions}}
    established["status"]["acceptedNames"] = names
    store.commit(CRD_KIND, "MODIFIED", established, old=stored)
    for kind in kinds_of_crd(established):
        store.serve(kind)


def crd_prepared(kind: Kind, obj: Body, *, old: Body | None = None) -> Body:
    """A CRD with its ``v1`` defaults (its names' singular and list kind, no conversion) and
    its status as its strategy makes it: a new one's reset, an update's with its storage
    version among its stored versions (``PrepareForUpdate``)."""
    if kind != CRD_KIND:
        return obj
    spec = obj.setdefault("spec", {})
    _defaulted_names(spec.setdefault("names", {}))
    spec.setdefault("conversion", {"strategy": "None"})
    versions = [v["name"] for v in spec.get("versions") or () if v.get("storage")]
    if old is None:
        obj["status"] = {
            "conditions": None,
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": versions,
        }
        return obj
    status = obj["status"] = dict(obj.get("status") or {})
    stored = list(status.get("storedVersions") or ())
    status["storedVersions"] = stored + [name for name in versions[:1] if name not in stored]
    return obj


def serve_anew(store: Store, crd: Body) -> None:
    """Serve an updated CRD's kinds as it now defines them (schemas, versions, subresources)."""
    name = crd["metadata"]["name"]
    if not any(kind.crd == name for kind in store.kinds.values()):
        return  # not established (yet): nothing served to update
    store.unserve(name)
    for served in kinds_of_crd(crd):
        store.serve(served)


def delete_instances(store: Store, kind: Kind, stored: Body) -> None:
    """A deleted CRD takes its custom resources with it (those its finalizer left)."""
    if kind != CRD_KIND:
        return
    crd_deletion.remove_instances(store, stored["metadata"]["name"])
    store.unserve(stored["metadata"]["name"])
