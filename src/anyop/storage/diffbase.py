"""The diff-base: the last handled essence of an object, against which changes are detected.

It is stored on the object itself, as compact JSON: in an annotation (Kopf's
``kopf.zalando.org/last-handled-configuration``, with a trailing newline as kubectl does), or in a
status field. It is written only when all handlers of a cause are done. A diff-base that cannot
be read is treated as absent with a :class:`~anyop.storage.progress.StorageWarning`; the engine
then treats the object as resumed (never as created, which would duplicate its children).

Where the essence does not fit into the annotations (others' annotations fill the 256 KiB),
only a digest of it is kept (:meth:`DiffBaseStorage.store_digest`, :mod:`anyop.storage.digests`):
changes are still detected, but ``old`` lacks the old values of what changed.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from anyop._jsons import compact
from anyop.handlers.diffs import (
    FieldPath,
    FieldSpec,
    ensure,
    essence,
    json_copy,
    parse_field,
    remove,
    remove_empty_stanzas,
    resolve,
)
from anyop.kube.patches import Patch
from anyop.storage.annotations import AnnotationsNaming
from anyop.storage.digests import CorruptDigestError, make_record, restore
from anyop.storage.progress import ANYOP_PREFIX, StorageWarning, WarningsKeeper

__all__ = [
    "ANNOTATIONS_LIMIT",
    "AnnotationsDiffBaseStorage",
    "DiffBaseStorage",
    "EssenceTooLargeError",
    "MultiDiffBaseStorage",
    "StatusDiffBaseStorage",
    "StoredEssence",
    "read_diffbase",
    "status_was_pruned",
]


ANNOTATIONS_LIMIT = 262144
"""Bytes that all annotations of an object may hold together, keys and values (Kubernetes')."""


class EssenceTooLargeError(ValueError):
    """The essence does not fit where the storage keeps it (the annotations' 256 KiB)."""


class DiffBaseStorage(WarningsKeeper, abc.ABC):
    """Where the last handled essence is kept. Subclass it for custom locations.

    Args:
        ignored_fields: Fields never to track, e.g. ``["spec.replicas"]``.
    """

    ignored_fields: Sequence[FieldPath] = ()
    """The parsed fields never to track (none for a subclass that does not call ``__init__``)."""

    def __init__(self, ignored_fields: Iterable[FieldSpec] | None = None) -> None:
        super().__init__()
        self.ignored_fields = [parse_field(field) for field in ignored_fields or ()]

    def build(
        self, *, body: Mapping[str, Any], extra_fields: Iterable[FieldPath] | None = None
    ) -> dict[str, Any]:
        """The essence of the body (see :func:`anyop.handlers.diffs.essence`), minus ignored fields.

        Args:
            body: The object.
            extra_fields: Fields to track even in ``status`` (for field handlers on them).
        """
        result = essence(body, extra_fields or ())
        for field in self.ignored_fields:
            if field:
                remove(result, field)
        remove_empty_stanzas(result)
        return result

    @abc.abstractmethod
    def fetch(self, *, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored essence, or ``None`` (also if it is unreadable: then with a warning)."""

    @abc.abstractmethod
    def store(self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]) -> None:
        """Put the essence into the patch.

        Raises:
            EssenceTooLargeError: It does not fit; the engine then tries :meth:`store_digest`.
        """

    def store_digest(
        self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]
    ) -> bool:
        """Put a digest of the essence into the patch, where the essence does not fit.

        A later :meth:`fetch` rebuilds from it what it can of the old essence (see
        :mod:`anyop.storage.digests`), so that no change is lost. Storages with no digest form
        (the default) keep refusing.

        Returns:
            Whether the object held no digest yet (the engine warns then, once per object).

        Raises:
            EssenceTooLargeError: Even the digest does not fit, or there is no digest form.
        """
        raise EssenceTooLargeError(f"{type(self).__name__} keeps no digest of an essence.")

    def _decode(self, where: str, text: object) -> dict[str, Any] | None:
        try:
            # Not a string (written by hand?): a copy, not a part of the body, is the essence.
            decoded = json.loads(text) if isinstance(text, str) else copy.deepcopy(text)
        except (ValueError, RecursionError) as e:  # anyone may write it: 5 000-deep JSON too
            self.warn(where, f"not valid JSON: {e}")
            return None
        if decoded is not None and not isinstance(decoded, dict):
            self.warn(where, f"not a JSON object: {text!r:.200}")
            return None
        return decoded


class AnnotationsDiffBaseStorage(DiffBaseStorage):
    """The essence as compact JSON plus ``\\n`` in the annotation ``<prefix>/<key>``.

    Args:
        prefix: The annotation prefix (``kopf.zalando.org`` for Kopf's key).
        key: The annotation name.
        ignored_fields: Fields never to track.
        v1: Also write Kopf's "v1" key where it differs.
        digest_key: The annotation name of the digest record, kept instead of the essence when
            the essence does not fit (:meth:`store_digest`).
    """

    def __init__(
        self,
        *,
        prefix: str = ANYOP_PREFIX,
        key: str = "last-handled-configuration",
        ignored_fields: Iterable[FieldSpec] | None = None,
        v1: bool = True,
        digest_key: str = "last-handled-digest",
    ) -> None:
        super().__init__(ignored_fields)
        self.naming = AnnotationsNaming(prefix, v1=v1)
        self.prefix = prefix
        self.key = key
        self.digest_key = digest_key

    def build(
        self, *, body: Mapping[str, Any], extra_fields: Iterable[FieldPath] | None = None
    ) -> dict[str, Any]:
        """The essence, without this storage's own annotations."""
        result = super().build(body=body, extra_fields=extra_fields)
        annotations = resolve(result, ("metadata", "annotations"), None)
        if isinstance(annotations, dict):
            for full_key in [*self._keys(body), *self._digest_keys(body)]:
                annotations.pop(full_key, None)
        remove_empty_stanzas(result)
        return result

    def _keys(self, body: Mapping[str, Any]) -> list[str]:
        return self.naming.make_keys(self.key, body)

    def _digest_keys(self, body: Mapping[str, Any]) -> list[str]:
        return self.naming.make_keys(self.digest_key, body)

    def fetch(self, *, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first readable essence among the key's annotations, or ``None``.

        Without one, the old essence as far as a digest record tells it (see
        :mod:`anyop.storage.digests`): the unchanged parts as they are, the changed ones absent.
        """
        annotations = resolve(body, ("metadata", "annotations"), None) or {}
        for full_key in self._keys(body):
            text = annotations.get(full_key)
            decoded = self._decode(f"annotation {full_key!r}", text) if text is not None else None
            if decoded is not None:
                return decoded
        for full_key in self._digest_keys(body):
            text = annotations.get(full_key)
            decoded = self._decode(f"annotation {full_key!r}", text) if text is not None else None
            if decoded is None:
                continue
            try:
                return restore(decoded, self.build(body=body))
            except CorruptDigestError as e:
                self.warn(f"annotation {full_key!r}", e)
        return None

    def store(self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]) -> None:
        """Write the essence to all of the key's annotations, and the prefix's marker.

        Raises:
            EssenceTooLargeError: The annotations would exceed Kubernetes' 256 KiB with it (the
                server would refuse the write); nothing is put into the patch.
        """
        encoded = compact(essence) + "\n"
        keys = self._keys(body)
        more = dict.fromkeys(keys, encoded) | _removals(body, self._digest_keys(body))
        _check_fits("The essence of the object ({n} bytes) does not fit", body, patch, more)
        patch.meta.annotations.update(more)  # a digest kept before goes
        self.naming.store_marker(patch, body)

    def store_digest(
        self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]
    ) -> bool:
        """Write the essence's digest record to the digest key's annotations, and remove the
        essence's annotations (an older essence would be read first).

        Returns:
            Whether the object held no digest record yet.

        Raises:
            EssenceTooLargeError: Not even the digest record fits (its extras are big).
        """
        encoded = compact(make_record(essence)) + "\n"
        keys = self._digest_keys(body)
        more = dict.fromkeys(keys, encoded) | _removals(body, self._keys(body))
        _check_fits("Not even a digest of the essence ({n} bytes) fits", body, patch, more)
        patch.meta.annotations.update(more)
        self.naming.store_marker(patch, body)
        existing = resolve(body, ("metadata", "annotations"), None) or {}
        return not any(key in existing for key in keys)


def _check_fits(
    what: str, body: Mapping[str, Any], patch: Mapping[str, Any], more: Mapping[str, str | None]
) -> None:
    """Raise :class:`EssenceTooLargeError` if the object's annotations, after the patch and
    ``more``, would exceed Kubernetes' limit; ``what`` begins the message (``{n}``: the bytes
    of the value written to the first key of ``more``)."""
    size = _annotations_size(body, patch, more)
    if size > ANNOTATIONS_LIMIT:
        key, value = next(((k, v) for k, v in more.items() if v is not None), ("", ""))
        raise EssenceTooLargeError(
            f"{what.format(n=len(value.encode()))} into the annotation {key!r}: "
            f"all annotations together would be {size} bytes, above Kubernetes' "
            f"{ANNOTATIONS_LIMIT}. Keep the state in the status (anyop.status_storages(), for "
            f"resources with the status subresource), or leave the big fields out of the "
            f"essence (ignored_fields=)."
        )


def _removals(body: Mapping[str, Any], keys: Iterable[str]) -> dict[str, None]:
    """``None`` (a merge-patch's removal) for those of the keys that the body's annotations have."""
    existing = resolve(body, ("metadata", "annotations"), None) or {}
    return {key: None for key in keys if key in existing}


def _annotations_size(
    body: Mapping[str, Any], patch: Mapping[str, Any], more: Mapping[str, str | None]
) -> int:
    """The bytes of an object's annotations, keys and values, after the patch and ``more``."""
    merged = dict(resolve(body, ("metadata", "annotations"), None) or {})
    merged.update(resolve(patch, ("metadata", "annotations"), None) or {})
    merged.update(more)
    return sum(
        len(str(key).encode()) + len(str(value).encode())
        for key, value in merged.items()
        if value is not None
    )


class StatusDiffBaseStorage(DiffBaseStorage):
    """The essence as a compact JSON string in ``status.<name>.last-handled-configuration``.

    Together with :class:`~anyop.storage.progress.StatusProgressStorage`, a simple creation
    needs one ``/status`` request: results, progress and diff-base at once.

    Args:
        name: The status stanza name.
        field: Where the essence lives; ``{name}`` is substituted.
        ignored_fields: Fields never to track.
    """

    def __init__(
        self,
        *,
        name: str = "anyop",
        field: FieldSpec = "status.{name}.last-handled-configuration",
        ignored_fields: Iterable[FieldSpec] | None = None,
    ) -> None:
        super().__init__(ignored_fields)
        self.name = name
        self.field = parse_field(field.format(name=name) if isinstance(field, str) else field)

    def build(
        self, *, body: Mapping[str, Any], extra_fields: Iterable[FieldPath] | None = None
    ) -> dict[str, Any]:
        """The essence, without this storage's own field."""
        result = super().build(body=body, extra_fields=extra_fields)
        remove(result, self.field)
        remove_empty_stanzas(result)
        return result

    def fetch(self, *, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored essence, or ``None``."""
        text = resolve(body, self.field, None)
        return None if text is None else self._decode(f"field {'.'.join(self.field)}", text)

    def store(self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]) -> None:
        """Write the essence as one string (a merge-patch must not merge it into the old one)."""
        ensure(patch, self.field, compact(essence))


class MultiDiffBaseStorage(DiffBaseStorage):
    """Several storages: reads from the first that has an essence, writes to all.

    Args:
        storages: The storages, in the order of precedence for reading.
    """

    def __init__(self, storages: Sequence[DiffBaseStorage]) -> None:
        super().__init__()
        self.storages = tuple(storages)

    def build(
        self, *, body: Mapping[str, Any], extra_fields: Iterable[FieldPath] | None = None
    ) -> dict[str, Any]:
        """The essence, cleaned by every storage in turn."""
        result = super().build(body=body, extra_fields=extra_fields)
        for storage in self.storages:
            result = storage.build(body=result, extra_fields=extra_fields)
        return result

    def fetch(self, *, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first storage's essence that exists."""
        for storage in self.storages:
            found = storage.fetch(body=body)
            if found is not None:
                return found
        return None

    def store(self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]) -> None:
        """Store in all storages."""
        for storage in self.storages:
            storage.store(body=body, patch=patch, essence=essence)

    def store_digest(
        self, *, body: Mapping[str, Any], patch: Patch, essence: Mapping[str, Any]
    ) -> bool:
        """Store the essence where it fits, its digest where it does not (see the base's)."""
        newly = False
        for storage in self.storages:
            try:
                storage.store(body=body, patch=patch, essence=essence)
            except EssenceTooLargeError:
                newly = storage.store_digest(body=body, patch=patch, essence=essence) or newly
        return newly

    def drain_warnings(self) -> list[StorageWarning]:
        """The warnings of all storages."""
        drained = super().drain_warnings()
        for storage in self.storages:
            drained.extend(storage.drain_warnings())
        return drained


@dataclasses.dataclass(frozen=True)
class StoredEssence:
    """What :func:`read_diffbase` found.

    Attributes:
        essence: The stored essence, or ``None``.
        warnings: The problems met while reading it (to be logged).
    """

    essence: dict[str, Any] | None
    warnings: tuple[StorageWarning, ...] = ()

    @property
    def corrupt(self) -> bool:
        """A diff-base exists but cannot be read: the object is resumed, never created."""
        return self.essence is None and bool(self.warnings)


def read_diffbase(storage: DiffBaseStorage, body: Mapping[str, Any]) -> StoredEssence:
    """Fetch the diff-base together with the warnings that this very fetch produced.

    The essence is the caller's own: a storage whose ``fetch`` may return what it keeps (any but
    anyop's own) is copied, so that no handler's ``old`` shares state with it. Empty stanzas are
    dropped from it as from a built essence (Kopf wrote ``"annotations": {}`` into some).
    """
    storage.drain_warnings()  # stale ones belong to earlier reads, already reported or not
    essence = storage.fetch(body=body)
    if isinstance(essence, dict):
        if not _decodes_fresh(storage):
            essence = json_copy(essence)
        remove_empty_stanzas(essence)
    return StoredEssence(essence, tuple(storage.drain_warnings()))


def _decodes_fresh(storage: DiffBaseStorage) -> bool:
    """Whether every essence that ``storage.fetch`` returns is a new object (decoded JSON)."""
    fetch = type(storage).fetch
    if isinstance(storage, MultiDiffBaseStorage) and fetch is MultiDiffBaseStorage.fetch:
        return all(map(_decodes_fresh, storage.storages))
    return fetch in _FRESH_FETCHES


_FRESH_FETCHES = (AnnotationsDiffBaseStorage.fetch, StatusDiffBaseStorage.fetch)


def status_was_pruned(
    patch: Mapping[str, Any], echoed_body: Mapping[str, Any], *, name: str = "anyop"
) -> bool:
    """Whether the server dropped what we wrote under ``status.<name>`` (a structural schema).

    Args:
        patch: The merge-patch that was sent.
        echoed_body: The body the server returned for it.
        name: The status stanza of the status storages.

    Returns:
        True if any value written under ``status.<name>`` is missing from the echoed body: the
        engine should then fall back to annotation storages (and warn once).
    """
    ours = resolve(patch, ("status", name), None)
    if not isinstance(ours, Mapping):
        return False
    return _dropped(ours, resolve(echoed_body, ("status", name), None))


def _dropped(ours: Any, echoed: Any) -> bool:
    """Whether something that ``ours`` sets is missing from ``echoed`` (``None``s set nothing).

    What :func:`~anyop.kube.patches.inconsistencies` reports as ``remove``, without the rest.
    """
    if echoed is None:
        return _sets_anything(ours)
    if isinstance(ours, Mapping) and isinstance(echoed, Mapping):
        return any(_dropped(value, echoed.get(key)) for key, value in ours.items())
    return False


def _sets_anything(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_sets_anything(item) for item in value.values())
    return value is not None
