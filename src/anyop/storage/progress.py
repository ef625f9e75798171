"""Per-handler progress: what anyop remembers on an object between handling cycles.

One record per handler id: when it started, when it stopped, until when it is delayed, for which
cause (``purpose``), how many times it ran (``retries``), whether it finally succeeded or failed,
the last error message, and the ids of its sub-handlers (``subrefs``). Timestamps are ISO-8601 in
UTC without a zone suffix, e.g. ``2020-02-14T16:58:25.396364``.

Storages read and write these records (:mod:`~anyop.storage.progress_records`) on the object itself:
in annotations (Kopf's default), in the ``status`` stanza, or in several places. They never do I/O:
``store``, ``purge`` and ``touch`` only add to the patch that the engine sends. Storages get and
give Kopf's records (dicts of JSON values); the engine reads them with :meth:`ProgressStorage.read`
and writes them with :meth:`ProgressStorage.write`, so a storage written for Kopf works unchanged.

Stored state is untrusted input: a record that cannot be read is treated as absent, and a
:class:`StorageWarning` is kept for the engine to log (:meth:`ProgressStorage.drain_warnings`).
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from anyop._jsons import compact
from anyop.clock import utcnow
from anyop.handlers.diffs import FieldPath, FieldSpec, ensure, parse_field, remove, resolve
from anyop.handlers.diffs import remove_empty_stanzas as _remove_empty_stanzas
from anyop.kube.patches import Patch
from anyop.logs import object_logger
from anyop.storage.annotations import AnnotationsNaming
from anyop.storage.progress_records import (
    CorruptRecordError,
    ParsedRecord,
    ProgressRecord,
    StorageWarning,
    WarningsKeeper,
    clamp_to_clock,
    format_timestamp,
    parse_timestamp,
)

__all__ = [
    "ANYOP_PREFIX",
    "KOPF_PREFIX",
    "AnnotationsProgressStorage",
    "CorruptRecordError",
    "MultiProgressStorage",
    "ParsedRecord",
    "ProgressRecord",
    "ProgressStorage",
    "SmartProgressStorage",
    "StatusProgressStorage",
    "StorageWarning",
    "WarningsKeeper",
    "format_timestamp",
    "parse_timestamp",
]

_ABSENT = object()

ANYOP_PREFIX = "anyop.dev"
"""anyop's own annotation prefix."""

KOPF_PREFIX = "kopf.zalando.org"
"""Kopf's annotation prefix, for taking over objects that Kopf handled before."""


