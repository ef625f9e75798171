"""Which states of a reconciled object call its reconciler: decided by content, not by order.

Pure. A state calls the reconciler unless its *meaning* (:func:`meaning`: the body without the
server's bookkeeping and, by default, without ``status``) is one the reconciler has already
handled: the state its running or last call saw, as its own writes left it
(:func:`after_write`). The resourceVersion never decides it: a write that changes nothing is
answered with the object's current version, which may be another client's change; and a write
that the server applied after another client's answers with both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.kube.patches import merge

__all__ = ["BOOKKEEPING", "after_write", "meaning"]

BOOKKEEPING = frozenset({"resourceVersion", "managedFields", "generation"})
"""What of ``metadata`` the server changes on any write (``generation`` follows ``spec``)."""


def meaning(body: Mapping[str, Any], *, status: bool) -> dict[str, Any]:
    """What of a body calls the reconciler when it changes: everything but the server's
    bookkeeping (:data:`BOOKKEEPING`) and, unless ``status``, the ``status``."""
    kept = {key: value for key, value in body.items() if status or key != "status"}
    metadata = body.get("metadata") or {}
    kept["metadata"] = {key: value for key, value in metadata.items() if key not in BOOKKEEPING}
    return kept


def after_write(
    handled: Mapping[str, Any], patch: Mapping[str, Any], *, status: bool
) -> dict[str, Any]:
    """The meaning that a merge-patch leaves on an object whose meaning was ``handled``, if
    nobody else writes it meanwhile (a status subresource's patch has only ``status``)."""
    return meaning(merge(handled, patch), status=status)
