"""Parents and children: owner references, labels, names and namespaces of objects to create.

Each function takes one object or an iterable of them, and changes them in place before they are
sent to the API. Objects are dicts, or objects that hold their dict in ``.obj`` (pykube-ng). The
owner defaults to the object whose handler runs now; outside a handler, that is a LookupError.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from anyop.handlers.context import current_body

__all__ = [
    "adjust_namespace",
    "adopt",
    "append_owner_reference",
    "build_object_reference",
    "build_owner_reference",
    "harmonize_naming",
    "label",
    "remove_owner_reference",
]

Objs = Any  # one object or an iterable of them: dicts, or objects with a dict in ``.obj``


def _owner(owner: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if owner is not None:
        return _as_dict(owner)
    body = current_body.get()
    if body is None:
        raise LookupError("No owner is given, and no handler runs now to take its object.")
    return body


def _as_dict(obj: Any) -> MutableMapping[str, Any]:
    if isinstance(obj, MutableMapping):
        return obj
    inner = getattr(obj, "obj", None)  # pykube-ng objects
    if isinstance(inner, MutableMapping):
        return inner
    raise TypeError(f"Unsupported object type {type(obj).__name__}: use dicts.")


def _each(objs: Objs) -> Iterator[MutableMapping[str, Any]]:
    if isinstance(objs, Mapping) or hasattr(objs, "obj"):
        yield _as_dict(objs)
    elif isinstance(objs, Iterable) and not isinstance(objs, str | bytes):
        yield from (_as_dict(obj) for obj in objs)
    else:
        raise TypeError(f"Unsupported object type {type(objs).__name__}: use dicts.")


def _meta(obj: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    meta: MutableMapping[str, Any] = obj.setdefault("metadata", {})
    return meta


def build_object_reference(body: Mapping[str, Any]) -> dict[str, Any]:
    """An ``ObjectReference``: apiVersion, kind, name, uid, and namespace if any."""
    meta = body.get("metadata") or {}
    ref = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
           "name": meta.get("name"), "uid": meta.get("uid")}  # fmt: skip
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


def build_owner_reference(
    body: Mapping[str, Any], *, controller: bool = True, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """An ``OwnerReference`` to the object of this body."""
    meta = body.get("metadata") or {}
    return {
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }


def append_owner_reference(
    objs: Objs,
    owner: Mapping[str, Any] | None = None,
    *,
    controller: bool = True,
    block_owner_deletion: bool = True,
) -> None:
    """Make the objects owned by ``owner`` (idempotent: one reference per owner uid)."""
    ref = build_owner_reference(
        _owner(owner), controller=controller, block_owner_deletion=block_owner_deletion
    )
    for obj in _each(objs):
        refs = _meta(obj).setdefault("ownerReferences", [])
        if not any(existing.get("uid") == ref["uid"] for existing in refs):
            refs.append(dict(ref))


def remove_owner_reference(objs: Objs, owner: Mapping[str, Any] | None = None) -> None:
    """Remove ``owner``'s references from the objects (by uid)."""
    uid = (_owner(owner).get("metadata") or {}).get("uid")
    for obj in _each(objs):
        refs = _meta(obj).get("ownerReferences") or []
        _meta(obj)["ownerReferences"] = [ref for ref in refs if ref.get("uid") != uid]


def _nested(obj: MutableMapping[str, Any], path: str) -> MutableMapping[str, Any] | None:
    node: Any = obj
    for key in path.split("."):
        if not isinstance(node, MutableMapping) or key not in node:
            return None  # only pre-existing structures are labelled
        node = node[key]
    return node if isinstance(node, MutableMapping) else None


def label(
    objs: Objs,
    labels: Mapping[str, str] | None = None,
    *,
    forced: bool = False,
    nested: str | Iterable[str] | None = None,
) -> None:
    """Label the objects (and their existing ``nested`` structures, e.g. ``spec.template``).

    Args:
        labels: The labels; ``None``: the current handler's object's labels.
        forced: Overwrite labels that the objects already have.
        nested: Dotted paths of nested objects (pod templates) to label too.
    """
    if labels is None:
        labels = (_owner(None).get("metadata") or {}).get("labels") or {}
    paths = [nested] if isinstance(nested, str) else list(nested or [])
    for obj in _each(objs):
        targets = [obj, *(n for p in paths if (n := _nested(obj, p)) is not None)]
        for target in targets:
            existing = _meta(target).setdefault("labels", {})
            for key, value in labels.items():
                if forced or key not in existing:
                    existing[key] = value


def harmonize_naming(
    objs: Objs, name: str | None = None, *, forced: bool = False, strict: bool = False
) -> None:
    """Name the objects after ``name``: as a prefix (``generateName``), or exactly if ``strict``.

    Objects that have a name (or a ``generateName``) keep it unless ``forced``.
    """
    if name is None:
        name = str((_owner(None).get("metadata") or {}).get("name"))
    for obj in _each(objs):
        meta = _meta(obj)
        if not forced and (meta.get("name") or meta.get("generateName")):
            continue
        if strict:
            meta.pop("generateName", None)
            meta["name"] = name
        else:
            meta.pop("name", None)
            meta["generateName"] = f"{name}-"


def adjust_namespace(objs: Objs, namespace: str | None = None, *, forced: bool = False) -> None:
    """Put the objects into ``namespace`` (default: the current handler's object's namespace)."""
    if namespace is None:
        namespace = (_owner(None).get("metadata") or {}).get("namespace")
    for obj in _each(objs):
        meta = _meta(obj)
        if forced or not meta.get("namespace"):
            if namespace is None:
                meta.pop("namespace", None)
            else:
                meta["namespace"] = namespace


def adopt(
    objs: Objs,
    owner: Mapping[str, Any] | None = None,
    *,
    forced: bool = False,
    strict: bool = False,
    nested: str | Iterable[str] | None = None,
) -> None:
    """Owner reference, name, namespace and labels from ``owner`` (default: the current object)."""
    parent = _owner(owner)
    meta = parent.get("metadata") or {}
    objs = list(_each(objs))
    append_owner_reference(objs, parent)
    harmonize_naming(objs, str(meta.get("name")), forced=forced, strict=strict)
    adjust_namespace(objs, meta.get("namespace"), forced=forced)
    label(objs, meta.get("labels") or {}, forced=forced, nested=nested)