class ProgressStorage(WarningsKeeper, abc.ABC):
    """Where per-handler progress records are kept. Subclass it for custom locations.

    Guarantees: :meth:`read` never raises on corrupt state (it warns and returns ``None``), and
    clamps what it reads to the wall clock
    (:func:`~anyop.storage.progress_records.clamp_to_clock`, with a warning); the other methods
    only change the given patch. A subclass implements Kopf's methods (``fetch``, ``store``,
    ``purge``, ``touch``, optionally ``clear`` and ``flush``) on Kopf's records.

    Attributes:
        max_delay: Seconds: if set, no stored retry time is later than this from now (e.g. the
            longest ``backoff=``/``TemporaryError(delay=)`` of the handlers). ``None``: only
            the skew that the record itself shows is taken back.
    """

    max_delay: float | None = None

    def read(self, *, key: str, body: Mapping[str, Any]) -> ParsedRecord | None:
        """The fetched record of a handler id, checked and clamped; ``None`` if absent or bad."""
        try:
            fetched = self.fetch(key=key, body=body)
            record = None if fetched is None else ParsedRecord.from_dict(fetched)
        except CorruptRecordError as e:
            self.warn(f"the record of {key!r} in {type(self).__name__}", e)
            return None
        return None if record is None else self._clamped(record, body, key)

    def write(
        self, *, key: str, record: ParsedRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Store a handler's record in Kopf's form (see :meth:`store`)."""
        self.store(key=key, record=record.to_record(), body=body, patch=patch)

    def _clamped(self, record: ParsedRecord, body: Mapping[str, Any], key: str) -> ParsedRecord:
        """The record clamped to the wall clock now, with a warning if it was."""
        now = utcnow()
        clamped = clamp_to_clock(record, now=now, horizon=self.max_delay)
        if clamped is not record:
            object_logger(body).warning(
                f"The progress of {key!r} is ahead of this clock (written by a replica whose "
                f"clock is ahead, or before this clock was set back): its retry is due at "
                f"{clamped.delayed or now:%Y-%m-%d %H:%M:%S} UTC, not at "
                f"{record.delayed or record.started or now:%Y-%m-%d %H:%M:%S} UTC. Keep the "
                f"clocks of the operator's hosts in sync (NTP)."
            )
        return clamped

    @abc.abstractmethod
    def fetch(self, *, key: str, body: Mapping[str, Any]) -> ProgressRecord | None:
        """The stored record of a handler id (Kopf's dict), or ``None``."""

    @abc.abstractmethod
    def store(
        self, *, key: str, record: ProgressRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Put a handler's record (Kopf's dict, every key, ``None`` where unset) into the patch."""

    @abc.abstractmethod
    def purge(self, *, key: str, body: Mapping[str, Any], patch: Patch) -> None:
        """Put the removal of a handler's record into the patch (if the body has it)."""

    @abc.abstractmethod
    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        """Put a dummy change into the patch, to get a watch event back; ``None`` removes it."""

    def clear(self, *, essence: Mapping[str, Any]) -> Mapping[str, Any]:
        """Return the essence without this storage's own fields; never modify it.

        An essence that holds none of them is returned as it is (an essence rarely does: it
        leaves out the status and the operators' annotations), else a copy without them.
        Keyword-only, as Kopf's: a storage written for Kopf overrides it unchanged, and one
        that calls ``super().clear(essence=...)`` gets it without empty stanzas, as in Kopf.
        """
        cleaned = copy.deepcopy(dict(essence))
        _remove_empty_stanzas(cleaned)
        return essence if cleaned == essence else cleaned

    def flush(self) -> None:
        """Write out anything buffered (nothing, for the storages on the object)."""


class AnnotationsProgressStorage(ProgressStorage):
    """Records as compact JSON in annotations: ``<prefix>/<handler id>``.

    Args:
        prefix: The annotation prefix (``kopf.zalando.org`` for Kopf's keys).
        verbose: Store ``None`` fields too.
        touch_key: The name of the dummy annotation used by :meth:`touch`.
        v1: Also write Kopf's "v1" keys where they differ (see :mod:`~anyop.storage.annotations`).
    """

    def __init__(
        self,
        *,
        prefix: str = ANYOP_PREFIX,
        verbose: bool = False,
        touch_key: str = "touch-dummy",
        v1: bool = True,
    ) -> None:
        super().__init__()
        self.naming = AnnotationsNaming(prefix, v1=v1)
        self.prefix = prefix
        self.verbose = verbose
        self.touch_key = touch_key

    def fetch(self, *, key: str, body: Mapping[str, Any]) -> ProgressRecord | None:
        """The first readable record among the key's annotations (v2 first), or ``None``."""
        annotations = resolve(body, ("metadata", "annotations"), None) or {}
        for full_key in self.naming.make_keys(key, body):
            if annotations.get(full_key) is None:
                continue
            try:
                return ParsedRecord.from_json(annotations[full_key]).to_record()
            except CorruptRecordError as e:
                self.warn(f"annotation {full_key!r}", e)
        return None

    def store(
        self, *, key: str, record: ProgressRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Write the record to all of the key's annotations, and the prefix's marker."""
        encoded = compact({k: v for k, v in record.items() if v is not None or self.verbose})
        for full_key in self.naming.make_keys(key, body):
            patch.meta.annotations[full_key] = encoded
        self.naming.store_marker(patch, body)

    def purge(self, *, key: str, body: Mapping[str, Any], patch: Patch) -> None:
        """Remove the key's annotations (or cancel their pending writes in the patch)."""
        for full_key in self.naming.make_keys(key, body):
            _purge(body, patch, ("metadata", "annotations", full_key))

    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        """Set (or, with ``None``, remove) the dummy annotation if it differs."""
        for full_key in self.naming.make_keys(self.touch_key, body):
            if resolve(body, ("metadata", "annotations", full_key), None) != value:
                patch.meta.annotations[full_key] = value
                self.naming.store_marker(patch, body)

    def clear(self, *, essence: Mapping[str, Any]) -> Mapping[str, Any]:
        """Drop this prefix's annotations from the essence (in a copy, if it has any)."""
        annotations = resolve(essence, ("metadata", "annotations"), None)
        if not isinstance(annotations, Mapping) or not any(map(self.naming.owns, annotations)):
            return essence
        result = copy.deepcopy(dict(essence))
        owned = result["metadata"]["annotations"]
        for name in [name for name in owned if self.naming.owns(name)]:
            del owned[name]
        _remove_empty_stanzas(result)
        return result


def _purge(body: Mapping[str, Any], patch: Patch, path: FieldPath) -> None:
    if resolve(body, path, _ABSENT) is not _ABSENT:
        ensure(patch, path, None)
    elif resolve(patch, path, _ABSENT) is not _ABSENT:
        remove(patch, path)


def _status_field(field: FieldSpec, name: str) -> FieldPath:
    return parse_field(field.format(name=name) if isinstance(field, str) else field)


class StatusProgressStorage(ProgressStorage):
    """Records as nested dicts in the status: ``status.<name>.progress.<handler id>``.

    With the ``status`` subresource, these writes go to ``/status`` together with the handlers'
    results: one request per cycle. Structural schemas prune unknown status fields unless the
    CRD allows them (``x-kubernetes-preserve-unknown-fields``); see
    :func:`~anyop.storage.diffbase.status_was_pruned`.

    Args:
        name: The stanza name under ``status`` (``kopf`` for Kopf's legacy storage).
        field: Where the records live; ``{name}`` is substituted.
        touch_field: The dummy field used by :meth:`touch`; ``{name}`` is substituted.
    """

    def __init__(
        self,
        *,
        name: str = "anyop",
        field: FieldSpec = "status.{name}.progress",
        touch_field: FieldSpec = "status.{name}.dummy",
    ) -> None:
        super().__init__()
        self.name = name
        self.field = _status_field(field, name)
        self.touch_field = _status_field(touch_field, name)

    def fetch(self, *, key: str, body: Mapping[str, Any]) -> ProgressRecord | None:
        """The record at ``<field>.<key>``, or ``None``."""
        value = resolve(body, (*self.field, key), None)
        if value is None:
            return None
        try:
            return ParsedRecord.from_dict(value).to_record()
        except CorruptRecordError as e:
            self.warn(f"field {'.'.join(self.field)}[{key!r}]", e)
            return None

    def store(
        self, *, key: str, record: ProgressRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Write the record with explicit ``None`` fields (a merge-patch must delete stale ones)."""
        ensure(patch, (*self.field, key), {**ParsedRecord().to_record(), **record})

    def purge(self, *, key: str, body: Mapping[str, Any], patch: Patch) -> None:
        """Remove the record (or cancel its pending write in the patch)."""
        _purge(body, patch, (*self.field, key))

    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        """Set (or, with ``None``, remove) the dummy field if it differs."""
        if resolve(body, self.touch_field, None) != value:
            ensure(patch, self.touch_field, value)

    def clear(self, *, essence: Mapping[str, Any]) -> Mapping[str, Any]:
        """Drop the records' field from the essence (in a copy, if it has it)."""
        if resolve(essence, self.field, _ABSENT) is _ABSENT:
            return essence
        result = copy.deepcopy(dict(essence))
        remove(result, self.field)
        _remove_empty_stanzas(result)
        return result


class _ReadOnlyStatusProgressStorage(StatusProgressStorage):
    """Reads legacy status records, writes nothing (Kopf's transitional status storage)."""

    def store(
        self, *, key: str, record: ProgressRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Write nothing."""

    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        """Write nothing."""


class MultiProgressStorage(ProgressStorage):
    """Several storages at once: reads from the first that has a record, writes to all.

    Args:
        storages: The storages, in the order of precedence for reading.
    """

    def __init__(self, storages: Sequence[ProgressStorage]) -> None:
        super().__init__()
        self.storages = tuple(storages)

    def fetch(self, *, key: str, body: Mapping[str, Any]) -> ProgressRecord | None:
        """The first storage's record that exists."""
        for storage in self.storages:
            record = storage.fetch(key=key, body=body)
            if record is not None:
                return record
        return None

    def store(
        self, *, key: str, record: ProgressRecord, body: Mapping[str, Any], patch: Patch
    ) -> None:
        """Store in all storages."""
        for storage in self.storages:
            storage.store(key=key, record=record, body=body, patch=patch)

    def purge(self, *, key: str, body: Mapping[str, Any], patch: Patch) -> None:
        """Purge from all storages."""
        for storage in self.storages:
            storage.purge(key=key, body=body, patch=patch)

    def touch(self, *, body: Mapping[str, Any], patch: Patch, value: str | None) -> None:
        """Touch via all storages."""
        for storage in self.storages:
            storage.touch(body=body, patch=patch, value=value)

    def clear(self, *, essence: Mapping[str, Any]) -> Mapping[str, Any]:
        """Clear the essence of all storages' fields."""
        result = essence
        for storage in self.storages:
            result = storage.clear(essence=result)
        return result

    def flush(self) -> None:
        """Flush all storages."""
        for storage in self.storages:
            storage.flush()

    def drain_warnings(self) -> list[StorageWarning]:
        """The warnings of all storages."""
        drained = super().drain_warnings()
        for storage in self.storages:
            drained.extend(storage.drain_warnings())
        return drained


class SmartProgressStorage(MultiProgressStorage):
    """Kopf's default: annotations (read-write) first, then the status (read-only, legacy).

    Args:
        name: The status stanza name of the legacy records.
        field: The legacy records' field.
        touch_key: The dummy annotation's name.
        touch_field: The legacy dummy field (never written).
        prefix: The annotation prefix.
        v1: Also write Kopf's "v1" keys.
        verbose: Store ``None`` fields too.
    """

    def __init__(
        self,
        *,
        name: str = "anyop",
        field: FieldSpec = "status.{name}.progress",
        touch_key: str = "touch-dummy",
        touch_field: FieldSpec = "status.{name}.dummy",
        prefix: str = ANYOP_PREFIX,
        v1: bool = True,
        verbose: bool = False,
    ) -> None:
        annotations = AnnotationsProgressStorage(
            prefix=prefix, verbose=verbose, touch_key=touch_key, v1=v1
        )
        status = _ReadOnlyStatusProgressStorage(name=name, field=field, touch_field=touch_field)
        super().__init__([annotations, status])
