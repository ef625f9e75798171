"""Ready-made combinations of storages and finalizers: anyop's own, status-based, and Kopf's.

anyop keeps its state under its own keys (``anyop.dev/...``, finalizer ``anyop.dev/finalizer``),
so that it never fights a Kopf operator over the same objects. To take over objects that a Kopf
operator handled before -- without re-running their creation handlers -- use
:func:`kopf_compatible_storages`, which reads and writes Kopf's keys.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from anyop.storage.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
)
from anyop.storage.finalizers import ANYOP_FINALIZER, KOPF_FINALIZER
from anyop.storage.progress import (
    ANYOP_PREFIX,
    KOPF_PREFIX,
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
    _ReadOnlyStatusProgressStorage,
)

__all__ = [
    "Persistence",
    "anyop_storages",
    "kopf_compatible_storages",
    "status_storages",
    "written_first",
]


@dataclasses.dataclass(frozen=True)
class Persistence:
    """Where an operator keeps its state on the objects.

    Attributes:
        progress: The per-handler progress storage.
        diffbase: The last-handled-essence storage.
        finalizer: The finalizer's name.
    """

    progress: ProgressStorage
    diffbase: DiffBaseStorage
    finalizer: str


def anyop_storages() -> Persistence:
    """anyop's default: annotations under ``anyop.dev/`` (no legacy "v1" keys to keep)."""
    return Persistence(
        progress=AnnotationsProgressStorage(prefix=ANYOP_PREFIX, v1=False),
        diffbase=AnnotationsDiffBaseStorage(prefix=ANYOP_PREFIX, v1=False),
        finalizer=ANYOP_FINALIZER,
    )


def status_storages(name: str = "anyop") -> Persistence:
    """Everything in ``status.<name>``: one ``/status`` request per simple cycle.

    Only for resources with the ``status`` subresource whose schema keeps unknown status fields;
    the engine checks the echo with :func:`~anyop.storage.diffbase.status_was_pruned`.

    Layout: ``status.<name>.progress.<handler id>`` (records as objects),
    ``status.<name>.last-handled-configuration`` (the essence as a JSON string), and
    ``status.<name>.dummy`` (the touch field).
    """
    return Persistence(
        progress=StatusProgressStorage(name=name),
        diffbase=StatusDiffBaseStorage(name=name),
        finalizer=ANYOP_FINALIZER,
    )


def kopf_compatible_storages() -> Persistence:
    """Kopf's keys exactly, to take over objects that a Kopf operator handled before.

    Progress in ``kopf.zalando.org/<id>`` (and the legacy ``status.kopf.progress``, read-only),
    the diff-base in ``kopf.zalando.org/last-handled-configuration``, and the finalizer
    ``kopf.zalando.org/KopfFinalizerMarker``.
    """
    return Persistence(
        progress=SmartProgressStorage(name="kopf", prefix=KOPF_PREFIX),
        diffbase=AnnotationsDiffBaseStorage(prefix=KOPF_PREFIX),
        finalizer=KOPF_FINALIZER,
    )


def written_first(
    storage: ProgressStorage | DiffBaseStorage,
) -> Literal["main", "status"] | None:
    """Where a storage writes the copy of its state that is read first. Pure.

    ``"main"`` for annotations, ``"status"`` for the status stanza; for several storages, that
    of the first one that writes (they are read in their order); ``None`` for storages that
    anyop does not know (custom ones). The engine sends that part of a cycle's state first, so
    that no state between its requests reads as older than it is.
    """
    if isinstance(storage, MultiProgressStorage | MultiDiffBaseStorage):
        for inner in storage.storages:
            if not isinstance(inner, _ReadOnlyStatusProgressStorage):
                return written_first(inner)
        return None
    if isinstance(storage, StatusProgressStorage | StatusDiffBaseStorage):
        return "status"
    if isinstance(storage, AnnotationsProgressStorage | AnnotationsDiffBaseStorage):
        return "main"
    return None
