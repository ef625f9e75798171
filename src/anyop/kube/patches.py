"""Patches: JSON merge-patches (RFC 7386), JSON patches (RFC 6902), and checks of their echoes.

Pure: the engine sends what these functions build. A :class:`Patch` is what handlers get as the
``patch`` kwarg: a merge-patch dict with Kopf's accessors (``patch.spec``, ``patch.status``,
``patch.meta.labels``...) plus ``patch.fns``, transformation functions that are applied to a fresh
copy of the body and diffed into a JSON patch guarded by a ``resourceVersion`` test.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from anyop.kube.jsonpatch import (
    JsonPatchError,
    JsonPatchOp,
    apply_json_patch,
    json_equal,
    json_patch_diff,
    pointer,
)
from anyop.models.typed import as_patch

__all__ = [
    "JsonPatchError",
    "JsonPatchOp",
    "MetaPatch",
    "Patch",
    "PatchFn",
    "PatchView",
    "apply_json_patch",
    "format_inconsistencies",
    "inconsistencies",
    "json_equal",
    "json_patch_diff",
    "json_patch_from_fns",
    "merge",
    "merge_patches",
    "pointer",
    "split_json_patch",
    "split_status",
    "with_resource_version",
]

PatchFn = Callable[[MutableMapping[str, Any]], object]
"""A transformation of a raw body: it changes the body in place (or returns a replacement)."""

Inconsistency = tuple[str, tuple[str, ...], Any, Any]

RESOURCE_VERSION_PATH = "/metadata/resourceVersion"

# Kubernetes drops these fields entirely when they are patched to an empty list or dict.
_SELF_EMPTYING_FIELDS = (
    ("metadata", "annotations"),
    ("metadata", "finalizers"),
    ("metadata", "labels"),
)


class PatchView(MutableMapping[str, Any]):
    """A live view of one nested stanza of a patch, created on first write.

    Reading a missing stanza behaves as an empty mapping; writing creates the intermediate dicts.
    """

    def __init__(self, root: MutableMapping[str, Any], path: Sequence[str]) -> None:
        self._root = root
        self._path = tuple(path)

    def _read(self) -> Mapping[str, Any]:
        node: Any = self._root
        for key in self._path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node if isinstance(node, Mapping) else {}

    def _write(self) -> MutableMapping[str, Any]:
        node = self._root
        for key in self._path:
            if not isinstance(node.get(key), MutableMapping):
                node[key] = {}
            node = node[key]
        return node

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._write()[key] = as_patch(value)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set keys from a mapping, pairs, keywords, or a typed model (its fields that were set)."""
        if hasattr(other, "model_dump"):
            other = as_patch(other)
        super().update(other, **kwargs)

    def __delitem__(self, key: str) -> None:
        container = self._read()
        if not isinstance(container, MutableMapping) or key not in container:
            raise KeyError(key)
        del container[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._read()))

    def __len__(self) -> int:
        return len(self._read())

    def __repr__(self) -> str:
        return repr(dict(self._read()))


class MetaPatch(PatchView):
    """The ``metadata`` stanza of a patch, with ``labels`` and ``annotations`` views."""

    @property
    def labels(self) -> PatchView:
        """The ``metadata.labels`` stanza; ``None`` values delete labels."""
        return PatchView(self._root, (*self._path, "labels"))

    @property
    def annotations(self) -> PatchView:
        """The ``metadata.annotations`` stanza; ``None`` values delete annotations."""
        return PatchView(self._root, (*self._path, "annotations"))


