"""Digests of an essence: the diff-base kept when the essence itself does not fit. Pure.

The annotations of an object hold 256 KiB in all (keys and values). When other annotations
leave too little room for the last handled essence (RELIABILITY.md §5 row 34), the annotations
diff-base storage keeps a *digest record* instead, a few hundred bytes:
``{"digests":{"spec":"<hash>","metadata":{"annotations":"<hash>"}},"extras":{...}}``.

Each *stanza* of the essence is hashed on its own: every top-level field (``spec``, ``data``...)
except ``metadata`` and ``status``, and ``metadata.labels`` and ``metadata.annotations``. The
rest of the essence -- the fields tracked for field filters outside those (``status.x``,
``metadata.name``), the *extras* -- is kept as it is, as they are small as a rule.

Reading it back, the old essence is rebuilt from the object as it is now (:func:`restore`):

- a stanza whose hash is the same is unchanged: ``old`` has its value, exactly;
- a stanza whose hash differs, or that is new, changed: its old value is unknown, and ``old``
  does not have it, so the diff says it was *added* with its new value (field handlers on
  fields under it see ``old=None``);
- a stanza that is gone was removed: ``old`` has :data:`UNKNOWN` there, so the diff says it was
  *removed*;
- the extras are as they were stored, exactly.

So a change is never lost (an update cause with a diff that names the changed stanzas), and an
unchanged object reads as unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.handlers.diffs import FieldPath, ensure, json_copy, remove_empty_stanzas, resolve

__all__ = ["UNKNOWN", "CorruptDigestError", "digest_of", "make_record", "restore", "split_extras"]

UNKNOWN = "<unknown: only a digest of it was stored>"
"""The old value of a stanza that was removed since a digest record was stored."""

DIGEST_BYTES = 16
"""The length of each stanza's BLAKE2b hash (32 hex digits)."""

_METADATA_STANZAS = ("labels", "annotations")
_ABSENT = object()


class CorruptDigestError(ValueError):
    """A stored digest record is not of the expected shape."""


def digest_of(value: Any) -> str:
    """The hash of a JSON value: BLAKE2b of its canonical JSON (sorted keys, compact), in hex."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=DIGEST_BYTES).hexdigest()


def split_extras(essence: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The essence's stanzas (hashed) and its extras (kept as they are), as new dicts."""
    base: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in essence.items():
        if key == "status":
            extras[key] = json_copy(value)
        elif key == "metadata" and isinstance(value, Mapping):
            for name, item in value.items():
                where = base if name in _METADATA_STANZAS else extras
                ensure(where, ("metadata", name), json_copy(item))
        else:
            base[key] = json_copy(value)
    return base, extras


def _stanzas(base: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Any]]:
    for key, value in base.items():
        if key == "metadata" and isinstance(value, Mapping):
            for name in _METADATA_STANZAS:
                if name in value:
                    yield ("metadata", name), value[name]
        else:
            yield (key,), value


def make_record(essence: Mapping[str, Any]) -> dict[str, Any]:
    """The digest record of an essence (see the module's docstring)."""
    base, extras = split_extras(essence)
    digests: dict[str, Any] = {}
    for path, value in _stanzas(base):
        ensure(digests, path, digest_of(value))
    return {"digests": digests, "extras": extras} if extras else {"digests": digests}


def restore(record: object, current: Mapping[str, Any]) -> dict[str, Any]:
    """The old essence as far as a digest record tells it (see the module's docstring).

    Args:
        record: The decoded digest record (untrusted: anyone may write annotations).
        current: The object's essence now, built without extras.

    Raises:
        CorruptDigestError: The record is not of the shape that :func:`make_record` makes.
    """
    digests, extras = _read(record)
    old: dict[str, Any] = {}
    for path, stored in _leaves(digests):
        value = resolve(current, path, _ABSENT)
        if value is _ABSENT:
            ensure(old, path, UNKNOWN)
        elif digest_of(value) == stored:
            ensure(old, path, json_copy(value))
    for key, value in extras.items():
        if key == "metadata" and isinstance(value, Mapping):
            for name, item in value.items():
                ensure(old, ("metadata", name), json_copy(item))
        else:
            old[key] = json_copy(value)
    remove_empty_stanzas(old)
    return old


def _read(record: object) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    if not isinstance(record, Mapping) or not isinstance(record.get("digests"), Mapping):
        raise CorruptDigestError(f"not a digest record: {record!r:.200}")
    extras = record.get("extras", {})
    if not isinstance(extras, Mapping):
        raise CorruptDigestError(f"its extras are not an object: {extras!r:.200}")
    return record["digests"], extras


def _leaves(digests: Mapping[str, Any]) -> Iterator[tuple[FieldPath, str]]:
    for key, value in digests.items():
        if key == "metadata" and isinstance(value, Mapping):
            for name, item in value.items():
                if name not in _METADATA_STANZAS or not isinstance(item, str):
                    raise CorruptDigestError(f"a bad digest at metadata.{name}: {item!r:.200}")
                yield ("metadata", name), item
        elif isinstance(value, str):
            yield (key,), value
        else:
            raise CorruptDigestError(f"a bad digest at {key}: {value!r:.200}")