class Patch(dict[str, Any]):
    """A JSON merge-patch (RFC 7386) with Kopf's accessors and JSON-patch transformations.

    ``None`` values delete fields. ``fns`` are applied, in order, to a deep copy of the freshest
    body; the difference becomes a JSON patch (see :func:`json_patch_from_fns`).

    Args:
        src: The initial content; if it is a :class:`Patch`, its ``fns`` are copied too.
        body: The body that the patch is for (Kopf's): :meth:`as_json_patch` uses it when it
            is given none.
    """

    __slots__ = ("body", "fns")  # no __dict__: every cycle makes patches, most of them empty

    def __init__(
        self, src: Mapping[str, Any] | None = None, /, body: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(src or {})
        self.fns: list[PatchFn] = list(src.fns) if isinstance(src, Patch) else []
        self.body = body

    def __bool__(self) -> bool:
        return len(self) > 0 or bool(self.fns)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, as_patch(value))

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set keys from a mapping, pairs, keywords, or a typed resource (its fields that were
        set)."""
        if hasattr(other, "model_dump"):
            other = as_patch(other)
        super().update(other, **kwargs)

    def __repr__(self) -> str:
        fns = f", fns={self.fns!r}" if self.fns else ""
        return f"Patch({dict(self)!r}{fns})"

    @property
    def metadata(self) -> MetaPatch:
        """The ``metadata`` stanza."""
        return MetaPatch(self, ("metadata",))

    @property
    def meta(self) -> MetaPatch:
        """The ``metadata`` stanza (Kopf's short name)."""
        return self.metadata

    @property
    def spec(self) -> PatchView:
        """The ``spec`` stanza."""
        return PatchView(self, ("spec",))

    @property
    def status(self) -> PatchView:
        """The ``status`` stanza."""
        return PatchView(self, ("status",))

    def as_json_patch(self, body: Mapping[str, Any] | None = None) -> list[JsonPatchOp]:
        """Express the merge part and the fns together as one JSON patch against ``body``.

        Used by mutating webhooks, whose responses must be JSON patches. No ``test`` op is added.
        Without ``body`` (here or in ``Patch(body=...)``), as in Kopf: every value is a
        ``replace`` and every ``None`` a ``remove``.

        Raises:
            ValueError: There are ``fns`` but no body to apply them to.
        """
        body = self.body if body is None else body
        if body is None:
            if self.fns:
                raise ValueError("A patch with fns needs a body: pass Patch(body=...).")
            return _ops_of_merge(self, ()) if self else []
        merged = merge(body, self)
        return json_patch_diff(body, _apply_fns(merged, self.fns))


def _ops_of_merge(patch: Any, path: tuple[str, ...]) -> list[JsonPatchOp]:
    """The JSON patch of a merge-patch alone: ``replace`` each value, ``remove`` each ``None``."""
    if patch is None:
        return [{"op": "remove", "path": pointer(path)}]
    if isinstance(patch, Mapping) and patch:
        return [op for key, value in patch.items() for op in _ops_of_merge(value, (*path, key))]
    return [{"op": "replace", "path": pointer(path), "value": patch}]


def merge(body: Any, patch: Any) -> Any:
    """Apply a JSON merge-patch (RFC 7386) and return the result; neither input is changed.

    Mappings merge recursively, ``None`` deletes a key, anything else (lists included) replaces.
    """
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(body) if isinstance(body, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def merge_patches(into: MutableMapping[str, Any], other: Mapping[str, Any]) -> None:
    """Add a merge-patch to another, as if ``other`` were sent after ``into``.

    Mappings combine key by key; anything else in ``other`` (``None``, which deletes, included)
    replaces what ``into`` has. ``other`` is not changed, but ``into`` may share its nested
    mappings afterwards.
    """
    for key, value in other.items():
        mine = into.get(key)
        if isinstance(value, Mapping) and isinstance(mine, MutableMapping):
            merge_patches(mine, value)
        else:
            into[key] = value


def _apply_fns(body: Mapping[str, Any], fns: Iterable[PatchFn]) -> dict[str, Any]:
    fresh: dict[str, Any] = copy.deepcopy(dict(body))
    for fn in fns:
        returned = fn(fresh)
        if isinstance(returned, dict):
            fresh = returned
    return fresh


def json_patch_from_fns(body: Mapping[str, Any], fns: Iterable[PatchFn]) -> list[JsonPatchOp]:
    """Apply ``fns`` to a deep copy of ``body`` and express the change as a guarded JSON patch.

    Args:
        body: The freshest known body; it is not changed.
        fns: Transformation functions, applied in order.

    Returns:
        ``[]`` if nothing changed; otherwise a ``test`` of ``/metadata/resourceVersion`` against
        the body's version, followed by the operations. The server answers 422 if the object has
        changed meanwhile: re-apply the fns to the new body on the next cycle.
    """
    ops = json_patch_diff(body, _apply_fns(body, fns))
    if not ops:
        return []
    version = (body.get("metadata") or {}).get("resourceVersion")
    return [{"op": "test", "path": RESOURCE_VERSION_PATH, "value": version}, *ops]


def with_resource_version(ops: Sequence[JsonPatchOp], version: str | None) -> list[JsonPatchOp]:
    """Return ``ops`` with the ``resourceVersion`` test re-pointed to ``version``."""
    return [
        {**op, "value": version}
        if op.get("op") == "test" and op.get("path") == RESOURCE_VERSION_PATH
        else dict(op)
        for op in ops
    ]


def split_status(patch: Patch) -> tuple[Patch, Patch]:
    """Split a patch for a resource with the ``status`` subresource into two requests.

    Returns:
        ``(main, status)``: the main patch (everything but ``status``, with the ``fns``), and the
        patch for the ``/status`` endpoint (only ``status``, no ``fns``). Either may be empty.

    WARNING: fns that change ``status`` produce operations that the main endpoint ignores; split
    the resulting JSON patch with :func:`split_json_patch`.
    """
    main = Patch({key: value for key, value in patch.items() if key != "status"})
    main.fns = list(patch.fns)
    status = Patch({"status": patch["status"]}) if "status" in patch else Patch()
    return main, status


def split_json_patch(ops: Sequence[JsonPatchOp]) -> tuple[list[JsonPatchOp], list[JsonPatchOp]]:
    """Split a JSON patch into the main endpoint's and the ``/status`` endpoint's operations.

    Each part keeps the ``resourceVersion`` test; a part with no operations is ``[]``.

    WARNING: send them one after another, and re-point the second part's test to the version the
    first request returned (:func:`with_resource_version`), or it fails with 422.
    """
    tests = [op for op in ops if op.get("op") == "test" and op.get("path") == RESOURCE_VERSION_PATH]
    rest = [op for op in ops if op not in tests]
    is_status = [str(op.get("path", "")).split("/")[1:2] == ["status"] for op in rest]
    main = [op for op, flag in zip(rest, is_status, strict=True) if not flag]
    status = [op for op, flag in zip(rest, is_status, strict=True) if flag]
    return (tests + main if main else []), (tests + status if status else [])


def inconsistencies(
    patch: Mapping[str, Any], echoed_body: Mapping[str, Any]
) -> tuple[Inconsistency, ...]:
    """Find what a merge-patch set but the server did not keep (e.g. pruned by a schema).

    Only the fields in the patch are compared; other changes of the body are ignored, and so are
    ``metadata.labels/annotations/finalizers`` patched to empty (Kubernetes drops empty ones).

    Returns:
        Kopf's diff-item tuples ``(op, field_path, patched_value, echoed_value)``, e.g.
        ``('remove', ('status', 'x'), 1, None)`` for a pruned ``status.x``.
    """
    return tuple(
        (op, field, old, new)
        for op, field, old, new in _left_diff(patch, echoed_body, ())
        if old or new or field not in _SELF_EMPTYING_FIELDS
    )


def format_inconsistencies(items: Sequence[Inconsistency]) -> str:
    """Kopf's warning line for :func:`inconsistencies`."""
    return f"Patching failed with inconsistencies: {tuple(items)!r}"


def _left_diff(a: Any, b: Any, path: tuple[str, ...]) -> Iterator[Inconsistency]:
    if a == b:  # Python's equality first: it is exact enough here, and runs in C
        return
    if json_equal(a, b):
        return
    if a is None:
        yield "add", path, a, b
    elif b is None:
        if _sets_anything(a):  # deleting keys of an absent stanza is consistent
            yield "remove", path, a, b
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        for key, value in a.items():
            yield from _left_diff(value, b.get(key), (*path, key))
    else:
        yield "change", path, a, b


def _sets_anything(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_sets_anything(item) for item in value.values())
    return value is not None
